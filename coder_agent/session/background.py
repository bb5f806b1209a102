"""A command running in the background (a job): the handle a bridge gives for it (`BackgroundCommand`), the output
it keeps (`OutputBuffer`), how it ended (`JobExit`), and the pipe to its standard input (`InputPipe`).

A bridge starts a background command (`ClientBridge.start_command`) in the editor's terminal, where the user watches
it, or as a local process group; either way the handle is the same. Its owner (`session.jobs.JobTable`) runs it
(`run`: until it ends, its output flowing into the buffer), may ask it to stop (`kill`), and releases it once it has
ended (`release`). The buffer is bounded: it keeps the last `OUTPUT_CHARS_KEPT` characters, and offsets count every
character ever written, so a reader that fell behind learns how much it missed; a command that prints gigabytes
holds no more memory than that.
"""

from __future__ import annotations

import contextlib
import os
from collections import deque
from dataclasses import dataclass
from typing import Protocol

import anyio

from coder_agent.errors import CallFailed

OUTPUT_CHARS_KEPT = 1_000_000
"""Output of one job kept at most (its last characters)."""
_OVERLAP = 2_000
"""How much of what was last seen of an editor's terminal output is searched for in the next one."""


class InputClosed(CallFailed):
    """Input for a job whose standard input is not open (it was not asked for, was closed, or the job ended)."""


@dataclass(frozen=True)
class JobExit:
    """How a background command ended: its exit code or the signal that ended it; `lost` when its end could not
    be observed (the editor's terminal failed or went away), saying why."""

    exit_code: int | None = None
    signal: str | None = None
    lost: str | None = None


@dataclass(frozen=True)
class OutputSlice:
    """Characters `start`..`end` of a job's output; `missed` characters before `start` were no longer kept."""

    text: str
    start: int
    end: int
    missed: int = 0


class OutputBuffer:
    """The last `limit` characters of a job's output, with offsets that count every character ever written."""

    def __init__(self, limit: int = OUTPUT_CHARS_KEPT) -> None:
        self.limit = limit
        self.total = 0
        """Characters written since the job started."""
        self._chunks: deque[str] = deque()
        self._kept = 0
        self._grew = anyio.Event()
        self._mirrored = ""
        """The end of what an editor's terminal last held (`mirror`)."""
        self._mirrored_size = 0

    @property
    def first_kept(self) -> int:
        """The offset of the oldest character still kept."""
        return self.total - self._kept

    def add(self, text: str) -> None:
        """Append output; the oldest is dropped past the limit. Wakes whoever waits for more."""
        if not text:
            return
        if len(text) > self.limit:
            self.total += len(text) - self.limit
            text = text[-self.limit :]
        self._chunks.append(text)
        self._kept += len(text)
        self.total += len(text)
        while self._kept - len(self._chunks[0]) >= self.limit:
            self._kept -= len(self._chunks.popleft())
        grew, self._grew = self._grew, anyio.Event()
        grew.set()

    def read(self, since: int, max_chars: int | None = None) -> OutputSlice:
        """What was written from offset `since` on (from the oldest kept character if it is gone): all of it, or,
        past `max_chars`, its beginning and its end with a marker between (offsets still cover all of it)."""
        since = max(0, min(since, self.total))
        start = max(since, self.first_kept)
        text = self._text_from(start)
        if max_chars is not None and len(text) > max_chars:
            head = max_chars // 5
            tail = max_chars - head
            skipped = len(text) - head - tail
            text = (
                f"{text[:head]}\n[… {skipped:,} characters skipped (offsets {start + head:,} to "
                f"{start + head + skipped:,}); read them with `since` …]\n{text[-tail:]}"
            )
        return OutputSlice(text, start, self.total, start - since)

    def tail(self, chars: int) -> str:
        """The last `chars` characters kept."""
        return self._text_from(max(self.first_kept, self.total - chars))

    async def grown(self, since: int) -> None:
        """Wait until there is output past offset `since`."""
        while self.total <= since:
            await self._grew.wait()

    def mirror(self, text: str, truncated: bool) -> None:
        """Take in the whole output an editor's terminal holds now (`truncated`: it dropped the beginning), adding
        what is new since the last time: what follows the end of what was last seen, found again in it."""
        if not truncated:  # all of it since the start: it only grows
            new = text[self._mirrored_size :]
        elif self._mirrored and (found := text.find(self._mirrored)) >= 0:
            new = text[found + len(self._mirrored) :]  # output that repeats itself may be counted twice
        else:
            new = text  # nothing seen before is there any more: all of it is new
        self._mirrored = text[-_OVERLAP:]
        self._mirrored_size = len(text)
        self.add(new)

    def _text_from(self, offset: int) -> str:
        skip = offset - self.first_kept
        parts: list[str] = []
        for chunk in self._chunks:
            if skip >= len(chunk):
                skip -= len(chunk)
                continue
            parts.append(chunk[skip:])
            skip = 0
        return "".join(parts)


class InputPipe:
    """The write end of a job's standard input (non-blocking; a write waits while the pipe is full)."""

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self._fd: int | None = fd

    @property
    def open(self) -> bool:
        return self._fd is not None

    async def write(self, data: bytes) -> None:
        """Write all of `data`; InputClosed if the input is closed or the job stopped reading for good."""
        view = memoryview(data)
        while view:
            if self._fd is None:
                raise InputClosed("The job's input is closed.")
            try:
                written = os.write(self._fd, view)
            except BlockingIOError:
                await anyio.wait_writable(self._fd)
                continue
            except BrokenPipeError:
                self.close()
                raise InputClosed("The job closed its input (it no longer reads it).") from None
            view = view[written:]

    def close(self) -> None:
        """Close it: the job reads end of file."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            with contextlib.suppress(OSError):
                os.close(fd)


class BackgroundCommand(Protocol):
    """A command a bridge started in the background (see the module docstring)."""

    @property
    def terminal_id(self) -> str | None:
        """The editor terminal the user watches it in; None for a local process."""
        ...

    @property
    def output(self) -> OutputBuffer: ...

    @property
    def input(self) -> InputPipe | None:
        """Its standard input, when it was started with one open."""
        ...

    async def run(self) -> JobExit:
        """Run until the command ends (or `kill` ends it), its output flowing into `output`; how it ended."""
        ...

    async def refresh(self) -> None:
        """Bring `output` up to date with what the editor's terminal holds (nothing to do for a local process)."""
        ...

    def kill(self) -> None:
        """Ask for the command and everything it started to be ended; `run` returns once they are."""
        ...

    async def release(self) -> None:
        """Free what it holds once `run` returned (the editor's terminal, pipes)."""
        ...
