"""The stdio transport for MCP servers: spawn the server in its own process group (`coder_agent.process`), bridge
its stdout and stdin to the MCP session's message streams, copy its stderr to the log, and stop it for good.

Ours rather than `mcp.client.stdio.stdio_client`, because the hub needs what that one hides: the process (exit code,
pid) and the server's stderr (its last lines explain most failures). The server's stderr is copied line by line to
`log_line` (never to stdout: stdout is the ACP channel), and its last lines kept in `ServerProcess`. Its environment
is ours with the ACP `env` entries merged over it, so PATH, HOME and the like work as they do in a shell; model API
keys are left out (`secrets.child_environ`).

Closing: stdin closed, `CLOSE_GRACE` to exit, SIGTERM to the process group, as long again, SIGKILL; a server that
never finished starting gets 0.1 s. So no orphans, even of a server that ignores stdin close or starts children;
and if the agent itself is killed, the reaper ends the group (see `coder_agent.process`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from coder_agent.mcp.types import CommandWrapper, McpError, McpServerSpec
from coder_agent.process import find_program, spawn_group, stop_group
from coder_agent.secrets import child_environ

log = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 128 * 1024 * 1024
"""One JSON-RPC line from a stdio server beyond which the connection is dropped."""
STDERR_TAIL_LINES = 12
CLOSE_GRACE = 1.0
"""After closing a stdio server's stdin, how long it may take to exit before SIGTERM; as long again before SIGKILL."""


@dataclass(eq=False)
class ServerProcess:
    """What the hub knows of a stdio server's process."""

    pid: int | None = None
    returncode: int | None = None
    stderr: deque[str] = field(default_factory=lambda: deque(maxlen=STDERR_TAIL_LINES))
    closing: bool = False

    def explain(self) -> str:
        """`exited with code 3; last stderr lines: …`, or '' when there is nothing to say."""
        parts = []
        if self.returncode is not None:
            if self.returncode < 0:
                with contextlib.suppress(ValueError):
                    parts.append(f"the process was killed by {signal.Signals(-self.returncode).name}")
            else:
                parts.append(f"the process exited with code {self.returncode}")
        text = ", ".join(parts)
        if self.stderr:
            text += ("; " if text else "") + "last stderr lines:\n  " + "\n  ".join(self.stderr)
        return text


def resolve_command(command: str | None, env: dict[str, str], outside: Sequence[Path] = ()) -> str:
    """The program a server's command names: a path as given; a name from PATH, but never from a folder in
    `outside` (the session's folders, where commands may write, for a server that runs outside the walls: a
    planted `npx` there would run with the user's rights at the next session)."""
    if not command:
        raise McpError("no command given")
    if os.sep in command or (os.altsep and os.altsep in command):
        if not Path(command).exists():
            raise McpError(f"command not found: {command} (no such file)")
        return command
    path = env.get("PATH", os.defpath)
    found = find_program(command, outside=outside, path=path)
    if found is None:
        inside = shutil.which(command, path=path)
        if inside is not None:
            raise McpError(
                f"{command!r} is found only at {inside}, inside the session's folders, where commands may write: "
                "give its full path as the server's command to run it from there"
            )
        raise McpError(f"command not found: {command!r} is not on PATH")
    return found


