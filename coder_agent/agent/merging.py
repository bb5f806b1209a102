"""The merge of an isolated sub-agent's changes: merged three ways into the session's files as they are now, asked as
one permission request in the parent's `task` call showing every file's diff, and written through that call.

Planning (`_plan`): each changed file is merged (`isolation.merge`: the text the child started from, the session's
file now as the editor has it, the child's). A file the merge cannot carry is left out and named: a symlink, a
submodule, a mode change, a binary or non-UTF-8 file, one too big, one the permission rules deny (the child's
commands could write anything in its copy); a file the rules would ask about for a reason of its own (outside the
workspace, in `.coder-agent/`) says why in the question. Changes already in the session's files are dropped.

The question: apply all, apply some (a follow-up form listing the files; where the client has no forms, one
permission request per file), or discard. With conflicts (lines both the session and the child changed), applying
all comes three ways: conflicts written with markers for the parent model to resolve, the child's side, or the
session's side. "Apply some" marks the conflicts of the files picked. A `cancelled` answer cancels the turn; an
answer naming no option offered discards. With no one to ask (a run without a terminal), the changes are applied
only where the mode and rules would let these edits through unasked, else discarded.

Applying writes through the call (`ParentCall.write`: the editor's `fs/write_text_file`, every file checked again,
all or none) as an undo checkpoint of its own, so `/undo` and a rewind take the merge back as one step. A file that
changed while the question was open fails the write: the merge is planned against it and asked again (up to `TRIES`
times); a write that fails for another reason (the editor's) discards the merge, saying why.
"""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass
from typing import Any

import anyio

from coder_agent.errors import CallFailed
from coder_agent.isolation.merge import FileMerge, Side, merge_file
from coder_agent.isolation.workplace import Change
from coder_agent.permissions import Action, Choice, Place, resolve
from coder_agent.protocol.content import DiffContent, ToolCallContent
from coder_agent.session.bridge import BridgeError, NoOneToAsk
from coder_agent.session.delegation import Delegated, FileEdit, ParentCall, ShowProgress
from coder_agent.session.turn_context import TurnContext
from coder_agent.session.user_questions import ACCEPT, FormQuestion
from coder_agent.tools.calls import text_content
from coder_agent.tools.file_view import looks_binary
from coder_agent.visible import visible

Shown = ToolCallContent
APPLY, MARKED, THEIRS, OURS = "apply", "apply-marked", "apply-theirs", "apply-ours"
SOME, DISCARD = "apply-some", "discard"
FILE_APPLY, SKIP = "apply-file", "skip-file"
SIDES: dict[str, Side] = {APPLY: "markers", MARKED: "markers", THEIRS: "theirs", OURS: "ours", SOME: "markers"}
TRIES = 3
FILES_FIELD = "files"


@dataclass(frozen=True)
class FilePlan:
    """One file of the merge."""

    path: str
    """As the user reads it (relative to the session's folder)."""
    place: Place
    ours: str | None
    merge: FileMerge
    asks: str | None
    """Why the permission rules would ask about this edit, beyond the mode (None: only the mode would)."""


@dataclass
class Plan:
    files: list[FilePlan]
    left_out: list[str]
    unattended_ok: bool
    """Every edit would be allowed unasked by the mode and rules (what a run with no one to ask goes by)."""

    @property
    def conflicts(self) -> list[FilePlan]:
        return [f for f in self.files if f.merge.conflicts]


