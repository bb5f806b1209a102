"""Copy-on-write copies of a folder, for a child whose session's folder is not a git repository (`cp -a
--reflink=auto`: each file is cloned where the file system can, copied where it cannot), and what changed in one.

A copy holds regular files, folders and symlinks (as links; special files are left out), with their modes and
modification times. What it costs is measured first: over the size cap nothing is copied (`TooBig`, saying how big
the folder is and which setting raises the cap). `changes` compares the child's copy with a second, untouched copy
(the base): files of another size or time are compared byte for byte. New files in the caches tools leave behind
(`__pycache__`, `node_modules`, …) are not changes.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path

from coder_agent import nofollow

FICLONE = 0x40049409
"""Linux's ioctl that makes a file share another's blocks (btrfs, XFS, bcachefs, overlay on them)."""
GENERATED = frozenset(
    {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".tox", ".nox", "node_modules", ".venv", ".cache"}
)
"""Folders whose new files are what tools leave behind, not changes."""
SKIPPED = frozenset({".git", ".hg", ".svn"})
"""Folders neither copied nor compared: a version control's own (the copy is made where git is missing)."""


class TooBig(Exception):
    """The folder is over the cap; the message says how big it is."""


@dataclass
class Copied:
    """What a copy took: files and bytes, and how many files were cloned rather than copied."""

    files: int = 0
    size: int = 0
    cloned: int = 0
    left_out: list[str] = field(default_factory=list)
    """Special files (sockets, pipes, devices), relative paths."""

    @property
    def how(self) -> str:
        """In words: "cloned (copy-on-write)", "copied", or both."""
        if self.files and self.cloned == self.files:
            return "cloned (copy-on-write)"
        if self.cloned:
            return f"cloned where it could ({self.cloned} of {self.files} files), copied elsewhere"
        return "copied (this file system makes no copy-on-write clones)"


def measure(source: Path, cap: int) -> Copied:
    """Files and bytes under `source`; TooBig as soon as they pass `cap` bytes."""
    seen = Copied()
    for folder, folders, files in os.walk(source):
        for name in files:
            with contextlib.suppress(OSError):
                info = os.lstat(os.path.join(folder, name))
                if stat.S_ISREG(info.st_mode):
                    seen.files += 1
                    seen.size += info.st_size
        if seen.size > cap:
            raise TooBig(f"{source} holds more than {cap >> 20} MiB")
        folders[:] = [d for d in folders if d not in SKIPPED]
    return seen


def copy_tree(source: Path, target: Path) -> Copied:
    """Copy `source` to `target` (which must not exist), cloning files where the file system can."""
    done = Copied()
    clone = sys.platform.startswith("linux")
    for folder, folders, files in os.walk(source):
        relative = os.path.relpath(folder, source)
        into = target if relative == "." else target / relative
        into.mkdir(mode=0o700)
        for name in [*files, *(d for d in folders if os.path.islink(os.path.join(folder, d)))]:
            src, dst = os.path.join(folder, name), into / name
            info = os.lstat(src)
            if stat.S_ISLNK(info.st_mode):
                os.symlink(os.readlink(src), dst)
            elif stat.S_ISREG(info.st_mode):
                cloned = _clone(src, dst) if clone else False
                clone = clone and cloned is not None
                if not cloned:
                    shutil.copyfile(src, dst, follow_symlinks=False)
                shutil.copystat(src, dst, follow_symlinks=False)
                done.files += 1
                done.size += info.st_size
                done.cloned += bool(cloned)
            else:
                done.left_out.append(os.path.join(relative, name) if relative != "." else name)
        folders[:] = [d for d in folders if d not in SKIPPED and not os.path.islink(os.path.join(folder, d))]
        shutil.copystat(folder, into, follow_symlinks=False)
    return done


def _clone(src: str, dst: Path) -> bool | None:
    """Clone `src` into a new `dst`: True if it was, False if this file could not be, None if the file system makes
    no clones (no use trying again)."""
    import fcntl

    with open(src, "rb") as source, open(dst, "wb") as target:
        try:
            fcntl.ioctl(target.fileno(), FICLONE, source.fileno())
        except OSError as exc:
            if exc.errno in (errno.EOPNOTSUPP, errno.ENOTTY, errno.EXDEV, errno.ENOSYS, errno.EINVAL):
                return None
            return False
    return True


def changes(base: Path, work: Path) -> list[tuple[str, bool, bool]]:
    """What differs between the untouched copy `base` and the child's `work`: (relative path, in base, in work)
    for each file added, changed or deleted (a symlink counts as a file: its target is its content)."""
    before = _listing(base)
    after = _listing(work)
    found: list[tuple[str, bool, bool]] = []
    for path, info in after.items():
        old = before.get(path)
        if old is None:
            if not GENERATED.intersection(path.split("/")[:-1]):
                found.append((path, False, True))
        elif _differ(base / path, old, work / path, info):
            found.append((path, True, True))
    found += [(path, True, False) for path in before if path not in after]
    return sorted(found)


def _listing(root: Path) -> dict[str, os.stat_result]:
    """Every file and symlink under `root` (symlinks not followed), by POSIX relative path."""
    found: dict[str, os.stat_result] = {}
    for folder, folders, files in os.walk(root):
        for name in [*files, *(d for d in folders if os.path.islink(os.path.join(folder, d)))]:
            path = os.path.join(folder, name)
            with contextlib.suppress(OSError):
                info = os.lstat(path)
                if stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode):
                    found[Path(os.path.relpath(path, root)).as_posix()] = info
        folders[:] = [d for d in folders if d not in SKIPPED and not os.path.islink(os.path.join(folder, d))]
    return found


def _differ(old_path: Path, old: os.stat_result, new_path: Path, new: os.stat_result) -> bool:
    if stat.S_IFMT(old.st_mode) != stat.S_IFMT(new.st_mode):
        return True
    if stat.S_ISLNK(old.st_mode):
        return os.readlink(old_path) != os.readlink(new_path)
    if old.st_size != new.st_size:
        return True
    if old.st_mtime_ns == new.st_mtime_ns or not stat.S_ISREG(old.st_mode):  # a named pipe or device: not read
        return False
    try:
        with (
            nofollow.open_file(nofollow.leaf(old_path)) as first,
            nofollow.open_file(nofollow.leaf(new_path)) as second,
        ):
            while True:
                one, two = first.read(1 << 20), second.read(1 << 20)
                if one != two:
                    return True
                if not one:
                    return False
    except OSError:  # swapped since it was listed: the read of its change says what it is
        return True
