"""Whole-line matching that sets aside what models get wrong about whitespace: the fallback of edit_file and of
apply_patch's hunks.

`find_lenient(lines, wanted)` finds every window of a text's lines that equals `wanted` once line endings,
trailing whitespace and indentation are set aside, provided the indentation differs in a way that carries over to
the new text (`Indentation`):

* the same, or shifted by a uniform prefix (the model dropped or added a level: "    x" for "        x");
* written in other units at a constant level offset (tabs for spaces, two spaces for four), the units read from
  the file and from the model's own lines (the most common step between two nested lines).

A window whose relative indentation differs in any other way does not match, nor one where a new line's
indentation cannot be carried over (so Python blocks never change shape). The caller decides what several
matches mean (edit_file and apply_patch refuse to guess).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "Indentation",
    "LineMatch",
    "block_lines",
    "describe_indent",
    "find_lenient",
    "indent",
    "indent_unit",
    "numbered",
    "without_number",
]

_NUMBER_PREFIX = re.compile(r"^ *\d+(?:\t|→)")  # "    12\t" (cat -n, read_file) or "    12→"
_BARE_NUMBER = re.compile(r"^ *\d+$")  # an empty line whose "\t" was stripped as trailing whitespace


def numbered(lines: Sequence[str]) -> bool:
    """Whether every line has a read_file line-number prefix (an empty one may have lost its tab), and one at
    least has the tab: plain numbers on every line are content, not prefixes."""
    return all(_NUMBER_PREFIX.match(line) or _BARE_NUMBER.match(line) for line in lines) and any(
        _NUMBER_PREFIX.match(line) for line in lines
    )


def without_number(line: str, *, bare: bool = True) -> str:
    """A line without its read_file line-number prefix; with `bare`, a line that is only a number becomes empty."""
    match = _NUMBER_PREFIX.match(line)
    if match:
        return line[match.end() :]
    return "" if bare and _BARE_NUMBER.match(line) else line


def indent(line: str) -> str:
    """The leading whitespace of a line."""
    return line[: len(line) - len(line.lstrip())]


def block_lines(block: str) -> list[str]:
    """The lines of an old/new string: "\\r\\n" as "\\n", a final line ending dropped."""
    lines = block.replace("\r\n", "\n").split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return lines


def describe_indent(text: str) -> str:
    """An indentation in words: "not at all", "4 spaces", "1 tab"."""
    if not text:
        return "not at all"
    if set(text) == {" "}:
        return f"{len(text)} space{'s' if len(text) != 1 else ''}"
    if set(text) == {"\t"}:
        return f"{len(text)} tab{'s' if len(text) != 1 else ''}"
    return repr(text)


def _common_prefix(strings: Sequence[str]) -> str:
    if not strings:
        return ""
    low, high = min(strings), max(strings)
    size = 0
    while size < len(low) and low[size] == high[size]:
        size += 1
    return low[:size]


def indent_unit(lines: Sequence[str]) -> str | None:
    """The step of indentation these lines nest by ("    ", "\\t"): the most common difference between one non-blank
    line and the next; with none, the smallest indentation there is. None when nothing is indented."""
    steps: Counter[str] = Counter()
    previous: str | None = None
    smallest: str | None = None
    for line in lines:
        if not line.strip():
            continue
        current = indent(line)
        if current and len(set(current)) == 1 and (smallest is None or len(current) < len(smallest)):
            smallest = current
        if previous is not None and current != previous:
            deeper, shallower = (current, previous) if len(current) > len(previous) else (previous, current)
            step = deeper[len(shallower) :]
            if deeper.startswith(shallower) and len(set(step)) == 1:
                steps[step] += 1
        previous = current
    if steps:
        return steps.most_common(1)[0][0]
    return smallest


@dataclass(frozen=True)
class Indentation:
    """How the model's indentation maps to the file's, learnt from the lines that matched."""

    old_base: str = ""
    file_base: str = ""
    old_unit: str = ""
    """Set when the units differ: one level as the model wrote it ..."""
    file_unit: str = ""
    """... and as the file writes it."""
    offset: int = 0
    """File level minus the model's level (units only)."""

    @property
    def changed(self) -> bool:
        return bool(self.old_unit) or self.old_base != self.file_base

    def carry(self, line: str) -> str | None:
        """A new line, indented as the file indents; None when its indentation cannot be carried over."""
        if not line.strip():
            return ""
        own = indent(line)
        if self.old_unit:
            if own and (set(own) != {self.old_unit[0]} or len(own) % len(self.old_unit)):
                return None
            level = len(own) // len(self.old_unit) + self.offset
            return None if level < 0 else self.file_unit * level + line[len(own) :]
        if self.old_base == self.file_base:
            return line
        if line.startswith(self.old_base):
            return self.file_base + line[len(self.old_base) :]
        if self.file_base.startswith(self.old_base):  # the file is indented more: add the difference
            return self.file_base[len(self.old_base) :] + line
        if self.old_base.startswith(self.file_base):  # the model indented more: remove up to the difference
            return line[min(len(self.old_base) - len(self.file_base), len(own)) :]
        return line

    def describe(self) -> str:
        if self.old_unit:
            return (
                f"the file indents by {describe_indent(self.file_unit)} a level, yours by "
                f"{describe_indent(self.old_unit)}"
            )
        file_base, old_base = describe_indent(self.file_base), describe_indent(self.old_base)
        return f"the file's lines are indented {file_base}, yours {old_base}"


