"""Globs: the one glob matcher of the code base, in time linear in the path's length.

`compile_glob(glob)` gives a `Glob` whose `matches(path)` says whether a gitignore-style glob matches a whole
posix path: "*" and "?" stay within a path segment, "**" as a whole segment spans segments ("a/**/b", "**/x",
"x/**"; elsewhere it is "*"), `[abc]` / `[!abc]` / `[a-z]` are character classes (never matching "/"; a range
written backwards matches nothing), `{a,b}` are alternatives (nested ones too) and a backslash escapes the
next character (`escape` makes a glob of a literal name, `unescape` gives it back). `.gitignore` rules, grep's
and glob's patterns, and permission rules (paths, hosts, MCP tool names) all go through it.

The glob is compiled to a small automaton that reads the path once, keeping the set of places the glob could be
at (Thompson's construction, its state sets cached as they are met): no backtracking, so a glob like
`x/*a*a*a*a*b` over a long name costs a few steps per character, not one per way of splitting the name. Python's
`re` backtracks, which is why it is not used here.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

__all__ = ["Glob", "compile_glob", "escape", "unescape"]

_SPECIAL = re.compile(r"([*?\[\]{}\\])")
_ESCAPED = re.compile(r"\\(.)")
MAX_CACHED_STEPS = 4096
"""Cached (state set, character) → state set steps kept per glob; past that, the cache starts again."""

_CHAR, _NOT_SLASH, _ANY, _CLASS = range(4)


def escape(text: str) -> str:
    """`text` as a glob that matches exactly it: `*`, `?`, `[`, `]`, `{`, `}` and backslashes escaped."""
    return _SPECIAL.sub(r"\\\1", text)


def unescape(glob: str) -> str:
    """What `escape` was given (backslash escapes removed), to show a literal glob as the name it matches."""
    return _ESCAPED.sub(r"\1", glob)


@dataclass(frozen=True)
class _Class:
    """A bracket expression: single characters and ranges, maybe negated; never "/"."""

    chars: frozenset[str]
    ranges: tuple[tuple[str, str], ...]
    negated: bool

    def accepts(self, char: str) -> bool:
        if char == "/":
            return False
        inside = char in self.chars or any(low <= char <= high for low, high in self.ranges)
        return inside != self.negated


@dataclass
class _Automaton:
    """States: a consuming state has a test (`kind`, `arg`) and one next state; others only have free moves."""

    kinds: list[int | None] = field(default_factory=list)
    args: list[object] = field(default_factory=list)
    nexts: list[int] = field(default_factory=list)
    free: list[list[int]] = field(default_factory=list)

    def state(self, kind: int | None = None, arg: object = None) -> int:
        self.kinds.append(kind)
        self.args.append(arg)
        self.nexts.append(-1)
        self.free.append([])
        return len(self.kinds) - 1

    def takes(self, state: int, char: str) -> bool:
        kind, arg = self.kinds[state], self.args[state]
        if kind == _CHAR:
            return char == arg
        if kind == _NOT_SLASH:
            return char != "/"
        if kind == _ANY:
            return True
        return kind == _CLASS and isinstance(arg, _Class) and arg.accepts(char)


class Glob:
    """A compiled glob (see the module docstring)."""

    def __init__(self, glob: str) -> None:
        self.glob = glob
        self._auto = _Automaton()
        self._start = self._auto.state()
        self._accept = _build(self._auto, glob, self._start)
        self._first = self._closure((self._start,))
        self._steps: dict[tuple[frozenset[int], str], frozenset[int]] = {}

    @property
    def size(self) -> int:
        """The automaton's number of states: at most this many are visited per character of a path."""
        return len(self._auto.kinds)

    def matches(self, text: str) -> bool:
        """Whether the glob matches the whole of `text`."""
        return self.run(text)[0]

    def run(self, text: str) -> tuple[bool, int]:
        """(whether it matches, the number of states visited): the work done, bounded by `size` per character."""
        current = self._first
        work = len(current)
        for char in text:
            key = (current, char)
            following = self._steps.get(key)
            if following is None:
                moved = [self._auto.nexts[s] for s in current if self._auto.takes(s, char)]
                following = self._closure(moved)
                if len(self._steps) >= MAX_CACHED_STEPS:
                    self._steps.clear()
                self._steps[key] = following
            work += len(current) + len(following)
            if not following:
                return False, work
            current = following
        return self._accept in current, work

    def _closure(self, states: tuple[int, ...] | list[int]) -> frozenset[int]:
        seen = set(states)
        stack = list(states)
        while stack:
            for target in self._auto.free[stack.pop()]:
                if target not in seen:
                    seen.add(target)
                    stack.append(target)
        return frozenset(seen)


