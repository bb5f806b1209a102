"""What a whole patch does to the files it names, worked out in memory before anything is written (`plan_patch`).

The operations apply in order to a view of the files (so a patch may delete a file and add it again, or update one
twice); the plan is each file's text before and after. Errors name the operation and the fix, and leave the files
as they are: an update or a delete of a file that does not exist, an add of one that does, a move onto an
existing file, a patch that in the end changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from coder_agent.tools.editing.hunks import apply_hunks
from coder_agent.tools.editing.patch import AddFile, DeleteFile, Patch, PatchError, UpdateFile
from coder_agent.tools.editing.result import LineRange

__all__ = ["PlannedFile", "plan_patch"]


@dataclass
class PlannedFile:
    """One file's change: its text before (None: it did not exist) and after (None: it is deleted)."""

    key: str
    old: str | None
    new: str | None
    moved_from: str | None = None
    """For a move's destination: the key of the file it came from."""
    ranges: tuple[LineRange, ...] = ()
    """Where the last update's hunks landed in `new`."""
    notes: list[str] = field(default_factory=list)

    @property
    def verb(self) -> str:
        if self.new is None:
            return "deleted"
        if self.moved_from is not None:
            return "moved"
        return "added" if self.old is None else "updated"


def plan_patch(patch: Patch, originals: Mapping[str, str | None], key: Callable[[str], str]) -> list[PlannedFile]:
    """Each changed file, in the order the patch first names it. `originals` holds the text of every file the
    patch names (by `key(path)`; None for a file that does not exist). PatchError if an operation cannot apply."""
    now: dict[str, str | None] = dict(originals)
    planned: dict[str, PlannedFile] = {}

    def touch(name: str) -> PlannedFile:
        if name not in planned:
            planned[name] = PlannedFile(name, originals[name], originals[name])
        return planned[name]

    for op in patch.ops:
        here = key(op.path)
        if isinstance(op, AddFile):
            if now[here] is not None:
                raise PatchError(
                    f"Patch line {op.line}: cannot add {op.path}: it already exists. Use `*** Update File:` to "
                    "change it (or `*** Delete File:` before adding it anew). Nothing was applied."
                )
            now[here] = op.text
            touch(here)
        elif isinstance(op, DeleteFile):
            if now[here] is None:
                raise PatchError(
                    f"Patch line {op.line}: cannot delete {op.path}: it does not exist. Check the path (or leave "
                    "this out). Nothing was applied."
                )
            now[here] = None
            touch(here).moved_from = None
        else:
            _update(op, here, now, touch, key)
    changed = []
    for item in planned.values():
        item.new = now[item.key]
        if item.new != item.old or item.moved_from is not None:
            changed.append(item)
    if not changed:
        raise PatchError("The patch changes nothing: every file ends as it began. Nothing was applied.")
    return changed


def _update(
    op: UpdateFile,
    here: str,
    now: dict[str, str | None],
    touch: Callable[[str], PlannedFile],
    key: Callable[[str], str],
) -> None:
    text = now[here]
    if text is None:
        raise PatchError(
            f"Patch line {op.line}: cannot update {op.path}: it does not exist. Use `*** Add File:` to create it "
            "(every line starting with `+`). Nothing was applied."
        )
    result = apply_hunks(text, op.hunks, op.path) if op.hunks else None
    new_text = result.text if result is not None else text
    target = here
    if op.move_to is not None:
        target = key(op.move_to)
        if target != here:
            if now[target] is not None:
                raise PatchError(
                    f"Patch line {op.line}: cannot move {op.path} to {op.move_to}: {op.move_to} already exists. "
                    "Delete it first (`*** Delete File:`) if it should be replaced. Nothing was applied."
                )
            now[here] = None
            touch(here)
    now[target] = new_text
    item = touch(target)
    if target != here:
        item.moved_from = here
    if result is not None:
        item.ranges = result.ranges
        item.notes.extend(result.notes)
