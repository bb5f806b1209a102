"""Globs: the one glob → regex translation of the code base, and the meaning of the model's file globs.

`glob_regex` / `compile_glob` translate a gitignore-style glob for `fullmatch` on a posix path: "*" and "?" stay
within a path segment, "**" as a whole segment spans segments ("a/**/b", "**/x", "x/**"; elsewhere it is "*"),
`[abc]` / `[!abc]` are character classes (never matching "/"), `{a,b}` are alternatives (nested ones too) and a
backslash escapes the next character. `.gitignore` rules, grep's `glob` and glob's `pattern` all go through it.

`GlobFilter` is a file glob as the model gives it (see `coder_agent.tools.search` for its meaning).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from coder_agent.tools.search.scope import Scope, SearchError

__all__ = ["GlobFilter", "compile_glob", "glob_regex"]


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


@dataclass(frozen=True)
class GlobFilter:
    """A file glob as the model gave it: a leading "!" excludes, "./" is dropped, "/x" is anchored at the top."""

    pattern: str  # without a leading "!" or "./"
    negated: bool
    basename_only: bool  # no "/": matched against file names ...
    regex: re.Pattern[str]  # ... else against paths relative to the search directory or the root
    scope: Scope

    @classmethod
    def make(cls, glob: str, scope: Scope) -> GlobFilter:
        negated = glob.startswith("!")
        pattern = glob[1:] if negated else glob
        while pattern.startswith("./"):
            pattern = pattern[2:]
        anchored = pattern.startswith("/")  # "/x" is x at the top of the search directory only
        pattern = pattern.lstrip("/")
        if not anchored and pattern.startswith("**/") and "/" not in pattern[3:]:
            pattern = pattern[3:]
        if not pattern:
            raise SearchError(f"The glob {glob!r} is empty.")
        basename_only = not anchored and "/" not in pattern
        try:
            regex = compile_glob(pattern)
        except re.error as exc:
            raise SearchError(f"The glob {glob!r} is not valid: {exc}.") from None
        return cls(pattern, negated, basename_only, regex, scope)

    def matches(self, rel: str) -> bool:
        """Whether a file (path relative to base) matches the pattern itself (ignoring `negated`)."""
        if self.basename_only:
            return self.regex.fullmatch(rel.rsplit("/", 1)[-1]) is not None
        inner = self.scope.relative_to_target(rel)
        return self.regex.fullmatch(inner) is not None or self.regex.fullmatch(rel) is not None

    def accepts(self, rel: str) -> bool:
        """Whether a file is searched under this filter (`negated` excludes)."""
        return self.matches(rel) != self.negated

    @property
    def needs_listing(self) -> bool:
        """A positive path glob: ripgrep's `--glob` would search ignored files it matches, so it only pre-filters."""
        return not self.negated and not self.basename_only