@functools.lru_cache(maxsize=1024)
def compile_glob(glob: str) -> Glob:
    """The glob compiled for `Glob.matches` (no glob is invalid: an unclosed `[` or `{` is literal)."""
    return Glob(glob)


def _consume(auto: _Automaton, at: int, kind: int, arg: object = None) -> int:
    """Link a consuming state after `at`; returns the state reached after it consumes."""
    state = auto.state(kind, arg)
    auto.free[at].append(state)
    end = auto.state()
    auto.nexts[state] = end
    return end


def _loop(auto: _Automaton, at: int, kind: int) -> int:
    """Any number of characters of one kind after `at` ("*": `_NOT_SLASH`, "**": `_ANY`)."""
    state = auto.state(kind)
    end = auto.state()
    auto.free[at].append(end)
    auto.free[end].append(state)
    auto.nexts[state] = end
    return end


def _build(auto: _Automaton, glob: str, at: int) -> int:
    """Append the states of `glob` after state `at`; returns its end state."""
    i, n = 0, len(glob)
    while i < n:
        char = glob[i]
        if char == "*":
            if glob.startswith("**", i):
                j = i + 2
                whole_segment = (i == 0 or glob[i - 1] == "/") and (j == n or glob[j] == "/")
                if whole_segment and j == n:
                    at = _loop(auto, at, _ANY)  # "x/**": anything below
                    i = j
                    continue
                if whole_segment:  # "**/": any folders, or none
                    end = auto.state()
                    auto.free[at].append(end)
                    at = _consume(auto, _loop(auto, at, _ANY), _CHAR, "/")
                    auto.free[at].append(end)
                    at = end
                    i = j + 1
                    continue
                at = _loop(auto, at, _NOT_SLASH)
                i = j
                continue
            at = _loop(auto, at, _NOT_SLASH)
        elif char == "?":
            at = _consume(auto, at, _NOT_SLASH)
        elif char == "[":
            parsed = _bracket(glob, i)
            if parsed is None:
                at = _consume(auto, at, _CHAR, char)
            else:
                klass, i = parsed
                at = _consume(auto, at, _CLASS, klass)
        elif char == "{":
            end = _matching_brace(glob, i)
            if end == -1:
                at = _consume(auto, at, _CHAR, char)
            else:
                joined = auto.state()
                for alternative in _split_top_level(glob[i + 1 : end]):
                    branch = auto.state()
                    auto.free[at].append(branch)
                    auto.free[_build(auto, alternative, branch)].append(joined)
                at = joined
                i = end
        elif char == "\\" and i + 1 < n:
            i += 1
            at = _consume(auto, at, _CHAR, glob[i])
        else:
            at = _consume(auto, at, _CHAR, char)
        i += 1
    return at


def _bracket(glob: str, start: int) -> tuple[_Class, int] | None:
    """The class opened at `start` and the index of its closing "]"; None when it is not closed (a literal "[")."""
    negated = glob.startswith(("[!", "[^"), start)
    first = start + (2 if negated else 1)
    end = glob.find("]", first + 1)
    if end == -1:
        return None
    body = glob[first:end]
    chars: set[str] = set()
    ranges: list[tuple[str, str]] = []
    k = 0
    while k < len(body):
        if k + 2 < len(body) and body[k + 1] == "-":
            ranges.append((body[k], body[k + 2]))  # a backwards range holds nothing
            k += 3
        else:
            chars.add(body[k])
            k += 1
    return _Class(frozenset(chars), tuple(ranges), negated), end


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
