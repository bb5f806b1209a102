"""`GlobFilter`: a file glob as the model gives it (see `coder_agent.tools.search` for its meaning); the glob
syntax itself is `coder_agent.globs`."""

from __future__ import annotations

from dataclasses import dataclass

from coder_agent.globs import Glob, compile_glob
from coder_agent.tools.search.scope import Scope, SearchError

__all__ = ["GlobFilter", "compile_glob"]


@dataclass(frozen=True)
class GlobFilter:
    """A file glob as the model gave it: a leading "!" excludes, "./" is dropped, "/x" is anchored at the top."""

    pattern: str  # without a leading "!" or "./"
    negated: bool
    basename_only: bool  # no "/": matched against file names ...
    glob: Glob  # ... else against paths relative to the search directory or the root
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
        return cls(pattern, negated, basename_only, compile_glob(pattern), scope)

    def matches(self, rel: str) -> bool:
        """Whether a file (path relative to base) matches the pattern itself (ignoring `negated`)."""
        if self.basename_only:
            return self.glob.matches(rel.rsplit("/", 1)[-1])
        inner = self.scope.relative_to_target(rel)
        return self.glob.matches(inner) or self.glob.matches(rel)

    def accepts(self, rel: str) -> bool:
        """Whether a file is searched under this filter (`negated` excludes)."""
        return self.matches(rel) != self.negated

    @property
    def needs_listing(self) -> bool:
        """A positive path glob: ripgrep's `--glob` would search ignored files it matches, so it only pre-filters."""
        return not self.negated and not self.basename_only
