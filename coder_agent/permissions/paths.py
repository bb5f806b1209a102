"""Where a path really is: resolved (symlinks, `..`, `~`, non-existent tails) and held against the session's roots.

`resolve(raw, roots)` gives a `Place`: the path a tool acts on, its fully resolved form, and the root that
contains it (None when it is outside every root). Resolution follows the kernel's rules: a `..` after a
symlink climbs from the symlink's target, and a dangling symlink resolves to where it points, so
`link/../../x`, an absolute path and a symlink that leads outside all land outside. Inside a root the tool
acts on `root / relative`, the checked location spelled under the root's own name (editors know files by
that name); outside it acts on the resolved path itself, which is what the user was shown.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Place:
    """A resolved path and where it lies."""

    path: Path
    """What the tool acts on."""
    real: Path
    """The same location with every symlink resolved."""
    root: Path | None
    """The session root (as the editor named it) that contains `real`; None outside every root."""
    relative: str
    """`real` relative to that root, in POSIX form ("" for the root itself, "" outside)."""
    in_cwd: bool = False
    """Whether the containing root is the session's working directory (the first root)."""

    @property
    def inside(self) -> bool:
        return self.root is not None


def real_path(path: Path) -> Path:
    """`path` with every symlink and `..` resolved, as the kernel would; the missing tail is kept as written."""
    return Path(os.path.realpath(path))


def absolute(raw: str, cwd: Path) -> Path:
    """`raw` made absolute against `cwd`, `~` expanded; nothing folded yet (folding `..` before resolving
    symlinks would change where the path points)."""
    path = Path(os.path.expanduser(raw))
    return path if path.is_absolute() else cwd / path


def resolve(raw: str | Path, roots: Sequence[Path]) -> Place:
    """Where `raw` (absolute, or relative to the first root) really lies among `roots` (cwd first)."""
    path = absolute(str(raw), roots[0])
    real = real_path(path)
    for index, root in enumerate(roots):
        real_root = real_path(root)
        if real.is_relative_to(real_root):
            relative = real.relative_to(real_root).as_posix()
            relative = "" if relative == "." else relative
            return Place(root / relative if relative else root, real, root, relative, in_cwd=index == 0)
    return Place(real, real, None, "")


def still_there(place: Place) -> bool:
    """Whether `place.path` still resolves to what was checked (nothing swapped in a symlink since)."""
    return real_path(place.path) == place.real
