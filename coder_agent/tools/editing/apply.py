"""Applying string-replacement edits to a file's text, in memory, all or nothing.

`apply_edits` applies `Edit`s in order to a copy of the text. Any failure raises `EditError`, whose message is
written for the model (what went wrong, and what to send next); then no edit of the batch is applied. The matching
rules, tried in this order for each edit:

1. exact: `old_string` must occur exactly once (every non-overlapping occurrence with `replace_all`);
2. exact after removing `cat -n` / read_file line-number prefixes ("    12\\t") pasted into the edit: only when
   every line of `old_string` has one, and then from the lines of `new_string` that have one;
3. whitespace-tolerant, whole lines, only if it finds exactly one place: line endings, trailing whitespace and a
   difference of indentation that carries over (a uniform shift, or tabs for spaces: `lines.find_lenient`) are
   ignored, and `new_string` is re-indented to match. The result says that this fallback was used, and how;
4. when old_string and new_string begin (or end) with the same line and that line is nowhere to be found, the
   same rules without it (context the model got wrong), if enough is left to be telling and it finds one place.

Failures: `old_string == new_string`; an empty `old_string` (allowed only when the text is empty or holds only
whitespace: the edit then writes `new_string` as the whole text, "write into an empty file"); no match (see
`diagnostics`); several matches without `replace_all` (with the line of each).

Line endings: a text whose line breaks are all "\\r\\n" keeps them (edits are matched and applied with "\\n" and the
result converted back); in a text with mixed endings, lines written by the tolerant fallback take the ending of the
first line they replace.
"""

from __future__ import annotations

import bisect
import difflib
from collections.abc import Sequence
from dataclasses import dataclass

from coder_agent.errors import CallFailed
from coder_agent.tools.editing.diagnostics import not_found_message, span_text
from coder_agent.tools.editing.lines import LineMatch, block_lines, find_lenient, numbered, without_number
from coder_agent.tools.editing.result import EditOutcome, EditResult, LineRange
from coder_agent.tools.file_view import split_lines

__all__ = ["Edit", "EditError", "apply_edits"]


@dataclass(frozen=True)
class Edit:
    """Replace `old_string` by `new_string`: the one occurrence, or every one with `replace_all`."""

    old_string: str
    new_string: str
    replace_all: bool = False


class EditError(CallFailed):
    """An edit could not be applied; nothing was. The message is for the model and says what to do next."""


def apply_edits(text: str, edits: Sequence[Edit]) -> EditResult:
    """Apply `edits` in order to a copy of `text`, all or nothing; see the module docstring for the rules.

    Raises `EditError` (nothing applied) when any edit fails; with several edits the message names the failing one.
    """
    if not edits:
        raise EditError("No edits were given: send at least one edit with old_string and new_string.")
    crlf = _all_crlf(text)
    work = text.replace("\r\n", "\n") if crlf else text
    spans: list[list[tuple[int, int]]] = []  # per edit, the (start, end) of each replacement in `work`, kept current
    applied: list[_Applied] = []
    for index, edit in enumerate(edits):
        try:
            step = _apply_one(work, edit, crlf)
        except EditError as exc:
            if len(edits) == 1:
                raise
            after = f" (line numbers above are those of the text after edits 1-{index})" if index else ""
            raise EditError(
                f"Edit {index + 1} of {len(edits)} failed: {exc}{after}\n"
                f"No edits were applied: the file is unchanged. Fix edit {index + 1} and send all {len(edits)} edits "
                "again (they apply in order, each to the result of the ones before it)."
            ) from None
        work = step.text
        spans = [[_map_span(span, step.replaced) for span in edit_spans] for edit_spans in spans]
        spans.append(step.new_spans)
        applied.append(step)

    newlines = _newline_offsets(work)
    total = max(len(split_lines(work)), 1)
    outcomes = tuple(
        EditOutcome(
            ranges=tuple(_line_range(newlines, total, start, end) for start, end in edit_spans),
            fallback=step.fallback,
            stripped_line_numbers=step.stripped,
            note=step.note,
        )
        for edit_spans, step in zip(spans, applied, strict=True)
    )
    new_text = work.replace("\n", "\r\n") if crlf else work
    return EditResult(new_text=new_text, edits=outcomes)


