"""Applying a patch's hunks to one file's text, in memory, all or nothing (`apply_hunks`).

Each hunk's old lines (context and removed) are looked for in the file, after the hunk before it (or after its
`@@` anchors), by rules tried in order, the first that finds anything deciding:

1. exact: the lines as they are;
2. lenient: up to line endings, trailing whitespace and indentation (`lines.find_lenient`), the added lines
   re-indented as the file indents;
3. the same two without `read_file` line-number prefixes, when every old line has one;
4. the same two without the hunk's first (or last) context line, when that line is nowhere in the file (enough
   of the hunk must remain to be telling).

A hunk must find one place: without an anchor, several places are an error naming them (never a guess); after an
anchor, the first place after it counts, since that is what the anchor says. A hunk found before the one above it
is taken there if it is unique in the whole file (hunks out of order). `*** End of File` hunks must end the file.
Hunks that overlap are an error. A text whose line breaks are all "\\r\\n" keeps them; the file's final newline
(or its absence) is kept.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

from coder_agent.tools.editing.diagnostics import closest_regions, span_text
from coder_agent.tools.editing.lines import LineMatch, find_lenient, numbered, without_number
from coder_agent.tools.editing.patch import Hunk, HunkLine, PatchError
from coder_agent.tools.editing.result import LineRange
from coder_agent.tools.file_view import number_line

__all__ = ["PatchedText", "apply_hunks"]

MIN_TRIMMED_CHARS = 12
"""What must be left of a hunk's old lines, without whitespace, once a wrong edge context line is set aside."""


@dataclass(frozen=True)
class PatchedText:
    """A file's text after its hunks, where they landed in it, and how the ones that did not match exactly did."""

    text: str
    ranges: tuple[LineRange, ...]
    notes: tuple[str, ...] = ()


@dataclass
class _Found:
    index: int
    size: int
    new: list[str]
    note: str | None = None


@dataclass
class _Hunks:
    path: str
    lines: list[str]
    count: int
    notes: list[str] = field(default_factory=list)


def apply_hunks(text: str, hunks: Sequence[Hunk], path: str) -> PatchedText:
    """`text` with `hunks` applied in order; PatchError (nothing applied) naming the hunk that does not apply."""
    crlf = text.count("\r\n") > 0 and text.count("\r\n") == text.count("\n")
    work = text.replace("\r\n", "\n") if crlf else text
    final_newline = work.endswith("\n") or work == ""
    lines = work.split("\n") if work else []
    if work.endswith("\n"):
        lines.pop()
    state = _Hunks(path, lines, len(hunks))
    cursor = 0
    found: list[tuple[int, _Found]] = []
    for number, hunk in enumerate(hunks, 1):
        place = _locate(state, hunk, number, cursor)
        if place.note:
            state.notes.append(f"hunk {number} of {path}: {place.note}" if len(hunks) > 1 else place.note)
        found.append((number, place))
        cursor = place.index + place.size
    ordered = sorted(found, key=lambda item: (item[1].index, item[1].size))
    for (first, a), (second, b) in itertools.pairwise(ordered):
        if a.index + a.size > b.index:
            raise PatchError(
                f"Hunks {first} and {second} of {path} change the same lines "
                f"({span_text(b.index + 1, max(b.index + 1, a.index + a.size))}): merge them into one hunk. "
                "Nothing was applied."
            )
    out: list[str] = []
    ranges: list[LineRange] = []
    position = 0
    for _, place in ordered:
        out.extend(lines[position : place.index])
        first_line = len(out) + 1
        out.extend(place.new)
        ranges.append(LineRange(first_line, max(first_line, len(out))))
        position = place.index + place.size
    out.extend(lines[position:])
    new_text = "\n".join(out) + ("\n" if final_newline and out else "")
    total = max(len(out), 1)
    ranges = [LineRange(min(r.first, total), min(r.last, total)) for r in ranges]
    return PatchedText(new_text.replace("\n", "\r\n") if crlf else new_text, tuple(ranges), tuple(state.notes))


