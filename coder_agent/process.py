"""Every process the agent starts: what it gets, its own process group, stopping it with everything it started, and
making sure it ends with the agent even when the agent is killed.

`find_program(name, outside=…)` is which program the agent starts for itself outside the walls (its own git,
ripgrep, the shell of a command let out of them): the first on PATH's absolute entries whose resolved location lies
outside the folders given (those a command may write), so a program a sandboxed command or a cloned repository left
in a project's `.venv/bin` or `node_modules/.bin` that the user put on PATH is passed over (and logged).

`child_env()` is the one environment every child starts from: the agent's own without its secrets
(`secrets.child_environ`: keys, tokens, passwords, credentials by name and by value, `SSH_AUTH_SOCK`, less what the
user's `sandbox.pass_env` lets through) and with `OWNER_MARK`. `spawn_group` (async), `spawn_helper` (a short-lived
program that starts nothing itself, in the agent's own group: CPython's vfork fast path) and `run_sync` (a blocking
caller's, in a worker thread) are the only places in `coder_agent/` that start a process, apart from the sandbox's
launcher, supervisor and fork server, which exec the command they were handed (`tests/unit/test_spawning.py`
checks it). A caller that needs more (a command's `COMMAND_ENV`, an MCP server's own `env`) adds it on top of
`child_env()`; the agent's own git goes through `own_git` on top of these, and inside the session's walls through
`CommandSandbox.start`.

`spawn_group` starts a command as the leader of a new session, so its process group id is its pid and what it
starts (npx → node, `cmd &`) stays in the group. `stop_group` ends the whole group: optionally close its stdin and
give the leader time to exit, then SIGTERM the group, wait, SIGKILL what is left, reap the leader. Local commands
(`session/local_bridge.py`) and stdio MCP servers (`mcp/stdio.py`) both go through here.

A group outlives the agent when the agent dies without running `stop_group` (SIGKILL, the OOM killer, a crash).
So the first `spawn_group` also starts the reaper (`coder_agent/reaper.py`): a tiny stdlib-only process that holds
the read end of a pipe whose write end only this process holds (close-on-exec: no child inherits it). Each group
is announced to it when spawned and withdrawn when it has ended; when the agent dies, however, the kernel closes
the write end, and the reaper ends every group still announced (SIGTERM, a grace period, SIGKILL). Announcing is
one non-blocking write of a few bytes with no answer to wait for; the reaper is started once, by a fork/exec that
does not wait for its interpreter. A reaper that died is started again on the next announcement and told every
live group. Everything spawned here also carries `OWNER_MARK` in its environment (inherited by what it starts), and
on Linux the reaper ends every process bearing it too: that covers the moment between a spawn and its announcement
(milliseconds on a loaded machine: the event loop sets up the pipes first), and a process that left its group.

PR_SET_PDEATHSIG is not used here: it must be set in the child between fork and exec (`anyio.open_process` has no
`preexec_fn`, and one would cost subprocess its vfork fast path), and it reaches only the direct child, not what
the child starts. The reaper covers the whole group at no per-spawn cost. What it cannot cover: a process that
leaves both its group and the environment it inherited (a daemon that clears its environment), or one we may not
read (another user's, a set-uid program). Commands are held closer than that: inside the sandbox by a PID namespace,
outside it by a supervisor (`sandbox/supervisor.py`), each of which also ends with the agent.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

import anyio
from anyio.abc import ByteSendStream, Process

from coder_agent.secrets import child_environ

log = logging.getLogger(__name__)

TERM_GRACE = 2.0
"""After SIGTERM to a group, how long it gets to exit before SIGKILL."""
_POLL = 0.02
_REAPER = Path(__file__).with_name("reaper.py")
_CAN_KILL_GROUPS = hasattr(os, "killpg")
OWNER_VARIABLE = "CODER_AGENT_OWNER"
OWNER_MARK = f"{OWNER_VARIABLE}={os.getpid()}.{os.urandom(6).hex()}"
"""The environment entry of everything this process spawns, for the reaper to find them by (unique per agent)."""


def find_program(name: str, *, outside: Iterable[str | Path] = (), path: str | None = None) -> str | None:
    """The first `name` on the absolute entries of `path` (the agent's PATH by default) whose resolved location is
    inside none of the folders `outside` (those a command may write: a program planted there is never the
    agent's); None when there is none."""
    folders = tuple(sorted({os.path.realpath(folder) for folder in outside}))
    return _find_program(name, os.environ.get("PATH", os.defpath) if path is None else path, folders)


@functools.lru_cache(maxsize=64)
def _find_program(name: str, path: str, real_folders: tuple[str, ...]) -> str | None:
    """Cached: a program found outside the folders stays outside them (a command cannot write there)."""
    for entry in path.split(os.pathsep):
        if not os.path.isabs(entry):
            continue
        found = shutil.which(name, path=entry)
        if found is None:
            continue
        real = os.path.realpath(found)
        inside = next((f for f in real_folders if real == f or real.startswith(f.rstrip(os.sep) + os.sep)), None)
        if inside is not None:
            log.warning(
                "not running %s for the agent itself: it lies inside %s, which commands may write", found, inside
            )
            continue
        return found
    return None


async def spawn_group(
    argv: Sequence[str],
    *,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    stdin: int | None = subprocess.PIPE,
    stdout: int | None = subprocess.PIPE,
    stderr: int | None = subprocess.PIPE,
    pass_fds: Sequence[int] = (),
) -> Process:
    """Start `argv` as the leader of a new process group that ends with this process, however it ends; `env`
    (built on `child_env()`) or `child_env()` itself."""
    env = child_env() if env is None else owner_marked(env)
    process = await anyio.open_process(
        list(argv),
        cwd=cwd,
        env=env,
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        start_new_session=True,
        pass_fds=pass_fds,
    )
    if _CAN_KILL_GROUPS:
        _reaper.watch(process.pid)
    return process


async def spawn_helper(
    argv: Sequence[str],
    *,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    stdin: int | None = subprocess.DEVNULL,
    stdout: int | None = subprocess.PIPE,
    stderr: int | None = subprocess.PIPE,
) -> Process:
    """Start a short-lived program of the agent's own that starts nothing itself (ripgrep, the agent's own git) in
    this process's group: no session of its own keeps CPython's vfork fast path (a new session costs a whole fork
    of the agent, ~5 ms more per spawn, three times that on a loaded machine). The caller kills it (`kill()`, no
    group to end); should the agent die first, the reaper ends it by its mark (Linux). `env` (built on
    `child_env()`) or `child_env()` itself."""
    return await anyio.open_process(
        list(argv),
        cwd=cwd,
        env=child_env() if env is None else owner_marked(env),
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
    )


class GroupLeader(Protocol):
    """What stopping a group needs of its leader: an `anyio` process, or one the sandbox's fork server started."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    @property
    def stdin(self) -> ByteSendStream | None: ...

    async def wait(self) -> int: ...

    async def aclose(self) -> None: ...


class PipedLeader(GroupLeader, Protocol):
    """A group leader whose output comes on a pipe."""

    @property
    def stdout(self) -> AsyncIterable[bytes] | None: ...


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a child of the agent gets: the agent's without its secrets, `extra` on top, the owner mark."""
    return owner_marked({**child_environ(), **(extra or {})})


def run_sync(
    argv: Sequence[str],
    *,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    input: bytes | None = None,
    timeout: float,
    group: bool = True,
) -> subprocess.CompletedProcess[bytes]:
    """Run `argv` to its end from a blocking caller (a worker thread), its output captured: its own process group
    (`group=False`: a program that starts nothing itself, as `spawn_helper`), killed whole after `timeout` (then
    `subprocess.TimeoutExpired`); `env` (built on `child_env()`) or `child_env()` itself. It carries the owner mark,
    so the reaper ends it on Linux should the agent die first. OSError if it cannot start."""
    with subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=child_env() if env is None else owner_marked(env),
        stdin=subprocess.DEVNULL if input is None else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=group,
    ) as process:
        try:
            stdout, stderr = process.communicate(input, timeout=timeout)
        except BaseException:
            with contextlib.suppress(OSError):
                if _CAN_KILL_GROUPS and group:
                    os.killpg(process.pid, signal.SIGKILL)
                else:
                    process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):  # one that left the group may hold the pipes
                process.communicate(timeout=1.0)
            raise
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def owner_marked(env: Mapping[str, str]) -> dict[str, str]:
    """`env` with this agent's mark, which the reaper finds its processes by."""
    return {**env, OWNER_VARIABLE: OWNER_MARK.partition("=")[2]}


