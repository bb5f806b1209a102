"""Where a path really is: resolved (symlinks, `..`, `~`, non-existent tails) and held against the session's roots.

`resolve(raw, roots)` gives a `Place`: the path a tool acts on, its fully resolved form, and the root that
contains it (None when it is outside every root). Resolution follows the kernel's rules: a `..` after a
symlink climbs from the symlink's target, and a dangling symlink resolves to where it points, so
`link/../../x`, an absolute path and a symlink that leads outside all land outside. A file with more than
one hard link is also somewhere else (`links`), which may be outside. Inside a root the tool
acts on `root / relative`, the checked location spelled under the root's own name (editors know files by
that name); outside it acts on the resolved path itself, which is what the user was shown.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from coder_agent.permissions.shell import CommandLine

MAX_DIRECTORIES = 4
"""`cd`s followed on one line; after more, a relative write may be anywhere."""
UNKNOWN_FOLDER = "<a folder after cd>"
EXPANDS = "<where the shell expands it>"
EXPANDED = re.compile(r"[$`]|(?:^|/)\.[*?\[]")
"""A target the shell expands to where the policy cannot tell: a variable, a substitution, or a glob that can
match `..` (`.*`)."""


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
    links: int = 1
    """Hard links of the file there (more than one: the same file is also elsewhere, maybe outside)."""

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
    links = _hard_links(real)
    for index, root in enumerate(roots):
        real_root = real_path(root)
        if real.is_relative_to(real_root):
            relative = real.relative_to(real_root).as_posix()
            relative = "" if relative == "." else relative
            return Place(root / relative if relative else root, real, root, relative, index == 0, links)
    return Place(real, real, None, "", links=links)


def _hard_links(real: Path) -> int:
    try:
        found = os.stat(real, follow_symlinks=False)
    except (OSError, ValueError):
        return 1
    return found.st_nlink if stat.S_ISREG(found.st_mode) else 1


def command_writes(line: CommandLine, roots: Sequence[Path]) -> tuple[Place, ...]:
    """The files a command line visibly writes or changes, resolved: each relative one against the session
    folder and against every folder its `cd`s may have reached (one it cannot tell is outside, and so is a
    target the shell expands: `$HOME/x`, `$(…)`, `.*`)."""
    bases: list[str] = [""]
    for folder in line.directories[:MAX_DIRECTORIES]:
        if folder is None:
            bases.append(UNKNOWN_FOLDER)
            continue
        absolute_folder = folder.startswith(("/", "~"))
        bases += [folder if absolute_folder or not base else f"{base}/{folder}" for base in bases]
    if len(line.directories) > MAX_DIRECTORIES:
        bases.append(UNKNOWN_FOLDER)
    targets = sorted({t for c in line.commands for t in (*c.writes, *c.touches) if t})
    places: dict[Path, Place] = {}
    for target in targets:
        if EXPANDED.search(target):
            unknown = Path(EXPANDS) / target
            places[unknown] = Place(unknown, unknown, None, "")
            continue
        absolute_target = target.startswith(("/", "~"))
        for base in [""] if absolute_target else dict.fromkeys(bases):
            if base.startswith(UNKNOWN_FOLDER):
                unknown = Path(UNKNOWN_FOLDER) / target
                places[unknown] = Place(unknown, unknown, None, "")
                continue
            place = resolve(f"{base}/{target}" if base else target, roots)
            places.setdefault(place.real, place)
    return tuple(places.values())


def still_there(place: Place) -> bool:
    """Whether `place.path` still resolves to what was checked (nothing swapped in a symlink since)."""
    return real_path(place.path) == place.real
