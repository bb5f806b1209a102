"""Reading what a person types at a question of a run: a whole line, with keys typed before it thrown away."""

from __future__ import annotations

import contextlib
import os

import anyio


async def read_line(fd: int) -> str | None:
    """One line typed on the terminal (the terminal hands it over whole); None at the end of input."""
    while True:
        await anyio.wait_readable(fd)
        try:
            data = os.read(fd, 4096)
        except BlockingIOError:
            continue
        return data.decode("utf-8", errors="replace") if data else None


def discard_typed_ahead(fd: int) -> None:
    try:
        import termios
    except ImportError:
        return
    with contextlib.suppress(OSError, termios.error):  # not a terminal: nothing was typed ahead
        termios.tcflush(fd, termios.TCIFLUSH)
