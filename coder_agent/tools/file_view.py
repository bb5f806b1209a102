"""What read_file shows the model, and the checks around reading and writing text files.

This module owns:

* `format_lines`: a file's text as `cat -n` style numbered lines (`{n:>6}\\t{line}`, numbered from 1), one window
  of it (`offset`/`limit`), long lines cut, and a trailing note whenever the model does not see the whole file;
* `split_lines` and `number_line`, the line splitting and numbering every tool shares, so that the line numbers
  of read_file, of edit snippets and of edit errors always agree (lines end at "\\n"; a "\\r" before it is part of
  the line ending, not of the line);
* `SNIFF_BYTES` / `find_nul`: the binary sniff every tool shares (grep skips such files, the file tools refuse them);
* `looks_binary` / `decode_text` (`NotTextError`): only UTF-8 text files are read or edited as text, so a binary
  file or one in another encoding is never written back corrupted;
* `content_hash`: the sha256 of a text, for read-before-edit staleness checks (compare the hash of what the model
  last read or wrote with the file as it is now; never compare mtimes);
* `truncate_middle`: keep the head and the tail of a long output (command output) with a marker in between;
* `fenced`: a text in a Markdown code fence no backticks inside it can close.

Everything here is pure: no file system access, no I/O.
"""

from __future__ import annotations

import codecs
import hashlib

__all__ = [
    "DEFAULT_LIMIT",
    "DEFAULT_MAX_CHARS",
    "MAX_LINE_CHARS",
    "SNIFF_BYTES",
    "NotTextError",
    "content_hash",
    "decode_text",
    "fenced",
    "find_nul",
    "format_lines",
    "format_window",
    "looks_binary",
    "number_line",
    "split_lines",
    "truncate_middle",
]

DEFAULT_LIMIT = 2000
"""Lines shown when the model gives no limit."""

MAX_LINE_CHARS = 2000
"""Characters of a line shown before it is cut."""

DEFAULT_MAX_CHARS = 100_000
"""Characters of numbered output at most in one read (about 25k tokens); the rest is left for a later offset."""

SNIFF_BYTES = 8192
"""A NUL byte within this many leading bytes marks a file as binary (the heuristic git and ripgrep use)."""


class NotTextError(ValueError):
    """The bytes are not UTF-8 text; the message is meant for the model."""


def split_lines(text: str) -> list[str]:
    """The lines of `text` without their endings: split at "\\n", one "\\r" before it dropped.

    A final line ending does not start another line ("a\\nb\\n" has two lines); "" has none. Other characters that
    `str.splitlines` treats as breaks (form feed, U+2028, ...) stay inside their line, so line numbers match what
    editors, grep and the edit tool count.
    """
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def number_line(number: int, line: str, max_line_chars: int = MAX_LINE_CHARS) -> str:
    """One `cat -n` style line, `{number:>6}\\t{line}`, cut after `max_line_chars` characters with a marker."""
    if len(line) > max_line_chars:
        line = f"{line[:max_line_chars]}… [line cut: {len(line)} characters in total]"
    return f"{number:>6}\t{line}"


def format_lines(
    text: str,
    offset: int = 1,
    limit: int | None = None,
    max_line_chars: int = MAX_LINE_CHARS,
    default_limit: int = DEFAULT_LIMIT,
    *,
    max_chars: int | None = DEFAULT_MAX_CHARS,
) -> str:
    """The text read_file returns: lines `offset`..`offset+limit-1` (1-based) numbered like `cat -n`.

    An `offset` below 1 counts as 1; a `limit` of None or below 1 means `default_limit`. Lines longer than
    `max_line_chars` are cut with a marker. The output stops early, at a line boundary, once it would pass
    `max_chars` characters (None: no such cap; at least one line is always shown). Whenever the model does not see
    the whole file a last line says which lines it saw and which `offset` reads on. An empty file, or an offset past
    the end, gives a notice instead of lines.
    """
    lines = split_lines(text)
    total = len(lines)
    if total == 0:
        return "[The file is empty: it has no lines.]"
    first = max(offset, 1)
    if first > total:
        return (
            f"[offset={offset} is past the end of the file, which has {total} line{'s' if total != 1 else ''}; "
            f"use an offset from 1 to {total}.]"
        )
    count = limit if limit is not None and limit >= 1 else default_limit
    stop = min(total, first - 1 + count)  # last line shown (1-based), before the character cap

    out: list[str] = []
    size = 0
    cut_lines = 0
    last = first - 1
    for number in range(first, stop + 1):
        line = lines[number - 1]
        numbered = number_line(number, line, max_line_chars)
        if max_chars is not None and out and size + len(numbered) + 1 > max_chars:
            break
        out.append(numbered)
        size += len(numbered) + 1
        cut_lines += len(line) > max_line_chars
        last = number

    notes: list[str] = []
    if cut_lines:
        notes.append(
            f"{cut_lines} line{'s were' if cut_lines != 1 else ' was'} longer than {max_line_chars} characters and "
            "cut; use grep or the shell to see such lines in full"
        )
    if first > 1 or last < total:
        if last < total:
            notes.append(f"showing lines {first}-{last} of {total}; use offset={last + 1} to read more")
        else:
            notes.append(f"showing lines {first}-{last} of {total} (the end of the file)")
    body = "\n".join(out)
    if notes:
        body += "\n\n[" + "; ".join(notes) + ".]"
    return body


