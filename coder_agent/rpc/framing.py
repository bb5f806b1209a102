"""Split a byte stream into newline-delimited frames, with a bound on a frame's size."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

import anyio

MAX_FRAME_BYTES = 64 * 1024 * 1024


class ByteSource(Protocol):
    """Where frames come from: an anyio byte stream, or a memory stream of bytes in tests."""

    async def receive(self) -> bytes: ...


class ByteSink(Protocol):
    """Where frames go."""

    async def send(self, item: bytes, /) -> None: ...


class FrameTooLarge(Exception):
    """A frame grew past the size limit; the rest of it, up to the next newline, was skipped."""


async def read_frames(stream: ByteSource, max_bytes: int = MAX_FRAME_BYTES) -> AsyncIterator[bytes | FrameTooLarge]:
    """Yield each non-blank line (without its newline) until EOF; an oversized line yields FrameTooLarge."""
    buffer = bytearray()
    skipping = False
    while True:
        try:
            chunk = await stream.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            if buffer.strip() and not skipping:
                yield bytes(buffer)
            return
        start = 0
        while True:
            newline = chunk.find(b"\n", start)
            if newline < 0:
                if not skipping:
                    buffer += chunk[start:]
                    if len(buffer) > max_bytes:
                        buffer.clear()
                        skipping = True
                break
            if skipping:
                skipping = False
                yield FrameTooLarge()
            else:
                buffer += chunk[start:newline]
                if len(buffer) > max_bytes:
                    yield FrameTooLarge()
                elif buffer.strip():
                    yield bytes(buffer)
            buffer.clear()
            start = newline + 1
