"""Shell words and redirections as bash reads them: a node's text, unquoting, the files a redirection writes.

Helpers of `shell` (which walks the tree-sitter syntax tree): `unescape` and `unescape_double` give a word's
value the way bash removes backslashes, `redirection_texts` gives the canonical text of redirections and the
files they write, `joins_words` finds a backslash-newline that bash reads as nothing inside a word (`r\\<newline>m`
is `rm`), and `reads_input` names the paths through which a program reads its standard input.
"""

from __future__ import annotations

import re
import shlex
from typing import TYPE_CHECKING, Any

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


def redirection_texts(nodes: list[Node]) -> tuple[list[str], list[str]]:
    """Canonical texts of redirections, and the files they write."""
    texts: list[str] = []
    writes: list[str] = []
    for node in nodes:
        if node.type != "file_redirect":
            texts.append(node_text(node))
            nested = [c for c in node.named_children if c.type == "file_redirect"]
            writes += redirection_texts(nested)[1]
            continue
        fd = ""
        op = ""
        target: Any = None
        for child in node.children:
            if child.type == "file_descriptor":
                fd = node_text(child)
            elif not child.is_named:
                op = child.type
            else:
                target = child
        value = target_value(target)
        duplicate = op in (">&", "<&") and (value.isdigit() or value == "-")
        texts.append(f"{fd}{op}{value}" if duplicate else f"{fd}{op} {shlex.quote(value)}")
        harmless = value in HARMLESS_TARGETS or value.startswith("/dev/fd/")
        if (op in WRITE_REDIRECTS or (op == ">&" and not duplicate)) and not harmless:
            writes.append(value)
    return texts, writes


def target_value(node: Any) -> str:
    if node is None:
        return ""
    text = node_text(node)
    if node.type == "word":
        return unescape(text)
    if node.type == "raw_string":
        return text[1:-1]
    if node.type == "string" and all(c.type == "string_content" for c in node.named_children):
        return "".join(unescape_double(node_text(c)) for c in node.named_children)
    return text


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