async def offer(
    parent: TurnContext, call: ParentCall, changes: list[Change], *, name: str, ended: Delegated, show: ShowProgress
) -> Delegated:
    """Ask about the child's changes and apply what the user picks (see the module docstring)."""
    failed: tuple[dict[str, str | None], str] | None = None
    for attempt in range(TRIES):
        plan = await _plan(parent, call, changes, name)
        if failed is not None and failed[0] == {f.path: f.ours for f in plan.files}:
            return _discarded(ended, plan, f"writing them failed: {failed[1]}")  # not for a file changed meanwhile
        if not plan.files:
            why = "None of its changes can be merged." if plan.left_out else "Its changes are already in your files."
            return _with(ended, why + _left_out(plan), [])
        question = _question(plan, name, again=attempt > 0)
        await show([*ended.shown, *question])  # its diff, seen before the question
        try:
            picked = await call.choose(question, _choices(plan, name))
        except NoOneToAsk:
            picked = APPLY if plan.unattended_ok else ""
            if not picked:
                return _discarded(ended, plan, "no one could be asked to approve them here, and the mode asks")
        except BridgeError as exc:
            return _discarded(ended, plan, f"asking about them failed ({exc})")
        if picked not in SIDES:
            return _discarded(ended, plan, "the user discarded them")
        chosen = plan.files if picked != SOME else await _some(plan, call)
        if not chosen:
            return _discarded(ended, plan, "the user picked none of them")
        side = SIDES[picked]
        edits: list[FileEdit] = [(f.place, f.ours, f.merge.resolved(side)) for f in chosen]
        edits = [(place, old, new) for place, old, new in edits if new != old]
        try:
            await _write(parent, call, edits)
        except CallFailed as exc:
            failed = ({f.path: f.ours for f in plan.files}, str(exc))
            continue  # a file changed while the question was open: merge against it and ask again
        return _applied(ended, plan, chosen, side, name)
    return _discarded(ended, plan, "the files kept changing while you were asked")


async def _plan(parent: TurnContext, call: ParentCall, changes: list[Change], name: str) -> Plan:
    files: list[FilePlan] = []
    left_out: list[str] = []
    unattended_ok = True
    for change in changes:
        if change.note is not None:
            left_out.append(f"{_shown(change.path)} ({change.note})")
            continue
        before, after = _text(change.before), _text(change.after)
        if (change.before is not None and before is None) or (change.after is not None and after is None):
            left_out.append(f"{_shown(change.path)} (binary, or not UTF-8 text)")
            continue
        place = await anyio.to_thread.run_sync(resolve, parent.cwd / change.path, parent.roots)
        verdict = parent.policy.decide(Action("delete" if after is None else "edit", places=(place,)))
        if verdict.decision == "deny":
            left_out.append(f"{_shown(change.path)} (not allowed: {verdict.reason})")
            continue
        unattended_ok = unattended_ok and verdict.decision == "allow"
        try:
            ours = await call.read(place)
        except CallFailed as exc:
            left_out.append(f"{_shown(change.path)} ({exc})")
            continue
        merged = merge_file(before, ours, after, label=name)
        if not merged.noop:
            asks = None if verdict.decision == "allow" or verdict.by_mode else verdict.reason
            files.append(FilePlan(_shown(change.path), place, ours, merged, asks))
    return Plan(files, left_out, unattended_ok)


def _shown(path: str) -> str:
    """A path a child chose, as the user reads it: no character in it can hide or reorder part of the question."""
    return visible(path).replace("\n", "\\n")


def _text(data: bytes | None) -> str | None:
    if data is None or looks_binary(data):
        return None
    return data.decode("utf-8")


def _question(plan: Plan, name: str, *, again: bool) -> list[Shown]:
    count = len(plan.files)
    lines = [f"**{name}** changed {count} file{'s' if count != 1 else ''} in its own copy. Apply to your folder?"]
    if again:
        lines.insert(0, "A file changed while you were asked, so here is the merge again, against the files as now.")
    for item in plan.conflicts:
        lines.append(
            f"- Conflict in {item.path}: {item.merge.why} ({item.merge.conflicts} place"
            f"{'s' if item.merge.conflicts != 1 else ''}); the diff shows it with conflict markers."
        )
    lines += [f"- {item.path}: asking because {item.asks}." for item in plan.files if item.asks]
    lines += [f"- {item.path} is deleted." for item in plan.files if item.merge.result is None]
    if plan.left_out:
        lines.append(f"- Left out:{_left_out(plan)}")
    content: list[Shown] = [text_content("\n".join(lines))]
    content += [_diff(item, item.merge.result) for item in plan.files]
    return content


def _diff(item: FilePlan, new: str | None) -> DiffContent:
    return DiffContent(path=str(item.place.path), old_text=item.ours, new_text=new or "")


