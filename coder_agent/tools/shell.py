"""Run a shell command for the model: in the editor's terminal (`terminal/*`) when it has one, so the user
watches it live, otherwise as a local subprocess.

Both paths bound the time, kill the whole process tree on timeout or cancel, and always clean up: a
client terminal is always released (after it was embedded in the tool call), a local process group is
always killed. Output for the model is capped, cut in the middle so the start and the end survive.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import anyio

from coder_agent.process import signal_group, spawn_group, stop_group
from coder_agent.secrets import child_environ, editor_terminal_env
from coder_agent.session.bridge import ClientBridge

OUTPUT_BYTE_LIMIT = 1_000_000
LOCAL_HEAD_BYTES = 200_000
LOCAL_TAIL_BYTES = 800_000
CLEANUP_TIMEOUT = 5.0
KILL_GRACE = 2.0
DRAIN_GRACE = 0.5
COMMAND_ENV = {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"}


@dataclass(frozen=True)
class CommandResult:
    output: str
    exit_code: int | None
    signal: str | None
    timed_out: bool
    truncated: bool


def shell_argv(command: str) -> tuple[str, list[str]]:
    """The shell and its arguments for a command line."""
    shell = shutil.which("bash") or "/bin/sh"
    return shell, ["-c", command]


async def run_in_terminal(
    client: ClientBridge,
    command: str,
    cwd: Path,
    timeout: float,
    on_terminal: Callable[[str], Awaitable[None]],
) -> CommandResult:
    """Run in the client's terminal: create, show, wait (bounded), kill if needed, read, release."""
    shell, args = shell_argv(command)
    terminal_id = await client.create_terminal(
        shell, args, cwd=str(cwd), env={**editor_terminal_env(), **COMMAND_ENV}, output_byte_limit=OUTPUT_BYTE_LIMIT
    )
    exited = False
    try:
        await on_terminal(terminal_id)
        timed_out = False
        with anyio.move_on_after(timeout) as waiting:
            status = await client.wait_for_terminal_exit(terminal_id, timeout=timeout + CLEANUP_TIMEOUT)
            exited = True
        if waiting.cancelled_caught:
            timed_out = True
            await client.kill_terminal(terminal_id)
            exited = True
        output = await client.terminal_output(terminal_id)
        final = output.exit_status if timed_out or output.exit_status else status
        return CommandResult(
            output=output.output,
            exit_code=final.exit_code if final else None,
            signal=final.signal if final else None,
            timed_out=timed_out,
            truncated=output.truncated,
        )
    finally:
        with anyio.CancelScope(shield=True), anyio.move_on_after(CLEANUP_TIMEOUT):
            if not exited:
                await _quietly(client.kill_terminal(terminal_id))
            await _quietly(client.release_terminal(terminal_id))


async def _quietly(call: Awaitable[None]) -> None:
    with contextlib.suppress(Exception):  # the terminal may already be gone; cleanup is best effort
        await call


async def run_locally(command: str, cwd: Path, timeout: float) -> CommandResult:
    """Run as a local subprocess in its own process group; the group is killed when the call ends."""
    shell, args = shell_argv(command)
    env = {**child_environ(), **COMMAND_ENV}
    process = await spawn_group(
        [shell, *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    head = bytearray()
    tail: list[bytes] = []
    tail_size = 0
    dropped = 0
    timed_out = False
    drained = anyio.Event()

    async def collect() -> None:
        """Keep the first and the last part of the output, like the model's view of it."""
        nonlocal tail_size, dropped
        assert process.stdout is not None
        async for chunk in process.stdout:
            room = LOCAL_HEAD_BYTES - len(head)
            if room > 0:
                head.extend(chunk[:room])
                chunk = chunk[room:]
            if chunk:
                tail.append(chunk)
                tail_size += len(chunk)
                while tail_size > LOCAL_TAIL_BYTES and len(tail) > 1:
                    tail_size -= len(first := tail.pop(0))
                    dropped += len(first)
        drained.set()

    try:
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(collect)
            with anyio.move_on_after(timeout) as waiting:
                await process.wait()
            if waiting.cancelled_caught:
                timed_out = True
                signal_group(process, signal.SIGKILL)
            # Read what is left, but do not wait on background children that keep the pipe open.
            with anyio.move_on_after(DRAIN_GRACE):
                await drained.wait()
            task_group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await stop_group(process, grace=KILL_GRACE)
    code = process.returncode
    signal_name = signal.Signals(-code).name if code is not None and code < 0 else None
    gap = f"\n[… {dropped} bytes of output dropped …]\n".encode() if dropped else b""
    return CommandResult(
        output=(bytes(head) + gap + b"".join(tail)).decode("utf-8", errors="replace"),
        exit_code=None if signal_name else code,
        signal=signal_name,
        timed_out=timed_out,
        truncated=bool(dropped),
    )
