"""Three-way merges of one file: the text the child started from (base), the workspace's text now (ours: the parent,
the user, or an earlier child's merge changed it meanwhile) and the child's (theirs).

Each side's changes against the base are found line by line (`difflib`); changes of the two sides that overlap or
touch are one region, and a region both sides changed differently is a conflict (as `git merge` and `diff3` judge
it: edits of adjacent lines conflict). Everywhere else the result takes whichever side changed. A file both sides
created, or one side deleted while the other changed it, is a conflict of the whole file.

A conflict has three ways out (`FileMerge.resolved`): the workspace's side, the child's side, or the text with
`diff3`-style conflict markers for the parent model to resolve (a deletion cannot be marked: its markers text keeps
the workspace's file and the model is told).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Literal

Side = Literal["ours", "theirs", "markers"]
Hunk = tuple[int, int, list[str], bool]
"""(start, end) of the base's lines replaced, by these lines, on the child's side (True) or the workspace's."""


@dataclass(frozen=True)
class FileMerge:
    """How one file merges (see the module docstring)."""

    result: str | None
    """The merged text (None: the file is deleted); for a conflict, the text with markers (or the workspace's)."""
    conflicts: int = 0
    """Regions both sides changed differently (1 for a conflict of the whole file)."""
    ours: str | None = None
    theirs: str | None = None
    why: str = ""
    """What the conflict is, in words."""
    noop: bool = False
    """The workspace already is what the merge gives: nothing to write."""

    def resolved(self, side: Side) -> str | None:
        """The text to write when conflicts go to `side` (markers: the result)."""
        if not self.conflicts or side == "markers":
            return self.result
        return self.ours if side == "ours" else self.theirs


def merge_file(base: str | None, ours: str | None, theirs: str | None, *, label: str) -> FileMerge:
    """Merge the child's change of one file (`base` → `theirs`) into the workspace's (`ours`); None: no such file.
    `label` names the child in conflict markers."""
    if theirs == base or ours == theirs:
        return FileMerge(ours, noop=True)
    if ours == base:
        return FileMerge(theirs)
    if ours is None or theirs is None:
        why = "deleted in the workspace, changed by" if ours is None else "changed in the workspace, deleted by"
        return FileMerge(ours, 1, ours, theirs, f"{why} {label}")
    regions = merge_lines(_lines(base or ""), _lines(ours), _lines(theirs))
    conflicts = sum(1 for region in regions if len(region) == 3)
    if not conflicts:
        result = "".join(line for region in regions for line in region[0])
        return FileMerge(result, noop=result == ours)
    why = "created in the workspace and by " + label if base is None else f"changed in the workspace and by {label}"
    return FileMerge(_with_markers(regions, label), conflicts, ours, theirs, why)


def merge_lines(base: list[str], ours: list[str], theirs: list[str]) -> list[tuple[list[str], ...]]:
    """The merge as regions in order: (lines,) where the sides agree or one changed, (base, ours, theirs) where both
    changed differently."""
    hunks = sorted([*_hunks(base, ours, False), *_hunks(base, theirs, True)], key=lambda h: (h[0], h[1]))
    regions: list[tuple[list[str], ...]] = []
    at = index = 0
    while index < len(hunks):
        start, end = hunks[index][0], hunks[index][1]
        group = [hunks[index]]
        index += 1
        while index < len(hunks) and hunks[index][0] <= end:
            end = max(end, hunks[index][1])
            group.append(hunks[index])
            index += 1
        regions.append((base[at:start],))
        mine = _side(base, start, end, [h for h in group if not h[3]])
        child = _side(base, start, end, [h for h in group if h[3]])
        if all(h[3] for h in group) or mine == child:
            regions.append((child,))
        elif not any(h[3] for h in group):
            regions.append((mine,))
        else:
            regions.append((base[start:end], mine, child))
        at = end
    regions.append((base[at:],))
    return [region for region in regions if len(region) == 3 or region[0]]


def _hunks(base: list[str], other: list[str], child: bool) -> list[Hunk]:
    matcher = difflib.SequenceMatcher(None, base, other, autojunk=False)
    return [(i1, i2, other[j1:j2], child) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def _side(base: list[str], start: int, end: int, hunks: list[Hunk]) -> list[str]:
    """The base's lines `start:end` with one side's hunks in them applied."""
    out: list[str] = []
    at = start
    for hunk_start, hunk_end, lines, _ in hunks:
        out += base[at:hunk_start] + lines
        at = hunk_end
    return out + base[at:end]


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _with_markers(regions: list[tuple[list[str], ...]], label: str) -> str:
    out: list[str] = []
    for region in regions:
        if len(region) == 1:
            out += region[0]
            continue
        base, ours, theirs = region
        _block(out, "<<<<<<< workspace", ours)
        _block(out, "||||||| before", base)
        _block(out, "=======", theirs)
        _block(out, f">>>>>>> {label}", [])
    return "".join(out)


def _block(out: list[str], marker: str, lines: list[str]) -> None:
    if out and not out[-1].endswith("\n"):
        out.append("\n")
    out.append(marker + "\n")
    out += lines
