"""The process's real stdin/stdout as anyio byte streams, with stdout reserved for protocol frames.

`claim_stdio()` runs once at startup, before anything else can print (`reserve_stdout()` is its first half,
which `coder-agent run` uses alone to keep stdout for its output format):
- the real stdout pipe is moved to a private file descriptor that only the protocol writer uses;
- file descriptor 1 and `sys.stdout` are pointed at stderr, so a stray `print()`, a library banner or a
  child process that inherits fd 1 writes to stderr and can never corrupt the JSON-RPC stream;
- stdin is moved to a private descriptor too and fd 0 is pointed at /dev/null, so child processes never
  read protocol bytes.

Reading and writing use non-blocking descriptors and the event loop's readiness notifications, so a turn
that streams thousands of chunks costs no thread hops.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

_READ_SIZE = 1 << 16


@dataclass(frozen=True)
class ProtocolFds:
    """The private descriptors that carry the protocol."""

    read_fd: int
    write_fd: int


def reserve_stdout() -> int:
    """Keep the real stdout for one writer: return a private descriptor for it, and send fd 1 to stderr."""
    sys.stdout.flush()
    private = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    os.set_inheritable(private, False)
    return private


def claim_stdio() -> ProtocolFds:
    """Take stdin/stdout for the protocol and send everything else that writes to fd 1 to stderr."""
    write_fd = reserve_stdout()
    read_fd = os.dup(0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    for fd in (read_fd, write_fd):
        os.set_inheritable(fd, False)
        os.set_blocking(fd, False)
    return ProtocolFds(read_fd, write_fd)


class FdReceiveStream(ByteReceiveStream):
    """Bytes from a non-blocking pipe descriptor; `receive()` raises `anyio.EndOfStream` at EOF."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._closed = False

    async def receive(self, max_bytes: int = _READ_SIZE) -> bytes:
        while True:
            if self._closed:
                raise anyio.ClosedResourceError
            try:
                data = os.read(self._fd, max_bytes)
            except BlockingIOError:
                await anyio.wait_readable(self._fd)
                continue
            if not data:
                raise anyio.EndOfStream
            return data

    async def aclose(self) -> None:
        self._closed = True


class FdSendStream(ByteSendStream):
    """Bytes to a non-blocking pipe descriptor; a closed reader raises `anyio.BrokenResourceError`."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def send(self, item: bytes) -> None:
        view = memoryview(item)
        while view:
            try:
                written = os.write(self._fd, view)
            except BlockingIOError:
                await anyio.wait_writable(self._fd)
                continue
            except (BrokenPipeError, ConnectionResetError) as exc:
                raise anyio.BrokenResourceError from exc
            view = view[written:]

    async def aclose(self) -> None:
        pass