def watch_group(pgid: int) -> None:
    """Announce a process group started elsewhere (the sandbox's fork server) to the reaper."""
    if _CAN_KILL_GROUPS:
        _reaper.watch(pgid)


def signal_group(process: GroupLeader, sig: int) -> None:
    """Send `sig` to the process's whole group (its pid is the group id: see `spawn_group`)."""
    with contextlib.suppress(OSError):
        if _CAN_KILL_GROUPS:
            os.killpg(process.pid, sig)
        elif isinstance(process, Process):  # pragma: no cover - Windows
            process.kill()


async def stop_group(process: GroupLeader, *, stdin_grace: float = 0.0, grace: float = TERM_GRACE) -> None:
    """End the group of a process started by `spawn_group`, leaving nothing of it running.

    With `stdin_grace`, first close the leader's stdin and give it that long to exit on its own (a server's polite
    shutdown). Then SIGTERM the group and wait up to `grace` for every member to go; SIGKILL what is left, wait as
    long again; reap the leader. Run it shielded when the caller may be cancelled.
    """
    try:
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
    finally:
        if _CAN_KILL_GROUPS and not _running(process):
            _reaper.forget(process.pid)


def _running(process: GroupLeader) -> bool:
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


async def _ended(process: GroupLeader, timeout: float) -> bool:
    """Wait up to `timeout` for the whole group to end; there is nothing to wait on but the process table."""
    with anyio.move_on_after(timeout):
        while _running(process):  # noqa: ASYNC110 - see above
            await anyio.sleep(_POLL)
    return not _running(process)


