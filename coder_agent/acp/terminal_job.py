"""`TerminalJob`: a background command in the editor's terminal (`terminal/*`), where the user watches it live.

The terminal is created by `AcpClientBridge.start_command`; the job waits for its exit (`terminal/wait_for_exit`,
with no deadline: a job runs until it ends or is killed), kills it on request (`terminal/kill`), and reads its
output on demand (`terminal/output`: the editor keeps the last `outputByteLimit` bytes, and `OutputBuffer.mirror`
takes in what is new). It is released once it has ended and its last output was read.

ACP gives a terminal no input, so a job that needs its standard input reads it from a FIFO in a private folder:
the terminal runs `sh -c 'exec "$@" <"$0"' FIFO COMMAND...`, whose shell opens the FIFO outside the sandbox's walls
and then becomes the command (the launcher, when there are walls). The agent holds the FIFO open for reading and
writing, so the shell's open never blocks and the command reads end of file only when the agent closes it.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import shutil
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from coder_agent.errors import ClientError
from coder_agent.protocol.schema import TerminalExitStatus, TerminalOutputResponse
from coder_agent.sandbox.command import CommandGuard
from coder_agent.session.background import InputPipe, JobExit, OutputBuffer

CLEANUP_TIMEOUT = 5.0
READ_FROM_FIFO = ["/bin/sh", "-c", 'exec "$@" <"$0"']
"""Prepended to a command line, with the FIFO's path next: the command reads its input from the FIFO."""

TerminalCall = Callable[[str, str, float], Awaitable[Any]]
"""A `terminal/*` request for one terminal: (method, terminal id, timeout) → its result; ClientError."""


def open_input_fifo() -> tuple[Path, Path, InputPipe]:
    """A private folder with a FIFO in it, and the FIFO held open for writing (the command's input)."""
    folder = Path(tempfile.mkdtemp(prefix="coder-agent-job-"))
    fifo = folder / "stdin"
    try:
        os.mkfifo(fifo, 0o600)
        fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    except OSError:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return folder, fifo, InputPipe(fd)


log = logging.getLogger(__name__)


class TerminalJob:
    """A `BackgroundCommand` in an editor terminal."""

    def __init__(
        self,
        call: TerminalCall,
        terminal_id: str,
        stdin: InputPipe | None = None,
        folder: Path | None = None,
        guard: CommandGuard | None = None,
    ) -> None:
        self._call = call
        self.guard = guard
        """A sandboxed job's mark and git check, for when it ends (as for any sandboxed command)."""
        self.terminal_id: str | None = terminal_id
        self.output = OutputBuffer()
        self.input = stdin
        self._folder = folder
        self._kill = anyio.Event()
        self._reading = anyio.Lock()
        self._released = False

    async def run(self) -> JobExit:
        terminal_id = self.terminal_id or ""
        status: TerminalExitStatus | None = None
        try:
            async with anyio.create_task_group() as race:

                async def exited() -> None:
                    nonlocal status
                    waited = await self._call("terminal/wait_for_exit", terminal_id, math.inf)
                    status = TerminalExitStatus.model_validate(waited)
                    race.cancel_scope.cancel()

                async def killed() -> None:
                    await self._kill.wait()
                    race.cancel_scope.cancel()

                race.start_soon(exited)
                race.start_soon(killed)
            if status is None:
                with anyio.CancelScope(shield=True), anyio.move_on_after(CLEANUP_TIMEOUT):
                    await self._call("terminal/kill", terminal_id, CLEANUP_TIMEOUT)
                    waited = await self._call("terminal/wait_for_exit", terminal_id, CLEANUP_TIMEOUT)
                    status = TerminalExitStatus.model_validate(waited)
            with anyio.CancelScope(shield=True), anyio.move_on_after(CLEANUP_TIMEOUT):
                await self.refresh()
        except ClientError as exc:
            return JobExit(lost=f"the editor's terminal failed ({exc.message})")
        finally:
            if self.input is not None:
                self.input.close()
            # a git redirect it made is undone (what it left running ended with it: its PID namespace)
            if self.guard is not None and (note := await self.guard.finish()):
                log.warning("terminal job %s:%s", terminal_id, note)
        if status is None:
            return JobExit(lost="the editor did not say how the terminal ended")
        return JobExit(exit_code=status.exit_code, signal=status.signal)

    async def refresh(self) -> None:
        if self._released:
            return
        async with self._reading:
            result = await self._call("terminal/output", self.terminal_id or "", CLEANUP_TIMEOUT)
            output = TerminalOutputResponse.model_validate(result)
            self.output.mirror(output.output, output.truncated)

    def kill(self) -> None:
        self._kill.set()

    async def release(self) -> None:
        if self.input is not None:
            self.input.close()
        if not self._released:
            self._released = True
            # the terminal may be gone already: releasing it is best effort
            with anyio.CancelScope(shield=True), anyio.move_on_after(CLEANUP_TIMEOUT), contextlib.suppress(Exception):
                await self._call("terminal/release", self.terminal_id or "", CLEANUP_TIMEOUT)
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None
