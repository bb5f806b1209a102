"""What the tests of a session's shared network (`tests/unit/sandbox/test_network*.py`) run inside it: a tiny TCP
server and client, a command through the launcher (as the editor's terminal runs it), and process helpers."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path

import anyio

from coder_agent.process import PipedLeader
from coder_agent.sandbox.command import CommandSandbox
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