# --- one edit -------------------------------------------------------------------------------------------------------


@dataclass
class _Applied:
    text: str
    replaced: list[tuple[int, int, int]]  # (start, end, new length) in the text before, ascending
    new_spans: list[tuple[int, int]]  # where the new strings are in `text`
    fallback: bool = False
    stripped: bool = False
    note: str | None = None


def _apply_one(work: str, edit: Edit, crlf: bool, *, trim_edges: bool = True) -> _Applied:
    old, new = edit.old_string, edit.new_string
    if old == new:
        raise EditError(
            "old_string and new_string are identical, so this edit would change nothing. Put the changed text in "
            "new_string; if the file already has the change, leave this edit out."
        )
    if crlf:  # the text is handled with "\n"; a model that sent "\r\n" meant the same lines
        old, new = old.replace("\r\n", "\n"), new.replace("\r\n", "\n")
    if old == "":
        if work.strip() == "":
            return _replace(work, [(0, len(work))], new)
        raise EditError(
            "old_string is empty, but the file is not. To insert text, put a unique nearby line in old_string and "
            "repeat it in new_string together with the new text; to replace the whole file, use write_file."
        )

    positions = _find_all(work, old)
    if positions:
        return _exact(work, old, new, positions, edit.replace_all, stripped=False)

    stripped = _strip_line_numbers(old, new)
    if stripped is not None:
        old, new = stripped
        if old == new:
            raise EditError(
                "Without their line-number prefixes, old_string and new_string are identical, so this edit would "
                "change nothing. Put the changed text in new_string (and leave out the line-number prefixes)."
            )
        positions = _find_all(work, old)
        if positions:
            return _exact(work, old, new, positions, edit.replace_all, stripped=True)

    lines, starts = _lines_with_starts(work)
    old_lines = block_lines(old)
    new_lines = [] if new == "" else block_lines(new)
    matches = find_lenient(lines, old_lines, new=new_lines)
    if len(matches) == 1:
        return _tolerant_apply(work, lines, starts, old, old_lines, new_lines, matches[0], stripped is not None)
    if len(matches) > 1:
        where = ", ".join(span_text(m.index + 1, m.index + len(old_lines)) for m in matches[:20])
        more = f" and {len(matches) - 20} more" if len(matches) > 20 else ""
        raise EditError(
            "old_string did not appear verbatim in the file. Ignoring differences of indentation, trailing whitespace "
            f"and line endings it matches {len(matches)} places ({where}{more}), so it is ambiguous. Copy old_string "
            "exactly from the file, adding surrounding lines until it matches only the place you mean."
        )
    if trim_edges and not edit.replace_all:
        for shorter_old, shorter_new, which, line in _without_an_edge_line(old, new):
            try:
                applied = _apply_one(work, Edit(shorter_old, shorter_new), crlf, trim_edges=False)
            except EditError:
                continue
            ranges = ", ".join(span_text(*_line_span(applied.text, a, b)) for a, b in applied.new_spans)
            applied.fallback = True
            applied.note = (
                f"the {which} line of old_string ({line.strip()[:60]!r}) is not in the file, and it was the same in "
                f"new_string; the rest matched ({ranges}) and was edited, and that line was left as the file has "
                "it. Check the snippet below."
            )
            return applied
    raise EditError(not_found_message(work, lines, old, old_lines, new, stripped is not None))


MIN_EDGE_TRIMMED_CHARS = 12
"""What must be left of old_string, without whitespace, once a wrong first or last line is set aside."""


