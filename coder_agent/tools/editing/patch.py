"""The apply_patch format, parsed: `parse_patch` turns a patch's text into file operations, or a `PatchError` that
names the line at fault and how to write it.

```
*** Begin Patch
*** Add File: path            every following line starts with "+"
*** Delete File: path
*** Update File: path
*** Move to: new/path         optional: rename (with or without hunks)
@@ class Thing                optional anchors: the hunk is looked for after these lines
 context line                 " " context, "-" removed, "+" added
*** End of File               optional: the hunk ends at the end of the file
*** End Patch
```

The first hunk of an update may leave out its `@@` line. Read leniently, where the intent is plain: Windows line
endings; a patch wrapped in a Markdown fence or a shell here-document (`apply_patch <<'EOF'`); an empty line inside
a hunk (an empty context line whose space was trimmed); a unified-diff `@@ -12,7 +12,8 @@ def f` header (the text
after it is the anchor, the numbers are ignored); "\\ No newline at end of file". Anything else out of place is an
error: a patch that does not end with `*** End Patch` may have been cut off, so nothing of it is applied.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from coder_agent.errors import CallFailed

__all__ = ["AddFile", "DeleteFile", "FileOp", "Hunk", "HunkLine", "Patch", "PatchError", "UpdateFile", "parse_patch"]

BEGIN = "*** Begin Patch"
END = "*** End Patch"
ADD = "*** Add File:"
DELETE = "*** Delete File:"
UPDATE = "*** Update File:"
MOVE = "*** Move to:"
END_OF_FILE = "*** End of File"
HEADERS = (ADD, DELETE, UPDATE)

_HEREDOC = re.compile(r"""^(?:\S*apply_?patch\S*\s*)?<<-?\s*(['"]?)(\w+)\1\s*$""")
_FENCE = re.compile(r"^(`{3,}|~{3,})[\w+-]*\s*$")
_UNIFIED = re.compile(r"^@@\s*-\d+(?:,\d+)?\s+\+\d+(?:,\d+)?\s*@@\s?(.*)$")

ShowHow = (
    "A patch looks like:\n*** Begin Patch\n*** Update File: path/to/file.py\n@@ def function_name\n context line\n"
    "-removed line\n+added line\n*** End Patch"
)


class PatchError(CallFailed):
    """A patch that cannot be applied; nothing of it was. The message names the place and the fix."""


@dataclass(frozen=True)
class HunkLine:
    op: Literal[" ", "-", "+"]
    text: str


@dataclass(frozen=True)
class Hunk:
    """One change of an updated file: lines to find (context and removed) and what replaces them."""

    lines: tuple[HunkLine, ...]
    anchors: tuple[str, ...] = ()
    """`@@` lines: the hunk is looked for after them, in order."""
    at_end: bool = False
    """`*** End of File`: the hunk's lines end the file."""
    line: int = 0
    """Where the hunk starts in the patch (1-based)."""

    @property
    def old(self) -> list[str]:
        return [item.text for item in self.lines if item.op != "+"]

    @property
    def new(self) -> list[str]:
        return [item.text for item in self.lines if item.op != "-"]


@dataclass(frozen=True)
class AddFile:
    path: str
    text: str
    line: int = 0


@dataclass(frozen=True)
class DeleteFile:
    path: str
    line: int = 0


@dataclass(frozen=True)
class UpdateFile:
    path: str
    hunks: tuple[Hunk, ...] = ()
    move_to: str | None = None
    line: int = 0


FileOp = AddFile | DeleteFile | UpdateFile


@dataclass(frozen=True)
class Patch:
    ops: tuple[FileOp, ...]

    @property
    def paths(self) -> list[str]:
        """Every path the patch names (a move's destination too), in order, once each."""
        named: list[str] = []
        for op in self.ops:
            named.append(op.path)
            if isinstance(op, UpdateFile) and op.move_to is not None:
                named.append(op.move_to)
        return list(dict.fromkeys(named))


def parse_patch(text: str) -> Patch:
    """The file operations of a patch; PatchError (naming the patch line) if it is not well formed."""
    lines, first_number = _unwrap(text.replace("\r\n", "\n").split("\n"))
    if not lines:
        raise PatchError(f"The patch is empty. {ShowHow}")
    if lines[0].strip() != BEGIN:
        raise PatchError(
            f"The patch must start with `{BEGIN}`; its first line is {_quote(lines[0])}. {ShowHow}",
            shown="The patch has a bad header.",
        )
    if lines[-1].strip() != END:
        raise PatchError(
            f"The patch must end with `{END}`; its last line is {_quote(lines[-1])} (was it cut off?). Nothing was "
            "applied: send the whole patch again.",
            shown="The patch is not complete.",
        )
    reader = _Reader(lines[1:-1], first_number + 1)
    ops: list[FileOp] = []
    while not reader.done:
        line = reader.peek()
        if not line.strip():
            reader.take()
            continue
        if line.startswith(ADD):
            ops.append(_add(reader))
        elif line.startswith(DELETE):
            number = reader.number
            path = _path(reader.take(), DELETE, number)
            ops.append(DeleteFile(path, number))
        elif line.startswith(UPDATE):
            ops.append(_update(reader))
        else:
            raise reader.error(
                f"expected a file header ({', '.join(f'`{h} path`' for h in HEADERS)}), found {_quote(line)}"
            )
    if not ops:
        raise PatchError(f"The patch has no file in it. {ShowHow}")
    return Patch(tuple(ops))


class _Reader:
    """The patch's lines between Begin and End, with the patch line number of the next one."""

    def __init__(self, lines: list[str], first_number: int) -> None:
        self.lines = lines
        self.index = 0
        self.first_number = first_number

    @property
    def done(self) -> bool:
        return self.index >= len(self.lines)

    @property
    def number(self) -> int:
        return self.first_number + self.index

    def peek(self) -> str:
        return self.lines[self.index]

    def take(self) -> str:
        line = self.lines[self.index]
        self.index += 1
        return line

    def at_header(self) -> bool:
        return not self.done and self.peek().startswith(HEADERS)

    def error(self, problem: str, number: int | None = None) -> PatchError:
        return PatchError(f"Patch line {number or self.number}: {problem}. Nothing was applied.")


def _path(line: str, header: str, number: int) -> str:
    path = line[len(header) :].strip()
    if not path:
        raise PatchError(f"Patch line {number}: `{header}` names no file. Nothing was applied.")
    if "\x00" in path:
        raise PatchError(f"Patch line {number}: the path holds a NUL character, which no file name can.")
    return path


def _add(reader: _Reader) -> AddFile:
    number = reader.number
    path = _path(reader.take(), ADD, number)
    content: list[str] = []
    while not reader.done and not reader.at_header():
        line = reader.take()
        if line.startswith("+"):
            content.append(line[1:])
        elif not line.strip():
            content.append("")
        else:
            raise reader.error(
                f"every line of a new file starts with `+` (the file is {path}); this one is {_quote(line)}",
                reader.number - 1,
            )
    while content and content[-1] == "" and len(content) > 1 and not content[-2]:
        content.pop()  # blank lines that only separate this file from the next header
    return AddFile(path, "".join(f"{line}\n" for line in content), number)


def _update(reader: _Reader) -> UpdateFile:
    number = reader.number
    path = _path(reader.take(), UPDATE, number)
    move_to: str | None = None
    if not reader.done and reader.peek().startswith(MOVE):
        move_number = reader.number
        move_to = _path(reader.take(), MOVE, move_number)
    hunks: list[Hunk] = []
    anchors: list[str] = []
    body: list[HunkLine] = []
    start = reader.number

    def close(at_end: bool = False) -> None:
        nonlocal anchors, body, start
        if not body:
            if anchors or at_end:
                raise reader.error(f"a hunk of {path} has an `@@` line but no lines after it", start)
            return
        if all(item.op == " " for item in body):
            raise reader.error(f"a hunk of {path} changes nothing (it has no `-` or `+` line)", start)
        hunks.append(Hunk(tuple(body), tuple(anchors), at_end, start))
        anchors, body = [], []

    while not reader.done and not reader.at_header():
        line_number = reader.number
        line = reader.take()
        if line.startswith("@@"):
            if body:
                close()
            if not anchors:
                start = line_number
            anchor = _anchor(line)
            if anchor:
                anchors.append(anchor)
        elif line.strip() == END_OF_FILE:
            close(at_end=True)
        elif line.startswith("\\"):  # "\ No newline at end of file"
            continue
        elif line[:1] in (" ", "-", "+"):
            if not body and not anchors:
                start = line_number
            body.append(HunkLine(line[0], line[1:]))  # type: ignore[arg-type]
        elif not line.strip():
            if not body and not anchors:
                continue  # a blank line before the first hunk
            body.append(HunkLine(" ", ""))
        elif line.startswith("***"):
            raise reader.error(f"unknown header {_quote(line)}; the headers are {', '.join(HEADERS)}, {MOVE}")
        else:
            raise reader.error(
                f"a line of a hunk starts with ' ' (context), '-' (removed) or '+' (added); {_quote(line)} starts "
                "with none of them (put a space before context lines)",
                line_number,
            )
    while body and body[-1] == HunkLine(" ", ""):  # blank lines before the next header separate, they are no context
        body.pop()
    close()
    if not hunks and move_to is None:
        raise PatchError(f"Patch line {number}: the update of {path} has no hunk, so it changes nothing.")
    return UpdateFile(path, tuple(hunks), move_to, number)


def _anchor(line: str) -> str:
    """The text of an `@@` line: what follows `@@`, or what follows a unified-diff range header."""
    unified = _UNIFIED.match(line)
    if unified:
        return unified.group(1).strip()
    return line[2:].strip()


def _unwrap(lines: list[str]) -> tuple[list[str], int]:
    """The patch without blank edges, a Markdown fence or a here-document around it; the number of its first line."""
    first = 1
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    while lines and not lines[0].strip():
        lines, first = lines[1:], first + 1
    if len(lines) >= 2:
        heredoc = _HEREDOC.match(lines[0].strip())
        if heredoc and lines[-1].strip() == heredoc.group(2):
            return _unwrap_again(lines[1:-1], first + 1)
        fence = _FENCE.match(lines[0].strip())
        if fence and lines[-1].strip() == fence.group(1):
            return _unwrap_again(lines[1:-1], first + 1)
    return lines, first


def _unwrap_again(lines: list[str], first: int) -> tuple[list[str], int]:
    inner, offset = _unwrap(lines)
    return inner, first + offset - 1


def _quote(line: str) -> str:
    shown = line if len(line) <= 80 else line[:77] + "…"
    return repr(shown)