@dataclass(frozen=True)
class LineMatch:
    index: int
    """The window's first line (0-based)."""
    indentation: Indentation
    trailing: bool
    """Whether trailing whitespace or line endings differed."""


def find_lenient(
    lines: Sequence[str], wanted: Sequence[str], *, start: int = 0, stop: int | None = None, new: Sequence[str] = ()
) -> list[LineMatch]:
    """Every window of `lines[start:stop]` equal to `wanted` up to whitespace (see the module docstring) whose
    indentation carries over to every line of `new`. `lines` may end with "\\r"."""
    stripped = [line.strip() for line in wanted]
    nonblank = [j for j, text in enumerate(stripped) if text]
    if not nonblank:
        return []
    size = len(wanted)
    stop = len(lines) if stop is None else min(stop, len(lines))
    anchor = nonblank[0]
    blank = [not text for text in stripped]
    old_indents = [indent(wanted[j]) for j in nonblank]
    model_unit: list[str | None] = []  # computed once, when first needed
    file_unit: list[str | None] = []
    matches: list[LineMatch] = []
    for i in range(start, stop - size + 1):
        if lines[i + anchor].strip() != stripped[anchor]:
            continue
        window = lines[i : i + size]
        if any((not line.strip()) != empty for line, empty in zip(window, blank, strict=True)):
            continue
        if any(window[j].strip() != stripped[j] for j in nonblank):
            continue
        pairs = [(old, indent(window[j])) for old, j in zip(old_indents, nonblank, strict=True)]
        other_chars = {c for old, _ in pairs for c in old} != {c for _, found in pairs for c in found}
        found = _shift(pairs) if not other_chars else None  # tabs for spaces: a level is a unit, not a prefix
        if found is None:
            if not model_unit:
                model_unit.append(indent_unit([*wanted, *new]))
                file_unit.append(indent_unit(lines))
            found = _units(pairs, model_unit[0], file_unit[0]) or _shift(pairs)
        if found is None or any(found.carry(line) is None for line in new):
            continue
        trailing = any(line.rstrip("\r") != line.rstrip() or line.endswith("\r") for line in window) or any(
            line.rstrip() != line for line in wanted
        )
        matches.append(LineMatch(i, found, trailing))
    return matches


def _shift(pairs: list[tuple[str, str]]) -> Indentation | None:
    """The same indentation, or the same shifted by a uniform prefix; None otherwise."""
    old_base = _common_prefix([old for old, _ in pairs])
    file_base = _common_prefix([found for _, found in pairs])
    if all(found == file_base + old[len(old_base) :] for old, found in pairs):
        return Indentation(old_base, file_base)
    return None


def _units(pairs: list[tuple[str, str]], old_unit: str | None, file_unit: str | None) -> Indentation | None:
    """The model's levels (in its unit) mapped onto the file's (in its unit) at one constant offset; None if not."""
    if not old_unit or not file_unit or old_unit == file_unit:
        return None
    offsets: set[int] = set()
    for old, found in pairs:
        if old and (set(old) != {old_unit[0]} or len(old) % len(old_unit)):
            return None
        if found and (set(found) != {file_unit[0]} or len(found) % len(file_unit)):
            return None
        offsets.add(len(found) // len(file_unit) - len(old) // len(old_unit))
    if len(offsets) != 1:
        return None
    return Indentation(old_unit=old_unit, file_unit=file_unit, offset=offsets.pop())