def _without_an_edge_line(old: str, new: str) -> list[tuple[str, str, str, str]]:
    """old/new without their first (or last) line, when that line is the same in both (context the model got
    wrong); (old, new, "first"/"last", the line). Only when enough of old_string is left to be telling."""
    found: list[tuple[str, str, str, str]] = []
    old_head, sep, old_rest = old.partition("\n")
    new_head, new_sep, new_rest = new.partition("\n")
    if sep and new_sep and old_head == new_head and old_head.strip():
        found.append((old_rest, new_rest, "first", old_head))
    body, end = (old[:-1], "\n") if old.endswith("\n") else (old, "")
    new_body, new_end = (new[:-1], "\n") if new.endswith("\n") and end else (new, "")
    old_rest, sep, old_tail = body.rpartition("\n")
    new_rest, new_sep, new_tail = new_body.rpartition("\n")
    if sep and new_sep and old_tail == new_tail and old_tail.strip():
        found.append((old_rest + end, new_rest + new_end, "last", old_tail))
    return [f for f in found if len("".join(f[0].split())) >= MIN_EDGE_TRIMMED_CHARS and f[0] != f[1]]


def _line_span(text: str, start: int, end: int) -> tuple[int, int]:
    first = text.count("\n", 0, start) + 1
    return first, max(first, text.count("\n", 0, max(start, end - 1)) + 1)


def _exact(work: str, old: str, new: str, positions: list[int], replace_all: bool, *, stripped: bool) -> _Applied:
    if len(positions) > 1 and not replace_all:
        line_numbers = _line_numbers(work, positions)
        shown = ", ".join(str(n) for n in line_numbers[:50]) + (" …" if len(line_numbers) > 50 else "")
        raise EditError(
            f"old_string appears {len(positions)} times in the file (starting at lines {shown}), so it is ambiguous. "
            "Add surrounding lines to old_string so that it matches only the place you mean, or set replace_all to "
            "true to replace every occurrence."
        )
    applied = _replace(work, [(p, p + len(old)) for p in positions], new)
    if stripped:
        applied.stripped = True
        applied.note = "the line-number prefixes (as read_file shows them) were removed from old_string/new_string."
    return applied


def _replace(work: str, regions: list[tuple[int, int]], new: str) -> _Applied:
    pieces: list[str] = []
    replaced: list[tuple[int, int, int]] = []
    new_spans: list[tuple[int, int]] = []
    cursor = 0
    length = 0
    for start, end in regions:
        pieces.append(work[cursor:start])
        length += start - cursor
        new_spans.append((length, length + len(new)))
        pieces.append(new)
        length += len(new)
        replaced.append((start, end, len(new)))
        cursor = end
    pieces.append(work[cursor:])
    return _Applied(text="".join(pieces), replaced=replaced, new_spans=new_spans)


def _find_all(text: str, needle: str) -> list[int]:
    positions: list[int] = []
    start = text.find(needle)
    while start != -1:
        positions.append(start)
        start = text.find(needle, start + len(needle))
    return positions


def _strip_line_numbers(old: str, new: str) -> tuple[str, str] | None:
    """old/new without read_file line-number prefixes, if every line of old has one; else None."""
    old_lines = old.split("\n")
    body = old_lines[:-1] if old_lines[-1] == "" and len(old_lines) > 1 else old_lines
    if not numbered(body):
        return None
    new_lines = new.split("\n")
    new_body = new_lines[:-1] if new_lines[-1] == "" and len(new_lines) > 1 else new_lines
    strip_bare = numbered(new_body) or all(without_number(line) == "" for line in new_body)
    return (
        "\n".join(without_number(line) for line in old_lines),
        "\n".join(without_number(line, bare=strip_bare) for line in new_lines),
    )


# --- whitespace-tolerant matching ------------------------------------------------------------------------------------


def _lines_with_starts(work: str) -> tuple[list[str], list[int]]:
    """The text's lines (each may end with "\\r") and their start offsets; a final "\\n" opens no line."""
    lines = work.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    starts: list[int] = []
    offset = 0
    for line in lines:
        starts.append(offset)
        offset += len(line) + 1
    return lines, starts