def _locate(state: _Hunks, hunk: Hunk, number: int, cursor: int) -> _Found:
    lines = state.lines
    start = cursor
    for anchor in hunk.anchors:
        start = _find_anchor(state, anchor, start, hunk, number) + 1
    anchored = bool(hunk.anchors)
    if not hunk.old:  # only added lines: after the anchor, else at the end
        at = start if anchored and not hunk.at_end else len(lines)
        return _Found(at, 0, hunk.new)
    attempts: list[tuple[list[HunkLine], str | None]] = [(list(hunk.lines), None)]
    stripped = _without_line_numbers(hunk.lines)
    if stripped is not None:
        attempts.append((stripped, "the line-number prefixes (as read_file shows them) were removed"))
    attempts.extend(_without_an_edge_line(hunk))
    for items, how in attempts:
        place = _search(state, items, start, anchored, hunk, number)
        if place is not None:
            if how is not None:
                place.note = how + (f"; {place.note}" if place.note else "")
            return place
    raise PatchError(_not_found(state, hunk, number, anchored))


def _search(state: _Hunks, items: list[HunkLine], start: int, anchored: bool, hunk: Hunk, number: int) -> _Found | None:
    """The one place of the hunk's old lines (exactly, else leniently), or None; PatchError when it is ambiguous."""
    lines = state.lines
    want = [item.text for item in items if item.op != "+"]
    put = [item.text for item in items if item.op != "-"]
    size = len(want)
    if hunk.at_end:
        last = len(lines) - size
        if last >= 0 and lines[last:] == want:
            return _Found(last, size, _replacement(lines, last, items, None))
        lenient = find_lenient(lines, want, start=max(last, 0), new=put)
        return _lenient_found(lines, lenient[0], items) if lenient else None
    for level in ("exact", "lenient"):
        after = _places(lines, want, put, level, start, None)
        if anchored and after:
            return _at(lines, after[0], items, level)
        before = [] if after or anchored else _places(lines, want, put, level, 0, start + size - 1)
        candidates = after or before
        if len(candidates) > 1:
            raise PatchError(_ambiguous(state, hunk, number, candidates, size, level))
        if candidates:
            return _at(lines, candidates[0], items, level)
    return None


def _places(lines: list[str], want: list[str], put: list[str], level: str, start: int, stop: int | None) -> list[int]:
    if level == "exact":
        end = len(lines) if stop is None else min(stop, len(lines))
        size = len(want)
        return [i for i in range(start, end - size + 1) if lines[i] == want[0] and lines[i : i + size] == want]
    return [match.index for match in find_lenient(lines, want, start=start, stop=stop, new=put)]


def _at(lines: list[str], index: int, items: list[HunkLine], level: str) -> _Found:
    size = sum(item.op != "+" for item in items)
    if level == "exact":
        return _Found(index, size, _replacement(lines, index, items, None))
    want = [item.text for item in items if item.op != "+"]
    put = [item.text for item in items if item.op != "-"]
    (match,) = find_lenient(lines, want, start=index, stop=index + size, new=put)
    return _lenient_found(lines, match, items)


def _lenient_found(lines: list[str], match: LineMatch, items: list[HunkLine]) -> _Found:
    size = sum(item.op != "+" for item in items)
    ignored = []
    if match.trailing:
        ignored.append("trailing whitespace")
    if match.indentation.changed:
        ignored.append(f"indentation ({match.indentation.describe()}; the added lines were re-indented to match)")
    what = ", ".join(ignored) or "whitespace"
    note = f"matched {span_text(match.index + 1, match.index + size)} after ignoring {what}"
    return _Found(match.index, size, _replacement(lines, match.index, items, match), note)


def _replacement(lines: list[str], index: int, items: list[HunkLine], match: LineMatch | None) -> list[str]:
    """The lines that take the window's place: context lines as the file has them, added lines as the model
    wrote them (re-indented after a lenient match), each ending as the removed line before it did ("\\r" in a
    file of mixed line endings)."""
    out: list[str] = []
    at = index
    carriage = lines[index].endswith("\r") if index < len(lines) else False
    for item in items:
        if item.op == " ":
            out.append(lines[at])
            carriage = lines[at].endswith("\r")
            at += 1
        elif item.op == "-":
            carriage = lines[at].endswith("\r")
            at += 1
        else:
            text = item.text if match is None else match.indentation.carry(item.text) or ""
            out.append(text + "\r" if carriage and not text.endswith("\r") else text)
    return out


