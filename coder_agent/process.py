"""Child processes in their own process group: spawning one, and stopping it with everything it started.

`spawn_group` starts a command as the leader of a new session, so its process group id is its pid and what it
starts (npx → node, `cmd &`) stays in the group. `stop_group` ends the whole group: optionally close its stdin and
give the leader time to exit, then SIGTERM the group, wait, SIGKILL what is left, reap the leader. Local commands
(`tools/shell.py`) and stdio MCP servers (`mcp/stdio.py`) both go through here.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import anyio
from anyio.abc import Process

TERM_GRACE = 2.0
"""After SIGTERM to a group, how long it gets to exit before SIGKILL."""
_POLL = 0.02
_CAN_KILL_GROUPS = hasattr(os, "killpg")


async def spawn_group(
    argv: Sequence[str],
    *,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    stdin: int | None = subprocess.PIPE,
    stdout: int | None = subprocess.PIPE,
    stderr: int | None = subprocess.PIPE,
) -> Process:
    """Start `argv` as the leader of a new process group."""
    return await anyio.open_process(
        list(argv), cwd=cwd, env=env, stdin=stdin, stdout=stdout, stderr=stderr, start_new_session=True
    )


def signal_group(process: Process, sig: int) -> None:
    """Send `sig` to the process's whole group (its pid is the group id: see `spawn_group`)."""
    with contextlib.suppress(OSError):
        if _CAN_KILL_GROUPS:
            os.killpg(process.pid, sig)
        else:  # pragma: no cover - Windows
            process.kill()


async def stop_group(process: Process, *, stdin_grace: float = 0.0, grace: float = TERM_GRACE) -> None:
    """End the group of a process started by `spawn_group`, leaving nothing of it running.

    With `stdin_grace`, first close the leader's stdin and give it that long to exit on its own (a server's polite
    shutdown). Then SIGTERM the group and wait up to `grace` for every member to go; SIGKILL what is left, wait as
    long again; reap the leader. Run it shielded when the caller may be cancelled.
    """
    if stdin_grace > 0 and process.stdin is not None:
        with contextlib.suppress(Exception):
            await process.stdin.aclose()
        with anyio.move_on_after(stdin_grace):
            while process.returncode is None:  # noqa: ASYNC110 - `wait()` would also wait for pipes children hold
                await anyio.sleep(_POLL)
    if _running(process):
        signal_group(process, signal.SIGTERM)
        if not await _ended(process, grace):
            signal_group(process, getattr(signal, "SIGKILL", signal.SIGTERM))
            await _ended(process, grace)
    with anyio.move_on_after(1.0):
        await process.aclose()


def _running(process: Process) -> bool:
    """Whether the leader or anything else in its group still runs (a zombie leader counts until reaped)."""
    return process.returncode is None or _group_alive(process.pid)


def _group_alive(pgid: int) -> bool:
    if not _CAN_KILL_GROUPS:  # pragma: no cover - Windows
        return False
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


async def _ended(process: Process, timeout: float) -> bool:
    """Wait up to `timeout` for the whole group to end; there is nothing to wait on but the process table."""
    with anyio.move_on_after(timeout):
        while _running(process):  # noqa: ASYNC110 - see above
            await anyio.sleep(_POLL)
    return not _running(process)
