"""`SessionNetwork`: the one network namespace a session's sandboxed commands share on Linux, so a server a job
starts on 127.0.0.1 is reachable from the session's other commands (tests against a dev server), and from no
other session's, nor from the machine.

A small process holds it (`python -I -S sandbox/enter.py --network [PROXY_SOCKET]`, `linux.hold_network`): it makes
the namespace (in a user namespace of its own when not root), brings its loopback up, starts the proxy's forwarder
in it when the network goes through the proxy, says `ready`, and then waits for its stdin to close. It is started
when the session's first command needs it, and ended with the session; it is a process group the reaper knows, so
a killed agent leaves nothing behind either.

`entry()` is what a command's walls say to join it (`network` in the spec): the holder's pid and start time (so a
pid that came back as another process is refused, never joined) and the namespace's cookie, which the launcher
checks once it joined (fail closed). A holder that died, or whose forwarder did, is started again for the next
command. A holder that cannot start is not a hole: the commands then get a network namespace of their own each,
as walled as before (tried again after `RETRY_AFTER`), and the log says why.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

import anyio
from anyio.abc import Process

from coder_agent.process import spawn_group, stop_group
from coder_agent.sandbox.probe import launcher_argv
from coder_agent.sandbox.spec import FAILURE_MARK

log = logging.getLogger(__name__)

READY_WAIT = 20.0
"""How long the holder gets to say it is ready (a Python start, on a loaded machine)."""
RETRY_AFTER = 30.0
"""After a holder could not start, how long the session's commands get a network each before it is tried again."""


class SessionNetwork:
    """A session's network namespace and the process that holds it (see the module docstring)."""

    def __init__(self, proxy_socket: Path | None, cgroups: tuple[Path, ...] = ()) -> None:
        self.proxy_socket = proxy_socket
        self.cgroups = cgroups
        """The session's cgroup folders (`sandbox/cgroups.py`), which the holder joins: its forwarder counts there."""
        self.problem: str | None = None
        """Why the session's commands do not share a network (None: they do, or have not needed it yet)."""
        self._failed_at = 0.0
        self._closed = False
        self._holder: Process | None = None
        self._entry: str | None = None
        self._lock = anyio.Lock()

    @property
    def holder_pid(self) -> int | None:
        return self._holder.pid if self._holder is not None and self._holder.returncode is None else None

    async def entry(self) -> str | None:
        """The spec's `network` value that joins the session's network, started if need be; None when it cannot be
        had (see `problem`): the command then gets a network of its own."""
        async with self._lock:
            if self._closed:
                return None  # the session is closing: no holder to outlive it
            if self._holder is not None and self._holder.returncode is None:
                return self._entry
            if self.problem is not None and anyio.current_time() - self._failed_at < RETRY_AFTER:
                return None
            await self._drop()
            try:
                self._holder, self._entry = await self._start()
            except _Unavailable as exc:
                self.problem, self._failed_at = str(exc), anyio.current_time()
                log.warning("sandboxed commands get a network each, not one shared by the session: %s", exc)
                return None
            self.problem = None
            return self._entry

    async def _start(self) -> tuple[Process, str]:
        argv = [*launcher_argv(), "--network"]
        argv += ["--proxy", str(self.proxy_socket)] if self.proxy_socket is not None else []
        argv += [part for folder in self.cgroups for part in ("--cgroup", str(folder))]
        try:
            holder = await spawn_group(argv, stderr=None)  # the scrubbed environment
        except OSError as exc:
            raise _Unavailable(f"its holder did not start: {exc.strerror or exc}") from None
        try:
            said = await self._first_line(holder)
            word, _, cookie = said.partition(" ")
            if word != "ready" or not cookie.isdigit():
                raise _Unavailable(said.removeprefix(FAILURE_MARK).strip() or "its holder ended before it was ready")
            return holder, _entry_of(holder.pid, int(cookie))
        except BaseException:
            with anyio.CancelScope(shield=True):
                await stop_group(holder, grace=1.0)
                await holder.aclose()
            raise

    @staticmethod
    async def _first_line(holder: Process) -> str:
        assert holder.stdout is not None
        said = b""
        with anyio.move_on_after(READY_WAIT):
            with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError):
                while b"\n" not in said and len(said) < 4096:
                    said += await holder.stdout.receive()
            return said.decode(errors="replace").strip()
        raise _Unavailable(f"its holder did not say it was ready within {READY_WAIT:.0f} s")

    async def _drop(self) -> None:
        holder, self._holder, self._entry = self._holder, None, None
        if holder is not None:
            with anyio.CancelScope(shield=True):
                await stop_group(holder, stdin_grace=1.0, grace=1.0)
                await holder.aclose()

    async def aclose(self) -> None:
        """End the holder (the namespace goes with the last process in it)."""
        async with self._lock:
            self._closed = True
            await self._drop()


class _Unavailable(Exception):
    """The session's network could not be had; the message says why."""


def _entry_of(pid: int, cookie: int) -> str:
    """`pid:start-time:cookie[:user]` (`user` when the holder made a user namespace too), what the launcher checks
    the holder and its namespace by. A holder still in the agent's own network namespace would make the walls no
    walls: refused."""
    from coder_agent.sandbox.linux import start_time  # Linux's, as this whole module

    try:
        net, user = (os.stat(f"/proc/{pid}/ns/{kind}") for kind in ("net", "user"))
        own_net, own_user = (os.stat(f"/proc/self/ns/{kind}") for kind in ("net", "user"))
    except OSError as exc:
        raise _Unavailable(f"its namespaces could not be read: {exc.strerror}") from None
    started = start_time(pid)
    if started is None:
        raise _Unavailable("its holder ended before it was ready")
    if (net.st_dev, net.st_ino) == (own_net.st_dev, own_net.st_ino):
        raise _Unavailable("its holder is in the agent's own network namespace")
    entry = f"{pid}:{started}:{cookie}"
    if (user.st_dev, user.st_ino) != (own_user.st_dev, own_user.st_ino):
        entry += ":user"
    return entry
