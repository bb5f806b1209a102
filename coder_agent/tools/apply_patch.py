"""`apply_patch`: add, delete, update and move files with one patch in the format OpenAI's GPT-5, GPT-4.1, o3/o4 and
codex models were trained on (`editing.patch`), all files or none.

The patch is parsed and applied in memory first (`editing.patch_plan`): a bad header, a hunk that matches
nowhere or in several places, a delete of a missing file, a move onto an existing one fail here, before anyone is
asked, and nothing is written. Every path is resolved and held against the session's roots like any file tool's,
and the permission question shows every file's diff at once (the policy judges all the paths together). A file
the patch updates must have been read, and be unchanged since (`ToolContext.check_fresh`); a file it deletes or
moves without changing must be unchanged since it was read, if it was. The writes go through
`ToolContext.write_all`: re-checked, snapshotted for `/undo`, and put back if one of them fails. The files
written are checked after (`edit_checks`).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from coder_agent.permissions import Action, Place
from coder_agent.protocol.content import DiffContent, ToolCallContent, ToolCallLocation
from coder_agent.tools.calls import Outcome, Prepared, text_content
from coder_agent.tools.context import FileChange, ToolContext
from coder_agent.tools.edit_checks import checked_outcome
from coder_agent.tools.editing import EditOutcome, EditResult
from coder_agent.tools.editing.patch import Patch, PatchError, UpdateFile, parse_patch
from coder_agent.tools.editing.patch_plan import PlannedFile, plan_patch
from coder_agent.tools.tool import BuiltinTool, Params

MAX_LOCATIONS = 20
MAX_TITLE_FILES = 3


class PatchParams(Params):
    input: str = Field(description="The whole patch, from `*** Begin Patch` to `*** End Patch`.")


class ApplyPatch(BuiltinTool):
    name = "apply_patch"
    kind = "edit"
    params = PatchParams

    def title(self, params: PatchParams, ctx: ToolContext) -> str:
        try:
            paths = parse_patch(params.input).paths
        except PatchError:
            return "Patch"
        shown = [ctx.display(ctx.path(p).path) for p in paths[:MAX_TITLE_FILES]]
        more = f" and {len(paths) - MAX_TITLE_FILES} more" if len(paths) > MAX_TITLE_FILES else ""
        return f"Patch {', '.join(shown)}{more}"

    async def prepare(self, params: PatchParams, ctx: ToolContext) -> Prepared:
        patch = parse_patch(params.input)
        places: dict[str, Place] = {}
        keys: dict[str, str] = {}
        for raw in patch.paths:
            place = ctx.path(raw)
            keys[raw] = str(place.path)
            places[str(place.path)] = place
        originals: dict[str, str | None] = {}
        for key, place in places.items():
            exists = await ctx.exists(place.path)
            originals[key] = await ctx.read_whole(place.path, "patch", place.real) if exists else None
        plan = plan_patch(patch, originals, keys.__getitem__)
        _check_fresh(ctx, patch, plan, places)
        previews, locations = _preview(ctx, plan)
        changes = [FileChange(places[item.key], item.old, item.new) for item in plan]
        action = Action("edit", places=tuple(places[item.key] for item in plan))

        async def run() -> Outcome:
            await ctx.write_all(changes)
            return await checked_outcome(ctx, changes, _message(ctx, plan), previews)

        return Prepared(action, self.title(params, ctx), run, locations[:MAX_LOCATIONS], previews)


def _check_fresh(ctx: ToolContext, patch: Patch, plan: list[PlannedFile], places: dict[str, Place]) -> None:
    """A file whose text the patch changes must have been read, and be unchanged since; one it only deletes or
    moves must be unchanged since it was read, if it was."""
    changed_text = {str(ctx.path(op.path).path) for op in patch.ops if isinstance(op, UpdateFile) and op.hunks}
    for item in plan:
        path = places[item.key].path
        if item.old is not None and (item.key in changed_text or ctx.has_read(path)):
            ctx.check_fresh(path, item.old, "patch")


def _preview(ctx: ToolContext, plan: list[PlannedFile]) -> tuple[list[ToolCallContent], list[ToolCallLocation]]:
    """Every file's diff (a move as one diff at its new place, from the old text), and where the changes are."""
    moved_away = {item.moved_from for item in plan if item.moved_from is not None}
    by_key = {item.key: item for item in plan}
    previews: list[ToolCallContent] = []
    locations: list[ToolCallLocation] = []
    for item in plan:
        if item.key in moved_away and item.new is None:
            continue
        if item.moved_from is not None:
            source = by_key[item.moved_from]
            previews.append(text_content(f"Moves {_shown(ctx, source.key)} to {_shown(ctx, item.key)}."))
            previews.append(DiffContent(path=item.key, old_text=source.old, new_text=item.new or ""))
        else:
            previews.append(DiffContent(path=item.key, old_text=item.old, new_text=item.new or ""))
        if item.ranges:
            locations += [ToolCallLocation(path=item.key, line=r.first) for r in item.ranges]
        else:
            locations.append(ToolCallLocation(path=item.key, line=1 if item.new else None))
    return previews, locations


def _shown(ctx: ToolContext, key: str) -> str:
    """A planned file's path as the user reads it (keys are the resolved paths)."""
    return ctx.display(Path(key))


def _message(ctx: ToolContext, plan: list[PlannedFile]) -> str:
    """What the model reads: what each file underwent, how hunks matched when not exactly, the changed regions."""
    moved_away = {item.moved_from for item in plan if item.moved_from is not None}
    done = []
    for item in plan:
        if item.key in moved_away and item.new is None:
            continue
        name = _shown(ctx, item.key)
        if item.moved_from is not None:
            done.append(f"moved {_shown(ctx, item.moved_from)} to {name}")
        elif item.new is None:
            done.append(f"deleted {name}")
        elif item.old is None:
            lines = item.new.count("\n") + (0 if item.new.endswith("\n") or not item.new else 1)
            done.append(f"added {name} ({lines} lines)")
        else:
            hunks = len(item.ranges)
            done.append(f"updated {name} ({hunks} hunk{'s' if hunks != 1 else ''})")
    parts = [f"The patch was applied: {'; '.join(done)}."]
    parts += [f"Note: {note}." for item in plan for note in item.notes]
    for item in plan:
        if item.new is not None and item.ranges:
            result = EditResult(item.new, (EditOutcome(item.ranges),))
            shown = _shown(ctx, item.key)
            parts.append(f"{shown}, numbered as read_file numbers it, around the changes:\n{result.snippet()}")
    if any(item.notes for item in plan):
        parts.append("Check the regions above: some hunks did not match the file exactly.")
    return "\n".join(parts)
