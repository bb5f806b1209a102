"""Where a search runs: the root, the file or folder searched, and how result paths are written; `SearchError`."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from coder_agent.errors import CallFailed

__all__ = ["Scope", "SearchError"]


class SearchError(CallFailed):
    """The search could not run (invalid regex, missing path, ...); the message is for the model."""


@dataclass(frozen=True)
class Scope:
    """Where a search runs. Result paths are posix paths relative to `base` (the root, or the target itself when
    it lies outside the root, in which case they are shown absolute)."""

    base: Path
    target: Path
    target_rel: str  # the target relative to base, "" when it is base
    is_dir: bool
    inside_root: bool

    @classmethod
    def make(cls, root: Path, path: Path | None) -> Scope:
        root = Path(os.path.abspath(root))
        target = root if path is None else Path(os.path.abspath(root / path))
        if not target.exists():
            raise SearchError(f"The path {path} does not exist (searched relative to {root}).")
        is_dir = target.is_dir()
        try:
            rel = target.relative_to(root).as_posix()
            base, inside = root, True
        except ValueError:
            base, inside = (target if is_dir else target.parent), False
            rel = "" if is_dir else target.name
        return cls(base, target, "" if rel == "." else rel, is_dir, inside)

    @property
    def display_target(self) -> str:
        return self.display(self.target_rel) if self.target_rel else str(self.base)

    def display(self, rel: str) -> str:
        return rel if self.inside_root else str(self.base / rel)

    def absolute(self, rel: str) -> Path:
        return self.base / rel

    def relative_to_target(self, rel: str) -> str:
        """`rel` (relative to base) relative to the search directory."""
        if self.is_dir and self.target_rel and rel.startswith(self.target_rel + "/"):
            return rel[len(self.target_rel) + 1 :]
        return rel
