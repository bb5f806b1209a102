"""What is piped into `coder-agent run` on stdin: read whole but kept bounded, and never waited on forever.

A file or `/dev/null` on stdin is read at once. A pipe is read only once something is in it: a pipe that stays
open and silent (a CI step or a harness that never closes stdin) is given `wait` seconds for its first byte, then
left alone, so the run cannot hang on it. Once the first byte is there the pipe is read to its end, however
slowly its writer goes (`pytest | coder-agent run "why does this fail?"`). At most `limit` bytes are kept: the
first half and the last half, so a log keeps both its start and the error at its end; the text says how much was
left out between them.
"""

from __future__ import annotations

import io
import os
import select
import stat
from dataclasses import dataclass
from typing import BinaryIO

CHUNK = 65536


@dataclass(frozen=True)
class PipedInput:
    text: str
    """What was read, decoded as UTF-8 (bad bytes replaced); its middle left out when it passed the limit."""
    size: int
    """Bytes that came, all of them."""
    truncated: bool
    waited_out: bool = False
    """Nothing came within the wait, and the pipe was left alone."""

    @property
    def empty(self) -> bool:
        return not self.text.strip()


def read_piped(stdin: BinaryIO, *, wait: float | None, limit: int | None) -> PipedInput:
    """What comes on `stdin` (not a terminal) until its end; see the module's docstring for `wait` (None: as long
    as it takes) and `limit` (None: keep everything)."""
    fd = _fd(stdin)
    if wait is not None and fd is not None and _is_pipe(fd):
        ready, _, _ = select.select([fd], [], [], wait)
        if not ready:
            return PipedInput("", 0, truncated=False, waited_out=True)
    half = limit // 2 if limit is not None else None
    head, tail = bytearray(), bytearray()
    size = 0
    while chunk := _read(stdin):
        size += len(chunk)
        if half is None:
            head += chunk
            continue
        room = half - len(head)
        if room > 0:
            head += chunk[:room]
            chunk = chunk[room:]
        tail += chunk
        if len(tail) > half:
            del tail[: len(tail) - half]
    kept = len(head) + len(tail)
    if kept == size:
        return PipedInput(_text(head + tail), size, truncated=False)
    left_out = f"\n[… {size - kept:,} bytes of the input left out here …]\n"
    return PipedInput(_text(head) + left_out + _text(tail), size, truncated=True)


def _fd(stdin: BinaryIO) -> int | None:
    try:
        return stdin.fileno()
    except (OSError, ValueError, io.UnsupportedOperation):  # an in-memory stream
        return None


def _is_pipe(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _read(stdin: BinaryIO) -> bytes:
    read1 = getattr(stdin, "read1", None)  # whatever is there, without waiting for a whole chunk
    return bytes(read1(CHUNK) if read1 is not None else stdin.read(CHUNK))


def _text(data: bytes | bytearray) -> str:
    return bytes(data).decode("utf-8", errors="replace")
