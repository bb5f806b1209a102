"""`LocalJob`: a background command as a local process group — started like any local command (in its own group,
announced to the reaper, the model keys left out of its environment, inside the session's sandbox when it has one),
its output read as it comes into a bounded buffer, its standard input a pipe when asked for.

`start_local_job` starts one; the job's owner runs it (`run`) until it ends or is killed. Killing ends the whole
group (SIGTERM, a grace period, SIGKILL), and so does the end of its leader: what it left running in the
background is ended with it, as for any command, also what left the group and its environment (inside the walls a
PID namespace of its own holds it all, outside them a subreaper supervisor: `sandbox/supervisor.py`).
"""

from __future__ import annotations

import codecs
import os
import signal
import subprocess
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import anyio

from coder_agent.process import PipedLeader, spawn_group, stop_group
from coder_agent.sandbox.command import CommandGuard, CommandSandbox
from coder_agent.sandbox.probe import held_together
from coder_agent.secrets import child_environ
from coder_agent.session.background import InputPipe, JobExit, OutputBuffer
from coder_agent.session.bridge import COMMAND_ENV, BridgeError, shell_argv

KILL_GRACE = 2.0
"""After SIGTERM to a job's group, how long it gets before SIGKILL."""
DRAIN_GRACE = 0.5
"""After the leader exits, how long to read what is left in the pipe (children may hold it open)."""


def spawn_failure(cwd: Path, exc: OSError) -> str:
    """Why a command could not start, for the model and the user."""
    if not cwd.is_dir():
        return f"The command could not start: its working directory {cwd} no longer exists."
    return f"The command could not start: {exc.strerror or exc}."


async def start_local_job(
    command: str,
    *,
    cwd: Path,
    sandbox: CommandSandbox | None = None,
    with_input: bool = False,
    folders: Sequence[Path] = (),
) -> LocalJob:
    """Start a shell command line as a background process group (inside `sandbox`'s walls if given; its shell from
    no PATH entry inside `folders` or `cwd`); its standard input a pipe with `with_input`, else /dev/null.
    BridgeError if it could not start."""
    guard = sandbox.guard() if sandbox is not None else None
    env = {**child_environ(), **COMMAND_ENV}
    argv = shell_argv(command, (*folders, cwd))
    read_end, write_end = os.pipe() if with_input else (None, None)
    try:
        if sandbox is not None:
            process: PipedLeader = await sandbox.start(argv, cwd, env, stdin=read_end)
        else:
            process = await spawn_group(
                held_together(argv, agent_is_parent=True),
                cwd=cwd,
                env=env,
                stdin=read_end if read_end is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
    except OSError as exc:
        if write_end is not None:
            os.close(write_end)
        raise BridgeError(spawn_failure(cwd, exc)) from None
    finally:
        if read_end is not None:
            os.close(read_end)
    return LocalJob(process, InputPipe(write_end) if write_end is not None else None, guard)


class LocalJob:
    """A `BackgroundCommand` running as a local process group."""

    terminal_id: str | None = None

    def __init__(self, process: PipedLeader, stdin: InputPipe | None, guard: CommandGuard | None = None) -> None:
        self.process = process
        self.output = OutputBuffer()
        self.input = stdin
        self.guard = guard
        """A sandboxed job's mark and git check, for when it ends (as for any sandboxed command)."""
        self._kill = anyio.Event()

    async def run(self) -> JobExit:
        process = self.process
        drained = anyio.Event()
        decoder = codecs.getincrementaldecoder("utf-8")("replace")

        async def pump() -> None:
            assert process.stdout is not None
            async for chunk in process.stdout:
                self.output.add(decoder.decode(chunk))
            self.output.add(decoder.decode(b"", final=True))
            drained.set()

        try:
            async with anyio.create_task_group() as readers:
                readers.start_soon(pump)
                async with anyio.create_task_group() as race:
                    race.start_soon(_then_cancel, process.wait, race.cancel_scope)
                    race.start_soon(_then_cancel, self._kill.wait, race.cancel_scope)
                if process.returncode is None:  # killed: end the group, then read what it printed last
                    with anyio.CancelScope(shield=True):
                        await stop_group(process, grace=KILL_GRACE)
                with anyio.move_on_after(DRAIN_GRACE):
                    await drained.wait()
                readers.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await stop_group(process, grace=KILL_GRACE)  # what it left behind in its group
                if self.guard is not None:
                    self.output.add(await self.guard.finish())  # git redirects undone
            if self.input is not None:
                self.input.close()
        code = process.returncode
        if code is not None and code < 0:
            return JobExit(signal=signal.Signals(-code).name)
        return JobExit(exit_code=code)

    async def refresh(self) -> None:
        return None

    def kill(self) -> None:
        self._kill.set()

    async def release(self) -> None:
        if self.input is not None:
            self.input.close()


async def _then_cancel(wait: Callable[[], Awaitable[object]], scope: anyio.CancelScope) -> None:
    await wait()
    scope.cancel()