def format_window(text: str, first: int, file_bytes: int, max_chars: int | None = DEFAULT_MAX_CHARS) -> str:
    """Lines of a file too big to read whole, numbered from `first`, with a note on how to read on."""
    lines = split_lines(text)
    if not lines:
        return f"[No lines from line {first} on: the file ({file_bytes:,} bytes) ends before it.]"
    out: list[str] = []
    size = 0
    last = first - 1
    for number, line in enumerate(lines, start=first):
        numbered = number_line(number, line)
        if max_chars is not None and out and size + len(numbered) + 1 > max_chars:
            break
        out.append(numbered)
        size += len(numbered) + 1
        last = number
    note = (
        f"[showing lines {first}-{last} of a file too big to read whole ({file_bytes:,} bytes); "
        f"use offset={last + 1} to read on, or grep to find what you need.]"
    )
    return "\n".join(out) + "\n\n" + note


def find_nul(data: bytes) -> int:
    """The offset of the first NUL byte within the first `SNIFF_BYTES` of `data`, or -1: with one, it is binary."""
    return data.find(b"\x00", 0, SNIFF_BYTES)


def looks_binary(data: bytes, *, head: bool = False) -> bool:
    """True if `data` is not UTF-8 text: a NUL byte in its first 8 KiB, or bytes that do not decode as UTF-8.

    `head`: `data` is only the start of the file (e.g. its first `SNIFF_BYTES`), so a character cut at its end is
    not held against it.
    """
    if find_nul(data) != -1:
        return True
    try:
        codecs.getincrementaldecoder("utf-8")().decode(data, final=not head)
    except UnicodeDecodeError:
        return True
    return False


def decode_text(data: bytes, path: str) -> str:
    """`data` decoded as UTF-8, exactly (a BOM and "\\r\\n" stay as they are, so encoding it back gives `data`).

    Raises `NotTextError`, naming `path`, for binary files (a NUL byte in the first 8 KiB) and for bytes that are not
    valid UTF-8: such files are neither shown as text nor edited, so they are never written back corrupted.
    """
    nul = find_nul(data)
    if nul != -1:
        detail = f"it contains a NUL byte (at byte {nul}), so it looks binary"
    else:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            detail = f"its bytes are not valid UTF-8 (at byte {exc.start})"
    raise NotTextError(
        f"{path} is not a UTF-8 text file (binary or another encoding); it was not changed. Details: {detail}. "
        "The file tools only read and edit UTF-8 text; use the shell (e.g. `file`, `xxd`, `iconv`) if you need to "
        "inspect or convert it."
    )


def content_hash(text: str) -> str:
    """The sha256 hex digest of `text` encoded as UTF-8: equal hashes mean the model saw the current content."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def fenced(text: str, language: str = "") -> str:
    """`text` in a Markdown code fence longer than any run of backticks inside it."""
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{language}\n{text}\n{ticks}"


def unfenced(text: str) -> str:
    """`text` with the lines that open and close its code fences left out (each block's body kept): for showing
    outside Markdown, or fencing anew, what `fenced` wrapped (a fence's close is a line of its own backticks alone)."""
    lines = text.split("\n")
    kept: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        ticks = len(line) - len(line.lstrip("`"))
        opens = ticks >= 3 and "`" not in line[ticks:] and " " not in line[ticks:]
        close = next((n for n in range(index + 1, len(lines)) if lines[n] == "`" * ticks), None) if opens else None
        if close is None:
            kept.append(line)
            index += 1
            continue
        kept += lines[index + 1 : close]
        index = close + 1
    return "\n".join(kept)


def truncate_middle(text: str, max_chars: int) -> str:
    """`text` if it has at most `max_chars` characters, else its head and tail around "[… N characters omitted …]".

    The result has at most `max_chars` characters (unless `max_chars` is smaller than the marker itself, when the
    marker alone is returned). Cuts fall on line breaks when one is near, so kept lines stay whole.
    """
    if len(text) <= max_chars:
        return text
    total = len(text)
    marker_size = len(_omitted_marker(total))  # an upper bound: the omitted count has at most as many digits
    keep = max(max_chars - marker_size, 0)
    if keep == 0:
        return _omitted_marker(total).strip("\n")
    head = keep // 2
    tail = keep - head
    # Prefer whole lines: end the head after a newline and start the tail after one, when one is close enough.
    slack_head = head // 4
    cut = text.rfind("\n", head - slack_head, head)
    if cut != -1:
        head = cut + 1
    tail_start = total - tail
    slack_tail = tail // 4
    cut = text.find("\n", tail_start, tail_start + slack_tail)
    if cut != -1:
        tail_start = cut + 1
    omitted = tail_start - head
    marker = _omitted_marker(omitted)
    if head == 0 or text[head - 1] == "\n":
        marker = marker[1:]  # the head already ends a line
    return text[:head] + marker + text[tail_start:]


def _omitted_marker(omitted: int) -> str:
    return f"\n[… {omitted} characters omitted …]\n"
