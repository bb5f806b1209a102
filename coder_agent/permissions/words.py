"""Shell words and redirections as bash reads them: a node's text, unquoting, the files a redirection writes.

Helpers of `shell` (which walks the tree-sitter syntax tree): `word_value` gives a word node's value as bash
reads it (quotes and backslashes removed, pieces joined: `"OUT"/f` is `OUT/f`) and whether it is fixed text,
`unescape` and `unescape_double` remove backslashes the way bash does, `redirection_texts` gives the canonical
text of redirections and the files they write (every write operator: `>`, `>>`, `>|`, `&>`, `&>>`, `<>`, `>&`
with a file), `joins_words` finds a backslash-newline that bash reads as nothing inside a word (`r\\<newline>m`
is `rm`), and `reads_input` names the paths through which a program reads its standard input.
"""

from __future__ import annotations

import re
import shlex
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node

HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
WRITE_REDIRECTS = frozenset({">", ">>", "&>", "&>>", ">|", "<>"})
_INPUT = re.compile(r"-|/dev/stdin|/dev/fd/[0-9]+|/proc/[^/]+/fd/[0-9]+")
_CONTINUATION = re.compile(r"(\\+)\n")


def node_text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", errors="replace")


def unescape(text: str) -> str:
    """An unquoted word's value: each backslash takes the next character literally (`\\rm` → `rm`)."""
    out: list[str] = []
    chars = iter(text)
    for char in chars:
        if char == "\\":
            nxt = next(chars, "")
            out.append("" if nxt == "\n" else nxt)
        else:
            out.append(char)
    return "".join(out)


def unescape_double(text: str) -> str:
    """Inside double quotes a backslash escapes only `$`, a backtick, `"`, `\\` and a newline."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text) and text[i + 1] in '$`"\\\n':
            out.append("" if text[i + 1] == "\n" else text[i + 1])
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


GLOB_CHARS = re.compile(r"[*?\[{]")
STRAY_READ_WRITE = re.compile(r"""(?<![<>])\d*<>\s*("[^"]*"|'[^']*'|[^\s;&|()<>]+)""")
"""`<>` (open for reading and writing), which the grammar does not know: found in the text of a line it could not
parse, so the file is still seen."""


def word_value(node: Node) -> tuple[str, bool]:
    """A word node's value as bash reads it, and whether it is fixed text (no expansion, glob or brace)."""
    kind = node.type
    text = node_text(node)
    if kind == "word":
        return unescape(text), not any(c in text for c in "*?[{") and not text.startswith("~")
    if kind == "number":
        return text, True
    if kind == "raw_string":
        return text[1:-1], True
    if kind == "ansi_c_string":
        return text[2:-1], "\\" not in text
    if kind in ("string", "translated_string"):
        parts = list(node.named_children)
        if all(c.type == "string_content" for c in parts):
            return "".join(unescape_double(node_text(c)) for c in parts), True
        return text, False
    if kind == "concatenation":
        pieces = [word_value(c) for c in node.named_children]
        if all(literal for _, literal in pieces):
            return "".join(value for value, _ in pieces), True
        if all(literal or not _expands(c) for c, (_, literal) in zip(node.named_children, pieces, strict=True)):
            return "".join(value for value, _ in pieces), False  # fixed text with a glob in it: `"OUT"/*`
        return text, False
    return text, False


def _expands(node: Node) -> bool:
    """Whether a piece of a word holds an expansion (`$x`, `$(…)`, a backtick), not just glob characters."""
    return node.type not in ("word", "raw_string", "string", "number", "ansi_c_string") or "$" in node_text(node)


def redirection_texts(nodes: list[Node]) -> tuple[list[str], list[str], list[str]]:
    """Canonical texts of redirections, the files they write, and those of them the shell expands as globs."""
    texts: list[str] = []
    writes: list[str] = []
    globs: list[str] = []
    for node in nodes:
        if node.type != "file_redirect":
            texts.append(node_text(node))
            nested = [c for c in node.named_children if c.type == "file_redirect"]
            _, more, more_globs = redirection_texts(nested)
            writes += more
            globs += more_globs
            continue
        fd = ""
        op = ""
        target: Node | None = None
        for child in node.children:
            if child.type == "file_descriptor":
                fd = node_text(child)
            elif not child.is_named:
                op = child.type
            else:
                target = child
        value, literal = word_value(target) if target is not None else ("", True)
        duplicate = op in (">&", "<&") and (value.isdigit() or value == "-")
        texts.append(f"{fd}{op}{value}" if duplicate else f"{fd}{op} {shlex.quote(value)}")
        harmless = value in HARMLESS_TARGETS or value.startswith("/dev/fd/")
        if (op in WRITE_REDIRECTS or (op == ">&" and not duplicate)) and not harmless:
            writes.append(value)
            if not literal and GLOB_CHARS.search(value):
                globs.append(value)
    return texts, writes, globs


def joins_words(line: str) -> bool:
    """Whether a backslash-newline stands between two non-blank characters: bash removes it, joining them into
    one word (`r\\<newline>m f` runs `rm f`), while the grammar reads two."""
    for match in _CONTINUATION.finditer(line):
        if len(match.group(1)) % 2 == 0:
            continue  # an escaped backslash, then a real newline
        before, after = line[: match.start()][-1:], line[match.end() : match.end() + 1]
        if before and after and not before.isspace() and not after.isspace():
            return True
    return False


def reads_input(path: str) -> bool:
    """Whether a script path is the program's own input (`/dev/stdin`, `/dev/fd/0`, `-`, …): a shell or
    `source` given it runs commands from a pipe or a here-document, which cannot be checked."""
    return _INPUT.fullmatch(path) is not None
