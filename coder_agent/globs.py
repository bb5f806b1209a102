"""Globs: the one glob → regex translation of the code base.

`glob_regex` / `compile_glob` translate a gitignore-style glob for `fullmatch` on a posix path: "*" and "?" stay
within a path segment, "**" as a whole segment spans segments ("a/**/b", "**/x", "x/**"; elsewhere it is "*"),
`[abc]` / `[!abc]` are character classes (never matching "/"), `{a,b}` are alternatives (nested ones too) and a
backslash escapes the next character (`escape` makes a glob of a literal name, `unescape` gives it back).
`.gitignore` rules, grep's and glob's patterns, and permission rules (paths, hosts, MCP tool names) all go
through it.
"""

from __future__ import annotations

import functools
import re

__all__ = ["compile_glob", "escape", "glob_regex", "unescape"]

_SPECIAL = re.compile(r"([*?\[\]{}\\])")
_ESCAPED = re.compile(r"\\(.)")


def escape(text: str) -> str:
    """`text` as a glob that matches exactly it: `*`, `?`, `[`, `]`, `{`, `}` and backslashes escaped."""
    return _SPECIAL.sub(r"\\\1", text)


def unescape(glob: str) -> str:
    """What `escape` was given (backslash escapes removed), to show a literal glob as the name it matches."""
    return _ESCAPED.sub(r"\1", glob)


def glob_regex(glob: str) -> str:
    """A regex (for fullmatch) for a gitignore-style glob: "*", "?", "**", "[...]", "{a,b}", "\\" escapes."""
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        char = glob[i]
        if char == "*":
            if glob.startswith("**", i):
                j = i + 2
                whole_segment = (i == 0 or glob[i - 1] == "/") and (j == n or glob[j] == "/")
                if whole_segment and j == n:
                    out.append(".*")
                    i = j
                    continue
                if whole_segment:
                    out.append("(?:.*/)?")
                    i = j + 1
                    continue
                out.append("[^/]*")
                i = j
                continue
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = glob.find("]", i + 2 if glob.startswith(("[!", "[^"), i) else i + 1)
            if end == -1:
                out.append(re.escape(char))
            else:
                body = glob[i + 1 : end]
                negate = body[:1] in ("!", "^")
                body = body[1:] if negate else body
                body = body.replace("\\", "\\\\").replace("[", "\\[")
                out.append(f"[{'^/' if negate else ''}{body}]")
                i = end
        elif char == "{":
            end = _matching_brace(glob, i)
            if end == -1:
                out.append(re.escape(char))
            else:
                alternatives = _split_top_level(glob[i + 1 : end])
                out.append("(?:" + "|".join(glob_regex(alt) for alt in alternatives) + ")")
                i = end
        elif char == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(glob[i]))
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


@functools.lru_cache(maxsize=1024)
def compile_glob(glob: str) -> re.Pattern[str]:
    """`glob_regex(glob)` compiled ("." also matches newlines); `re.error` for a glob that makes no valid regex."""
    return re.compile(f"(?s:{glob_regex(glob)})")


def _matching_brace(glob: str, start: int) -> int:
    depth = 0
    i = start
    while i < len(glob):
        if glob[i] == "\\":
            i += 2
            continue
        if glob[i] == "{":
            depth += 1
        elif glob[i] == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def _split_top_level(body: str) -> list[str]:
    parts: list[str] = []
    depth, current = 0, []
    i = 0
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body):
            current.append(body[i : i + 2])
            i += 2
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
        i += 1
    parts.append("".join(current))
    return parts
