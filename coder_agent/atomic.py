"""Atomic file replacement: a crash or a kill at any moment leaves the old content or the new, never a mix."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: Path, data: bytes, *, mode: int | None = None, temp_suffix: str = ".tmp") -> None:
    """Replace `path` with `data`: a temp file in the same folder, flushed, fsynced, renamed over it.

    The file keeps its permission bits; a new one gets `mode`, or the usual 0666 less the umask. The folder
    must exist. Temp files are named `.<name>.<random><temp_suffix>`, so readers can skip them.
    """
    if mode is None:
        try:
            mode = path.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o666 & ~_umask()
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=temp_suffix, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
