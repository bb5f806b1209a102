"""`ForkServerSpawner`: a session's side of its fork server (`sandbox/forkserver.py`) — the session's sandboxed
local commands start there, in a few milliseconds, instead of through a fresh launcher interpreter each.

The server is started on first use (`python -I -S enter.py --serve FD`, through `process.spawn_group`, so it ends
with the agent), its replies read by a task in the session's long-lived task group, and restarted if it died.
`spawn(argv, cwd, env)` sends the request with the command's stdin (/dev/null, or a descriptor given) and a pipe for
its output, and returns a `ServedProcess`: the surface `LocalBridge` and `process.stop_group` use of an `anyio`
process (pid, returncode, wait, stdout, aclose). Each command is its own session and process group, announced to the
reaper like any other; its exit status comes back from the server, which is its parent. If the server dies, its
commands still running are killed, and reported so.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import struct
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import ByteSendStream, Process, TaskGroup, UNIXSocketStream

from coder_agent.process import child_env, owner_marked, spawn_group, stop_group, watch_group

log = logging.getLogger(__name__)

ENTER = Path(__file__).with_name("enter.py")
HEADER = struct.Struct("!I")
READ_CHUNK = 65536


class PipeOutput:
    """The read end of a command's output pipe, as an async byte stream (iterating ends at end of file)."""

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self.fd: int | None = fd

    def __aiter__(self) -> PipeOutput:
        return self

    async def __anext__(self) -> bytes:
        while self.fd is not None:
            try:
                chunk = os.read(self.fd, READ_CHUNK)
            except BlockingIOError:
                await anyio.wait_readable(self.fd)
                continue
            if chunk:
                return chunk
            break
        raise StopAsyncIteration

    async def aclose(self) -> None:
        if self.fd is not None:
            fd, self.fd = self.fd, None
            os.close(fd)


class ServedProcess:
    """A command the fork server started (see the module docstring)."""

    def __init__(self, pid: int, stdout: PipeOutput) -> None:
        self.pid = pid
        self.stdout = stdout
        self.stdin: ByteSendStream | None = None
        self.returncode: int | None = None
        self._exited = anyio.Event()

    def exited(self, code: int) -> None:
        self.returncode = code
        self._exited.set()

    async def wait(self) -> int:
        await self._exited.wait()
        assert self.returncode is not None
        return self.returncode

    async def aclose(self) -> None:
        await self.stdout.aclose()
        with anyio.move_on_after(1.0):
            await self._exited.wait()


class ForkServerSpawner:
    """Starts sandboxed commands through this agent's fork server."""

    def __init__(self, tasks: TaskGroup, cgroups: tuple[Path, ...] = (), enter: Path = ENTER) -> None:
        self._tasks = tasks
        self._cgroups = cgroups
        """The session's cgroup folders: the server joins them, so its children are born there."""
        self._enter = enter
        """The launcher that serves (another checkout's, for `bench/sandbox.py --baseline`)."""
        self._server: Process | None = None
        self._channel: UNIXSocketStream | None = None
        self._running: dict[int, ServedProcess] = {}
        self._pending: dict[int, tuple[anyio.Event, list[int]]] = {}
        self._next_id = 0
        self._lock = anyio.Lock()

    async def spawn(
        self, argv: Sequence[str], cwd: Path, env: Mapping[str, str], *, stdin: int | None = None, errors: bool = True
    ) -> ServedProcess:
        """Start `argv` in `cwd` with exactly `env` (which carries the walls), reading `stdin` (None: /dev/null),
        its stdout and (with `errors`; else /dev/null) its stderr on one pipe; OSError if it could not start."""
        async with self._lock:
            channel = await self._channel_ready()
            self._next_id += 1
            request_id = self._next_id
            read_fd, write_fd = os.pipe()
            devnull = os.open(os.devnull, os.O_RDONLY) if stdin is None else os.dup(stdin)
            error_fd = write_fd if errors else os.open(os.devnull, os.O_WRONLY)
            try:
                payload = json.dumps({"id": request_id, "argv": list(argv), "cwd": str(cwd), "env": owner_marked(env)})
                data = payload.encode()
                answered = anyio.Event()
                box: list[int] = []
                self._pending[request_id] = (answered, box)
                await channel.send_fds(HEADER.pack(len(data)) + data, [devnull, write_fd, error_fd])
            except BaseException:
                os.close(read_fd)
                raise
            finally:
                os.close(write_fd)
                os.close(devnull)
                if error_fd != write_fd:
                    os.close(error_fd)
        await answered.wait()
        if not box:
            os.close(read_fd)
            raise OSError("the sandbox's fork server stopped")
        process = ServedProcess(box[0], PipeOutput(read_fd))
        self._running[process.pid] = process
        watch_group(process.pid)
        return process

    @property
    def server_pid(self) -> int | None:
        """The fork server's pid, while it runs (benchmarks read its children's times)."""
        return self._server.pid if self._server is not None and self._server.returncode is None else None

    async def _channel_ready(self) -> UNIXSocketStream:
        if self._channel is not None and self._server is not None and self._server.returncode is None:
            return self._channel
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._server = await spawn_group(
                [
                    *(sys.executable, "-I", "-S", str(self._enter), "--serve", str(theirs.fileno())),
                    *(part for folder in self._cgroups for part in ("--cgroup", str(folder))),
                ],
                env=child_env(),  # no secrets: unlike the agent it is dumpable, and each command gets its own env
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=None,
                pass_fds=(theirs.fileno(),),
            )
        finally:
            theirs.close()
        self._channel = await UNIXSocketStream.from_socket(ours)
        self._tasks.start_soon(self._listen, self._channel)
        return self._channel

    async def _listen(self, channel: UNIXSocketStream) -> None:
        buffered = b""
        try:
            async for chunk in channel:
                buffered += chunk
                *lines, buffered = buffered.split(b"\n")
                for line in lines:
                    self._dispatch(json.loads(line))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError, ValueError):
            log.debug("the sandbox's fork server channel closed", exc_info=True)
        self._server_gone(channel)

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "exit" in message:
            process = self._running.pop(int(message["exit"]), None)
            if process is not None:
                process.exited(int(message["code"]))
            return
        waiting = self._pending.pop(int(message.get("id") or 0), None)
        if waiting is not None:
            event, box = waiting
            box.append(int(message["pid"]))
            event.set()

    def _server_gone(self, channel: UNIXSocketStream) -> None:
        """The server ended: what it started and still runs is killed (its exit cannot be known any more)."""
        if channel is not self._channel:
            return
        self._channel = None
        for event, _ in self._pending.values():
            event.set()
        self._pending.clear()
        running, self._running = self._running, {}
        for process in running.values():
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)
            process.exited(-signal.SIGKILL)

    async def aclose(self) -> None:
        """Stop the server (what it started is the session's to stop, like any command)."""
        channel, self._channel = self._channel, None
        if channel is not None:
            with contextlib.suppress(Exception):
                await channel.aclose()
        server, self._server = self._server, None
        if server is not None:
            await stop_group(server, grace=1.0)