def _carried(window: list[str], old_lines: list[str], new_lines: list[str], match: LineMatch) -> list[str]:
    """new_string's lines as they go into the file: the lines it keeps from old_string as the file has them, the
    others re-indented as the file indents."""
    carried = [match.indentation.carry(line) or "" for line in new_lines]
    kept = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for block in kept.get_matching_blocks():
        for k in range(block.size):
            carried[block.b + k] = window[block.a + k].rstrip("\r")
    return carried


def _tolerant_apply(
    work: str,
    lines: list[str],
    starts: list[int],
    old: str,
    old_lines: list[str],
    new_lines: list[str],
    match: LineMatch,
    stripped: bool,
) -> _Applied:
    first, last = match.index, match.index + len(old_lines) - 1
    start = starts[first]
    end = starts[last] + len(lines[last]) - (1 if lines[last].endswith("\r") else 0)
    eol = "\r\n" if lines[first].endswith("\r") else "\n"
    carried = _carried(lines[first : last + 1], old_lines, new_lines, match)
    if carried:
        replacement = eol.join(carried)
    else:  # a deletion of whole lines takes one line ending with it
        replacement = ""
        if last + 1 < len(lines):
            end = starts[last + 1]
        elif first > 0:
            start = starts[first] - 1
            if start > 0 and work[start - 1] == "\r":
                start -= 1
    applied = _replace(work, [(start, end)], replacement)
    applied.fallback = True
    applied.stripped = stripped

    ignored: list[str] = []
    window = lines[first : last + 1]
    if any(line.endswith("\r") for line in window) != ("\r" in old):
        ignored.append("line endings")
    if any(w.rstrip() != w.rstrip("\r") for w in window) or any(o.rstrip() != o.rstrip("\r") for o in old_lines):
        ignored.append("trailing whitespace")
    if match.indentation.changed:
        ignored.append(f"indentation ({match.indentation.describe()}; new_string was re-indented to match)")
    if not ignored:
        ignored.append("whitespace")
    prefix = "after removing line-number prefixes and " if stripped else "after "
    applied.note = (
        f"old_string did not match exactly; it matched {span_text(first + 1, last + 1)} {prefix}ignoring "
        f"{', '.join(ignored)}. Check the snippet below."
    )
    return applied


# --- positions -------------------------------------------------------------------------------------------------------


def _all_crlf(text: str) -> bool:
    crlf = text.count("\r\n")
    return crlf > 0 and crlf == text.count("\n")


def _map_span(span: tuple[int, int], replaced: list[tuple[int, int, int]]) -> tuple[int, int]:
    return _map_pos(span[0], replaced, end=False), _map_pos(span[1], replaced, end=True)


def _map_pos(pos: int, replaced: list[tuple[int, int, int]], *, end: bool) -> int:
    """Where offset `pos` of the text before a step is after it; inside a replaced region it sticks to its edge."""
    shift = 0
    for start, stop, length in replaced:
        if pos >= stop and not (pos == start == stop and not end):
            shift += length - (stop - start)
        elif pos > start:
            return start + shift + (length if end else 0)
        else:
            break
    return pos + shift


def _newline_offsets(text: str) -> list[int]:
    offsets: list[int] = []
    found = text.find("\n")
    while found != -1:
        offsets.append(found)
        found = text.find("\n", found + 1)
    return offsets


def _line_range(newlines: list[int], total: int, start: int, end: int) -> LineRange:
    """The lines (1-based) holding text[start:end]; an empty span is the line at `start`. Clamped to 1..total."""
    first = bisect.bisect_left(newlines, start) + 1
    last = bisect.bisect_left(newlines, end - 1) + 1 if end > start else first
    first = min(first, total)
    return LineRange(first, min(max(last, first), total))


def _line_numbers(text: str, positions: list[int]) -> list[int]:
    numbers: list[int] = []
    line, cursor = 1, 0
    for pos in positions:
        line += text.count("\n", cursor, pos)
        cursor = pos
        numbers.append(line)
    return numbers