def _choices(plan: Plan, name: str) -> list[Choice]:
    some = Choice("allow_once", "Apply some…", id=SOME)
    discard = Choice("reject_once", "Discard", id=DISCARD)
    if not plan.conflicts:
        return [Choice("allow_once", f"Apply all {len(plan.files)}", id=APPLY), some, discard]
    return [
        Choice("allow_once", "Apply, conflicts marked for the agent to resolve", id=MARKED),
        Choice("allow_once", f"Apply, conflicts taking {name}'s side", id=THEIRS),
        Choice("allow_once", "Apply, conflicts keeping your side", id=OURS),
        some,
        discard,
    ]


async def _some(plan: Plan, call: ParentCall) -> list[FilePlan]:
    """The files the user picks: one form listing them, or (without forms) one question per file."""
    paths = [item.path for item in plan.files]
    field = {"type": "array", "title": "Apply", "items": {"type": "string", "enum": paths}, "default": paths}
    schema: dict[str, Any] = {"type": "object", "properties": {FILES_FIELD: field}, "required": [FILES_FIELD]}
    note = " Conflicts in the files you pick are marked for the agent to resolve." if plan.conflicts else ""
    answer = await call.ask(FormQuestion(f"Which files to apply?{note}", schema, tool_call_id=call.call_id))
    if answer.unasked is None:
        picked = answer.content.get(FILES_FIELD) if answer.action == ACCEPT else None
        wanted = set(picked) if isinstance(picked, list) else set()
        return [item for item in plan.files if item.path in wanted]  # only files offered count
    chosen = []
    for item in plan.files:
        shown: list[Shown] = [text_content(f"Apply {item.path}?"), _diff(item, item.merge.result)]
        choices = [Choice("allow_once", f"Apply {item.path}", id=FILE_APPLY), Choice("reject_once", "Skip", id=SKIP)]
        if await call.choose(shown, choices) == FILE_APPLY:
            chosen.append(item)
    return chosen


async def _write(parent: TurnContext, call: ParentCall, edits: list[FileEdit]) -> None:
    """Write the edits as an undo checkpoint of their own: the turn's checkpoint so far is closed, the merge's made,
    and the turn's goes on after it."""
    checkpoints = parent.checkpoints
    turn = checkpoints.current_turn
    checkpoints.begin_turn(f"merge_{uuid.uuid4().hex[:12]}")
    try:
        await call.write(edits)
    finally:
        checkpoints.end_turn()
        if turn is not None:
            checkpoints.begin_turn(turn)


def _applied(ended: Delegated, plan: Plan, chosen: list[FilePlan], side: Side, name: str) -> Delegated:
    done = []
    for item in chosen:
        if item.merge.resolved(side) == item.ours:
            continue
        verb = "added" if item.ours is None else "deleted" if item.merge.resolved(side) is None else "updated"
        done.append(f"{verb} {item.path}")
    told = f"Its changes were applied to the session's folder: {', '.join(done) or 'nothing changed'}."
    marked = [item.path for item in chosen if item.merge.conflicts and side == "markers"]
    if marked:
        told += (
            f" Conflicts between the session's files and {name}'s changes were written with markers in "
            f"{', '.join(marked)} (`<<<<<<< workspace`, `||||||| before`, `=======`, `>>>>>>> {name}`): resolve each "
            "now (read the file, then edit it so it keeps what both sides meant, without the markers)."
        )
    elif any(item.merge.conflicts for item in chosen):
        told += f" Conflicts took {'the sub-agent' if side == 'theirs' else 'the session'}'s side."
    skipped = [item.path for item in plan.files if item not in chosen]
    if skipped:
        told += f" Not applied (the user left them out): {', '.join(skipped)}."
    diffs: list[Shown] = [_diff(item, item.merge.resolved(side)) for item in chosen]
    return _with(ended, told + _left_out(plan), diffs)


def _discarded(ended: Delegated, plan: Plan, why: str) -> Delegated:
    files = ", ".join(item.path for item in plan.files)
    told = f"Its changes were not applied ({why}); its copy was removed. They were: {files}." + _left_out(plan)
    return _with(ended, told, [])


def _left_out(plan: Plan) -> str:
    if not plan.left_out:
        return ""
    return f" Left out of the merge (make these changes yourself if they are needed): {'; '.join(plan.left_out)}."


def _with(ended: Delegated, told: str, diffs: list[Shown]) -> Delegated:
    return dataclasses.replace(
        ended, answer=f"{ended.answer}\n\n{told}", shown=[*ended.shown, text_content(f"_{told}_"), *diffs]
    )
