"""Files reached along a checked path without following any symlink, so a swap since the check cannot redirect.

The permission layer resolves a path to its real place (no symlink left in it) and checks that place. A
command running in the background may then replace a folder on the way with a symlink to somewhere else.
`open_folder` walks from `/` one name at a time with `O_NOFOLLOW`, so it reaches the checked folder or fails
(`ELOOP`, `ENOTDIR`: `Swapped`); `read_bytes`, `read_window` and `write_atomic` act on a file in it by name,
never through a symlink (a file swapped for a symlink is read as an error, and replaced rather than followed
when written). Where `openat` is missing (Windows) the readers fall back to plain paths, and writers use
`atomic.write_atomic` instead (`SUPPORTED`).

`read_confined` is how the agent reads a file of the workspace on its own (AGENTS.md, a project's command or skill,
its config), as a tool would read it: resolved, held inside the folders it must lie in, refused where the caller's
`Refuse` says (a path the sandbox keeps out, a `read:` deny rule), then read along the checked place. A refused
file is `Refused`, never followed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

Refuse = Callable[[Path], str | None]
"""Why the agent must not read the file at this real path on its own (None: it may)."""

SUPPORTED = os.open in os.supports_dir_fd and hasattr(os, "O_NOFOLLOW")
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_SWAPPED = {errno.ELOOP, errno.ENOTDIR, getattr(errno, "EMLINK", errno.ELOOP)}


class Swapped(OSError):
    """A folder or the file on the checked path is now a symlink (or not a folder): nothing was done."""


class Refused(ValueError):
    """A file the agent does not read on its own; the message says why, in words the user can read."""


@contextlib.contextmanager
def open_folder(real: Path, *, create: bool = False) -> Iterator[int]:
    """A descriptor of the folder `real` (absolute, symlinks already resolved), reached without following any;
    `create` makes missing folders. Swapped if a name on the way is a symlink now."""
    fd = os.open("/", _DIR_FLAGS)
    try:
        for name in real.parts[1:]:
            try:
                child = _open(name, _DIR_FLAGS, fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, dir_fd=fd)
                child = _open(name, _DIR_FLAGS, fd)
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def _open(name: str, flags: int, folder: int, mode: int = 0o777) -> int:
    try:
        return os.open(name, flags, mode, dir_fd=folder)
    except OSError as exc:
        if exc.errno in _SWAPPED:
            raise Swapped(exc.errno, "a symlink was swapped into the path", name) from None
        raise


def open_file(real: Path) -> BinaryIO:
    """The file `real` opened for reading, reached without following any symlink; a file that is not a regular one (a
    named pipe a command left there, a device) is an error, never waited on (it is opened without blocking)."""
    if not SUPPORTED:
        return real.open("rb")
    with open_folder(real.parent) as folder:
        fd = _open(real.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), folder)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise IsADirectoryError(errno.EISDIR, "not a regular file", str(real))
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def leaf(path: Path) -> Path:
    """`path` with the folders that lead to it resolved and its last part as named: what `open_file` and `read_bytes`
    take for a file that must itself not be a symlink (or a named pipe) though its folder may be reached through
    one."""
    return Path(os.path.realpath(path.parent)) / path.name


def read_bytes(real: Path) -> bytes:
    with open_file(real) as handle:
        return handle.read()


def write_atomic(real: Path, data: bytes) -> None:
    """Replace the file `real` with `data` (a temp file in its folder, fsynced, renamed over it), its folders
    made when missing; the file keeps its permission bits. A symlink at `real` is replaced, not followed.
    Only where `SUPPORTED` (callers use `atomic.write_atomic` elsewhere)."""
    with open_folder(real.parent, create=True) as folder:
        try:
            found = os.stat(real.name, dir_fd=folder, follow_symlinks=False)
            mode = stat.S_IMODE(found.st_mode) if stat.S_ISREG(found.st_mode) else None
        except FileNotFoundError:
            mode = None
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        temp = f".{real.name}.{secrets.token_hex(6)}.tmp"
        fd = _open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), folder,
                   0o600)  # fmt: skip
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
                os.fchmod(handle.fileno(), mode)
            os.replace(temp, real.name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=folder)
            raise


def unlink(real: Path) -> None:
    """Remove the file `real` (a symlink there is removed itself, never followed), reached along its checked path."""
    if not SUPPORTED:
        real.unlink()
        return
    with open_folder(real.parent) as folder:
        found = os.stat(real.name, dir_fd=folder, follow_symlinks=False)
        if stat.S_ISDIR(found.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", str(real))
        os.unlink(real.name, dir_fd=folder)


def read_confined(path: Path, within: Sequence[Path], *, limit: int, refuse: Refuse | None = None) -> bytes:
    """The bytes of `path` if its real place lies inside one of `within` and `refuse` has nothing against it, read
    along that place without following any symlink (a swap since the check fails: `Swapped`). Refused saying why
    (outside, refused, bigger than `limit` bytes); OSError when it cannot be read."""
    real = Path(os.path.realpath(path))
    if not any(real.is_relative_to(os.path.realpath(folder)) for folder in within):
        raise Refused(f"it leads out of {_folders(within)} (to {real}) through a symlink")
    if not real.parent.is_dir() or not os.path.lexists(real):
        raise FileNotFoundError(errno.ENOENT, "no such file", str(path))
    why = refuse(real) if refuse is not None else None
    if why is not None:
        raise Refused(why)
    with open_file(real) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > limit:
            raise Refused(f"it is {size:,} bytes, more than {limit:,}")
        data = handle.read(limit + 1)
    if len(data) > limit:  # it grew meanwhile
        raise Refused(f"it is more than {limit:,} bytes")
    return data


def _folders(within: Sequence[Path]) -> str:
    return " or ".join(str(folder) for folder in within) or "the workspace"