def _find_anchor(state: _Hunks, anchor: str, start: int, hunk: Hunk, number: int) -> int:
    """The line an `@@` anchor names, after `start` (else before it): equal, else equal up to whitespace, else
    starting with it (`@@ def total` for `def total(self):`, not for `def totals():`)."""
    lines = state.lines
    wanted = anchor.strip()

    def begins(line: str) -> bool:
        text = line.strip()
        after = text[len(wanted) : len(wanted) + 1]
        return len(wanted) >= 4 and text.startswith(wanted) and not (after.isalnum() or after == "_")

    tests = (lambda line: line == anchor, lambda line: line.strip() == wanted, begins)
    for test in tests:
        for begin, end in ((start, len(lines)), (0, start)):
            for i in range(begin, end):
                if test(lines[i]):
                    return i
    raise PatchError(
        f"{_which(state, hunk, number)} does not apply: its `@@ {anchor}` line is not in the file. An `@@` line "
        "names a line of the file (a function or class definition) the hunk comes after; copy it exactly from the "
        "file, or leave it out. Nothing was applied."
    )


def _without_line_numbers(items: tuple[HunkLine, ...]) -> list[HunkLine] | None:
    """The hunk without `read_file` line-number prefixes, if every old line has one; None otherwise."""
    if not numbered([item.text for item in items if item.op != "+"]):
        return None
    return [HunkLine(item.op, without_number(item.text)) for item in items]


def _without_an_edge_line(hunk: Hunk) -> list[tuple[list[HunkLine], str | None]]:
    """The hunk without its first (or last) line, when that is a context line, if enough is left to be telling."""
    found: list[tuple[list[HunkLine], str | None]] = []
    items = list(hunk.lines)
    for which, edge, rest in (("first", items[:1], items[1:]), ("last", items[-1:], items[:-1])):
        if not edge or edge[0].op != " " or not edge[0].text.strip():
            continue
        old = "".join(item.text for item in rest if item.op != "+")
        if len("".join(old.split())) < MIN_TRIMMED_CHARS or all(item.op == " " for item in rest):
            continue
        line = edge[0].text.strip()[:60]
        found.append((rest, f"its {which} context line ({line!r}) is not in the file and was left out"))
    return found


def _which(state: _Hunks, hunk: Hunk, number: int) -> str:
    where = f" (patch line {hunk.line})" if hunk.line else ""
    return f"Hunk {number} of {state.path}{where}" if state.count > 1 else f"The hunk of {state.path}{where}"


def _ambiguous(state: _Hunks, hunk: Hunk, number: int, places: list[int], size: int, level: str) -> str:
    where = ", ".join(span_text(i + 1, i + size) for i in places[:12]) + (" …" if len(places) > 12 else "")
    how = "" if level == "exact" else " (ignoring whitespace)"
    return (
        f"{_which(state, hunk, number)} matches {len(places)} places{how}: {where}. Add an `@@` line naming the "
        "function or class the change is in, or more context lines, so that it matches one place. Nothing was "
        "applied."
    )


def _not_found(state: _Hunks, hunk: Hunk, number: int, anchored: bool) -> str:
    lines = state.lines
    old = hunk.old
    after = " after its `@@` line" if anchored else ""
    parts = [
        f"{_which(state, hunk, number)} does not apply: its context and `-` lines are not in the file{after}, "
        "not even when ignoring indentation and trailing whitespace."
    ]
    for rank, (ratio, index) in enumerate(closest_regions(lines, old)):
        first, last = index + 1, index + len(old)
        shown = [number_line(n, lines[n - 1].rstrip("\r"), 300) for n in range(first, min(last, first + 11) + 1)]
        lead = "The closest lines are" if rank == 0 else "Or"
        parts.append(f"{lead} {span_text(first, last)} ({ratio:.0%} similar):\n" + "\n".join(shown))
    parts.append(
        "Copy the context and `-` lines exactly from the file as it is now (read it again if it may have changed), "
        "each context line starting with a space. Nothing was applied."
    )
    return "\n".join(parts)
