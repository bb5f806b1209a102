"""The gitlinks in a git index file: the paths git treats as submodules, and so looks into (reading their config,
running their hooks) when the user runs `git status` or `git commit` in the repository around them.

Read straight from the index's format (versions 2, 3 and 4), without running git: git run on files a command
wrote is what the walls guard against. `gitlinks(index)` gives the paths (relative to the worktree); None when the
file is not an index this reader knows (a split index's shared part, say), which the caller takes as "unknown".
An index without the bytes of a gitlink's mode anywhere is answered without reading its entries, and answers are
kept per file and its size and times (`GitlinkCache`), so a command that does not change the index costs one stat.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

GITLINK_MODE = 0o160000
MODE_BYTES = struct.pack(">I", GITLINK_MODE)
ENTRY_FIXED = 62
"""ctime, mtime (8 each), dev, ino, mode, uid, gid, size (4 each), the object id (20 for SHA-1), flags (2)."""
EXTENDED = 0x4000
MAX_INDEX_BYTES = 128 << 20
"""A bigger index is not read (unknown): a command could write one of any size."""


def gitlinks(index: Path) -> tuple[str, ...] | None:
    """The gitlink paths in an index file (see the module docstring); () if it does not exist."""
    try:
        with open(index, "rb") as handle:
            data = handle.read(MAX_INDEX_BYTES + 1)
    except FileNotFoundError:
        return ()
    except OSError:
        return None
    if len(data) > MAX_INDEX_BYTES:
        return None
    if len(data) < 12 or data[:4] != b"DIRC":
        return None
    version, count = struct.unpack_from(">II", data, 4)
    if version not in (2, 3, 4):
        return None
    if MODE_BYTES not in data:
        return ()
    hash_size = 32 if _sha256(index) else 20
    try:
        return _entries(data, version, count, hash_size)
    except (IndexError, ValueError, struct.error):
        return None


def _entries(data: bytes, version: int, count: int, hash_size: int) -> tuple[str, ...]:
    found: list[str] = []
    position, previous = 12, b""
    fixed = ENTRY_FIXED - 20 + hash_size
    for _ in range(count):
        (mode,) = struct.unpack_from(">I", data, position + 24)
        (flags,) = struct.unpack_from(">H", data, position + fixed - 2)
        start = position + fixed + (2 if version >= 3 and flags & EXTENDED else 0)
        if version == 4:
            strip, start = _varint(data, start)
            end = data.index(b"\0", start)
            name = previous[: len(previous) - strip] + data[start:end]
            position = end + 1
        else:
            end = data.index(b"\0", start)
            name = data[start:end]
            position += (end - position + 8) & ~7  # padded with one to eight NULs to a multiple of eight
        if mode & 0o170000 == GITLINK_MODE:
            found.append(os.fsdecode(name))
        previous = name
    return tuple(found)


def _varint(data: bytes, position: int) -> tuple[int, int]:
    """Git's offset encoding (each continuation adds one before shifting)."""
    byte = data[position]
    position += 1
    value = byte & 0x7F
    while byte & 0x80:
        byte = data[position]
        position += 1
        value = ((value + 1) << 7) | (byte & 0x7F)
    return value, position


def _sha256(index: Path) -> bool:
    """Whether the repository of this index uses SHA-256 (its config names the object format)."""
    try:
        text = (index.parent / "config").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return "sha256" in text.lower()


class GitlinkCache:
    """`gitlinks` answers kept per index file and its size, times and inode."""

    def __init__(self) -> None:
        self._known: dict[Path, tuple[tuple[int, ...], tuple[str, ...] | None]] = {}

    def get(self, index: Path) -> tuple[str, ...] | None:
        try:
            st = os.stat(index)
        except FileNotFoundError:
            return ()
        except OSError:
            return None
        key = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        known = self._known.get(index)
        if known is not None and known[0] == key:
            return known[1]
        answer = gitlinks(index)
        self._known[index] = (key, answer)
        return answer
