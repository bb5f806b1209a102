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

import glob
import os
import re
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from coder_agent.permissions.shell import CommandLine

MAX_DIRECTORIES = 4
"""`cd`s followed on one line; after more, a relative write may be anywhere."""
UNKNOWN_FOLDER = "<a folder after cd>"
EXPANDS = "<where the shell expands it>"
EXPANDED = re.compile(r"[$`]|(?:^|/)\.[*?\[]|^~[+-]|^~[0-9]")
"""A target the shell expands to where the policy cannot tell: a variable, a substitution, a glob that can
match `..` (`.*`), or a tilde bash reads as a folder of its own (`~+` is `$PWD`, `~-` `$OLDPWD`, `~1` the folder
stack's; `~+/../x` leaves the workspace)."""
BRACES = re.compile(r"\{[^{}]*(,|\.\.)[^{}]*\}")
"""Brace expansion (`{/etc/x,y}`, `{1..3}`): more than one word."""
MADE_ON_THE_LINE = "<a folder another command of the line makes>"
MAX_GLOB_MATCHES = 1000
HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "-"})


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


def command_writes(
    line: CommandLine, roots: Sequence[Path], environ: Mapping[str, str] | None = None
) -> tuple[Place, ...]:
    """The files a command line visibly writes or changes, resolved: each relative one against the session
    folder and against every folder its `cd`s may have reached. Unknown, and so outside: a `cd` it cannot tell
    (a relative one CDPATH may redirect, when CDPATH is set or the line sets it), a target the shell expands
    (`$HOME/x`, `$(…)`, `.*`, `{a,b}`; a glob is expanded here as bash would), and a folder on the way that does
    not exist yet where another command of the line could make it (`ln -s /etc x && echo > x/f`; a `mkdir` of the
    line is fine)."""
    source = os.environ if environ is None else environ
    cdpath = bool(source.get("CDPATH")) or "CDPATH" in line.source
    bases: list[str] = [""]
    for folder in line.directories[:MAX_DIRECTORIES]:
        if folder is not None and cdpath and not folder.startswith(("/", "~", ".")):
            folder = None
        if folder is not None and EXPANDED.match(folder) and folder.startswith("~"):
            folder = None  # `cd ~-`, `cd ~+/..`
        if folder is None:
            bases.append(UNKNOWN_FOLDER)
            continue
        absolute_folder = folder.startswith(("/", "~"))
        bases += [folder if absolute_folder or not base else f"{base}/{folder}" for base in bases]
    if len(line.directories) > MAX_DIRECTORIES:
        bases.append(UNKNOWN_FOLDER)
    targets = sorted({t for c in line.commands for t in (*c.writes, *c.touches) if t and not _harmless(t)})
    globs = {g for c in line.commands for g in c.globs}
    made = _made_folders(line, bases, roots[0]) if len(line.commands) > 1 else None
    places: dict[Path, Place] = {}

    def unknown(where: str, target: str) -> None:
        path = Path(where) / target.lstrip("/")
        places[path] = Place(path, path, None, "")

    for target in targets:
        if EXPANDED.search(target) or (target in globs and BRACES.search(target)):
            unknown(EXPANDS, target)
            continue
        absolute_target = target.startswith(("/", "~"))
        for base in [""] if absolute_target else dict.fromkeys(bases):
            if base.startswith(UNKNOWN_FOLDER):
                unknown(UNKNOWN_FOLDER, target)
                continue
            joined = f"{base}/{target}" if base else target
            expanded = _expand(joined, roots[0]) if target in globs else [joined]
            if expanded is None:
                unknown(EXPANDS, target)
                continue
            for path in expanded:
                if made is not None and _made_elsewhere(absolute(path, roots[0]), made):
                    unknown(MADE_ON_THE_LINE, target)
                    continue
                place = resolve(path, roots)
                places.setdefault(place.real, place)
    return tuple(places.values())


def _harmless(target: str) -> bool:
    return target in HARMLESS_TARGETS or target.startswith("/dev/fd/")


def _expand(pattern: str, cwd: Path) -> list[str] | None:
    """A glob as bash expands it (no match: the word itself); None when it matches too many to check."""
    expanded = os.path.expanduser(pattern)
    found = sorted(glob.glob(expanded, root_dir=None if os.path.isabs(expanded) else cwd))
    if len(found) > MAX_GLOB_MATCHES:
        return None
    return found or [pattern]


def _made_folders(line: CommandLine, bases: list[str], cwd: Path) -> set[str]:
    """The folders the line's `mkdir`s make (with their parents), as absolute normalised paths."""
    made: set[str] = set()
    for command in line.commands:
        if command.argv[:1] != ("mkdir",):
            continue
        for target in command.touches:
            for base in bases:
                joined = target if target.startswith(("/", "~")) or not base else f"{base}/{target}"
                path = os.path.normpath(absolute(joined, cwd))
                while path not in ("/", "") and path not in made:
                    made.add(path)
                    path = os.path.dirname(path)
    return made


def _made_elsewhere(path: Path, made: set[str]) -> bool:
    """Whether a folder on the way to `path` does not exist yet and no `mkdir` of the line makes it: another
    command of the line would have to make it, and it could make a symlink to anywhere."""
    parts = path.parts  # not normalised: `x/..` climbs from wherever `x` will lead
    for depth in range(2, len(parts)):
        folder = os.path.join(*parts[:depth])
        if not os.path.lexists(folder) and folder not in made:
            return True
    return False


def still_there(place: Place) -> bool:
    """Whether `place.path` still resolves to what was checked (nothing swapped in a symlink since)."""
    return real_path(place.path) == place.real