class _Reaper:
    """This process's side of the pipe to its reaper, and the groups announced on it."""

    def __init__(self) -> None:
        self._fd: int | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._groups: set[int] = set()

    def watch(self, pgid: int) -> None:
        self._groups.add(pgid)
        self._send(f"+{pgid}\n")

    def forget(self, pgid: int) -> None:
        if pgid in self._groups:
            self._groups.discard(pgid)
            self._send(f"-{pgid}\n")

    @property
    def pid(self) -> int | None:
        """The reaper's pid, once started (for tests and benchmarks)."""
        return self._process.pid if self._process is not None else None

    def _send(self, message: str) -> None:
        if self._fd is None:
            self._start()  # it is told every live group, this one included
            return
        try:
            os.write(self._fd, message.encode())
        except BlockingIOError:  # a reaper that does not read: it cannot help; the agent must not block on it
            log.warning("the reaper is not reading; process group announcement dropped: %s", message.strip())
        except OSError:  # it died: start another
            self._close()
            self._start()

    def _start(self) -> None:
        read_fd, write_fd = os.pipe()
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-I", "-S", str(_REAPER), str(read_fd), OWNER_MARK],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,  # stdout is the protocol's
                pass_fds=(read_fd,),
                cwd="/",
                env={},
                start_new_session=True,  # a signal to the agent's process group must not take the reaper with it
            )
        except OSError as exc:
            os.close(write_fd)
            log.warning("could not start the reaper (%s): child processes may outlive a killed agent", exc)
            return
        finally:
            os.close(read_fd)
        os.set_blocking(write_fd, False)
        self._fd = write_fd
        if self._groups:
            with contextlib.suppress(OSError):
                os.write(write_fd, "".join(f"+{pgid}\n" for pgid in self._groups).encode())

    def close(self) -> None:
        """At this process's clean exit: close the pipe and let the reaper see end of file and go."""
        self._close(wait=0.5)

    def _close(self, wait: float = 0.0) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(wait)  # reap it
            self._process = None


_reaper = _Reaper()
atexit.register(_reaper.close)  # the CLI ends with os._exit (the kernel closes the pipe); in-process users end here


def reaper_pid() -> int | None:
    """The pid of this process's reaper, if one was started."""
    return _reaper.pid
