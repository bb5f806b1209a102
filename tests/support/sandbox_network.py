"""What the tests of a session's shared network (`tests/unit/sandbox/test_network*.py`) run inside it: a tiny TCP
server and client, a command through the launcher (as the editor's terminal runs it), a network held as nobody, and
process helpers."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import anyio

from coder_agent.process import PipedLeader
from coder_agent.sandbox import probe
from coder_agent.sandbox.command import CommandSandbox
from coder_agent.sandbox.network import _entry_of
from coder_agent.sandbox.spec import SPEC_VARIABLE, encode
from coder_agent.secrets import child_environ

WAIT = 30.0
NOBODY = 65534
AS_NOBODY = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]
SERVER = (
    "import socket\n"
    "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
    "print(s.getsockname()[1], flush=True)\n"
    "while True:\n"
    "    c = s.accept()[0]; c.sendall(b'pong'); c.close()\n"
)
"""Listens on a free port of 127.0.0.1, prints it, answers every connection with `pong`."""
CLIENT = (
    "import socket, sys\n"
    "try:\n"
    "    print(socket.create_connection(('127.0.0.1', int(sys.argv[1])), 5).recv(4).decode())\n"
    "except OSError as exc:\n"
    "    print('refused:', exc.strerror)\n"
)
"""Connects to the port given and prints what it got (`pong`), or `refused: WHY`."""


async def through_launcher(sandbox: CommandSandbox, work: Path, argv: list[str]) -> tuple[int, str]:
    """As the editor's terminal runs a command: the launcher, with the walls in its environment."""
    command, env = await sandbox.launch(argv)
    done = await anyio.run_process(
        command, env={**child_environ(), **env}, cwd=work, check=False, stderr=subprocess.STDOUT
    )
    return done.returncode, done.stdout.decode()


async def first_line(process: PipedLeader) -> str:
    assert process.stdout is not None
    said = b""
    with anyio.fail_after(WAIT):
        async for chunk in process.stdout:
            said += chunk
            if b"\n" in said:
                break
    return said.decode().strip()


async def stopped(process: PipedLeader) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    with anyio.fail_after(WAIT):
        await process.wait()


@dataclass(frozen=True)
class NobodysNetwork:
    """A session's network held as `nobody`, with walls to join it from `folder` (open to nobody)."""

    folder: Path
    holder: int
    entry: str
    env: dict[str, str]
    """The environment that runs a launcher (as nobody: `AS_NOBODY`) inside these walls."""


@contextlib.asynccontextmanager
async def held_as_nobody() -> AsyncIterator[NobodysNetwork]:
    """The agent as an ordinary user would run it: the holder started as nobody (so it makes a user namespace too),
    in a temporary folder open to nobody (pytest's own is not); the holder is closed as the agent closes it."""
    with tempfile.TemporaryDirectory(prefix="coder-agent-test-") as folder:
        os.chmod(folder, 0o777)
        holder = await anyio.open_process([*AS_NOBODY, *probe.launcher_argv(), "--network"], stderr=None)
        try:
            assert holder.stdout is not None
            with anyio.fail_after(WAIT):
                word, cookie = (await holder.stdout.receive()).decode().split()
            assert word == "ready"
            entry = _entry_of(holder.pid, int(cookie))
            walls = {"write": [folder], "network": [entry], "max_processes": ["64"], "max_file_bytes": ["1000000"]}
            yield NobodysNetwork(Path(folder), holder.pid, entry, {**child_environ(), SPEC_VARIABLE: encode(walls)})
        finally:
            assert holder.stdin is not None
            await holder.stdin.aclose()
            with anyio.fail_after(WAIT):
                assert await holder.wait() == 0
            await holder.aclose()