@asynccontextmanager
async def stdio_transport(
    spec: McpServerSpec,
    info: ServerProcess,
    *,
    name: str,
    log_line: Callable[[str, str], None],
    started: anyio.Event,
    lost: anyio.Event,
    wrap: CommandWrapper | None = None,
    folders: Sequence[Path] = (),
) -> AsyncIterator[tuple[Any, Any]]:
    """Spawn the server in its own process group; bridge its stdout/stdin to the session's streams.

    `info` learns the pid, the exit code and the last stderr lines; `lost` is set when the server's stdout closes
    before we close it; `started` tells whether the server finished starting (it then gets a grace period to exit).
    """
    from mcp.shared.message import SessionMessage

    env = {**child_environ(), **spec.env}
    # inside the walls a planted program is held as the server is; outside them it is never taken from `folders`
    argv = [resolve_command(spec.command, env, () if wrap is not None else folders), *spec.args]
    if wrap is not None:
        argv, extra = await wrap(argv)
        env = {**env, **extra}
    pipe_stderr = os.name == "posix"
    read_fd, write_fd = os.pipe() if pipe_stderr else (-1, -1)
    try:
        process = await spawn_group(argv, env=env, cwd=spec.cwd, stderr=write_fd if pipe_stderr else None)
    except OSError as exc:
        if pipe_stderr:
            os.close(read_fd)
        raise McpError(f"could not start {spec.command!r}: {exc.strerror or exc}") from None
    finally:
        if pipe_stderr:
            os.close(write_fd)
    # Spawned: no await until the task group is entered, or a cancellation here would leak the process.
    info.pid = process.pid
    read_in, read_out = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_in, write_out = anyio.create_memory_object_stream[SessionMessage](0)
    writer_done = anyio.Event()
    stderr_done = anyio.Event()

    def on_stdout_closed() -> None:
        if not info.closing:
            lost.set()

    async with anyio.create_task_group() as group:
        if pipe_stderr:
            group.start_soon(_pump_stderr, read_fd, info, lambda line: log_line(name, line), stderr_done)
        else:
            stderr_done.set()
        group.start_soon(_pump_stdout, process, read_in, name, on_stdout_closed)
        group.start_soon(_pump_stdin, process, write_out, read_in, writer_done)
        try:
            yield read_out, write_in
        finally:
            info.closing = True
            # A server that never finished starting (timed out, or the connect was cancelled) gets no grace.
            grace = CLOSE_GRACE if started.is_set() else 0.1
            with anyio.CancelScope(shield=True):
                write_in.close()
                with anyio.move_on_after(0.5):
                    await writer_done.wait()
                await stop_group(process, stdin_grace=grace, grace=CLOSE_GRACE)
                info.returncode = process.returncode
                with anyio.move_on_after(0.5):  # the last lines often say why it died
                    await stderr_done.wait()
                for stream in (read_in, read_out, write_out):
                    stream.close()
            group.cancel_scope.cancel()


async def _pump_stdout(
    process: Process, sink: MemoryObjectSendStream[Any], name: str, on_closed: Callable[[], None]
) -> None:
    from mcp.shared.message import SessionMessage
    from mcp_types import jsonrpc_message_adapter

    assert process.stdout is not None
    buffer = bytearray()
    try:
        async with sink:
            async for chunk in process.stdout:
                scan = len(buffer)  # the bytes before hold no newline: do not search them again
                buffer += chunk
                start = 0
                while (end := buffer.find(b"\n", scan)) >= 0:
                    line = bytes(buffer[start:end]).strip()
                    start = scan = end + 1
                    if not line:
                        continue
                    try:
                        message = jsonrpc_message_adapter.validate_json(line, by_name=False)
                    except ValueError:
                        log.warning("MCP server %r wrote a non-protocol line to stdout: %.200r", name, line)
                        continue
                    await sink.send(SessionMessage(message))
                del buffer[:start]
                if len(buffer) > MAX_MESSAGE_BYTES:
                    log.error("MCP server %r sent a message over %d bytes; dropping the connection", name, len(buffer))
                    break
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        pass
    finally:
        on_closed()


async def _pump_stdin(
    process: Process,
    source: MemoryObjectReceiveStream[Any],
    sink: MemoryObjectSendStream[Any],
    done: anyio.Event,
) -> None:
    assert process.stdin is not None
    try:
        async with source:
            async for message in source:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                await process.stdin.send(data.encode())
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        sink.close()  # the server stopped reading: let the session see the end instead of waiting forever
    finally:
        done.set()


async def _pump_stderr(fd: int, info: ServerProcess, emit: Callable[[str], None], done: anyio.Event) -> None:
    """Copy the server's stderr line by line to the log, keeping the last lines for error messages."""

    def line(raw: bytes) -> None:
        text = raw.decode(errors="replace").rstrip()
        if text:
            info.stderr.append(text if len(text) <= 400 else text[:397] + "...")
            emit(text)

    os.set_blocking(fd, False)
    buffer = b""
    try:
        while True:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                await anyio.wait_readable(fd)
                continue
            if not chunk:
                break
            *lines, buffer = (buffer + chunk).split(b"\n")
            for raw in lines:
                line(raw)
            if len(buffer) > 65536:
                line(buffer)
                buffer = b""
    finally:
        if buffer:
            line(buffer)
        os.close(fd)
        done.set()
