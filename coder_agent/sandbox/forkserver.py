"""The fork server: one small process per agent that starts sandboxed commands by forking itself, so a command pays
for no interpreter start (the launcher's ~8 ms of Python before any wall goes up).

`python -I -S enter.py --serve FD [--cgroup DIR]...` runs `serve`: single-threaded, standard library only, its
modules loaded once, in the session's cgroup (so its children are born there). On the UNIX socket FD it reads
requests (a 4-byte length, then JSON: `argv`, `cwd`, `env`, with three file descriptors attached for stdin, stdout
and stderr). For each it forks; the child starts a new session, takes the three descriptors, enters its folder,
puts up the walls the environment's `CODER_AGENT_SANDBOX` describes and runs the command inside them
(`linux.enter`, exactly as the launcher does, the signals Python ignores restored for it) — or writes the launcher's
failure line to its stderr and exits 125. The server answers with the child's pid, reaps its children, and reports
each exit (`{"exit": pid, "code": returncode}`). End of file on the socket (the agent is gone) ends it, and every
command it started with it: each child dies with its parent (PR_SET_PDEATHSIG, set in `linux.enter`), and all that
child's command started with the child (`sandbox/supervisor.py`).
"""

from __future__ import annotations

import gc
import json
import os
import select
import signal
import socket
import struct
import sys
from typing import NoReturn

from coder_agent.sandbox import linux, seccomp
from coder_agent.sandbox.spec import FAILURE_MARK, FAILURE_STATUS, SPEC_VARIABLE, decode

FDS_PER_REQUEST = 3
WARM_FAMILIES = (
    frozenset({seccomp.AF_INET, seccomp.AF_INET6, seccomp.AF_NETLINK}),
    frozenset({seccomp.AF_INET, seccomp.AF_INET6, seccomp.AF_NETLINK, seccomp.AF_UNIX}),
)
HEADER = struct.Struct("!I")


def serve(fd: int, cgroups: list[str]) -> None:
    """Serve the agent on the socket `fd`; in the session's `cgroups` (its children are born there, so none pays
    for joining them: a move between cgroups costs milliseconds)."""
    linux.join_cgroups(cgroups)
    for families in WARM_FAMILIES:  # built once here, so no child builds it
        seccomp.filter_program(os.uname().machine, families)
    gc.freeze()  # what is loaded now stays out of the children's collections: less of it is copied on write
    channel = socket.socket(fileno=fd)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    os.set_blocking(wake_read, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    buffered = b""
    fds: list[int] = []
    while True:
        ready, _, _ = select.select([channel.fileno(), wake_read], [], [])
        if wake_read in ready:
            while _drain(wake_read):
                pass
            _reap(channel)
        if channel.fileno() not in ready:
            continue
        data, received, _, _ = socket.recv_fds(channel, 65536, 64)
        if not data:
            return
        buffered += data
        fds += received
        while len(buffered) >= HEADER.size:
            (size,) = HEADER.unpack_from(buffered)
            if len(buffered) < HEADER.size + size:
                break
            request = json.loads(buffered[HEADER.size : HEADER.size + size])
            buffered = buffered[HEADER.size + size :]
            mine, fds = fds[:FDS_PER_REQUEST], fds[FDS_PER_REQUEST:]
            _start(channel, request, mine)
        _reap(channel)


def _drain(fd: int) -> bool:
    try:
        return bool(os.read(fd, 512))
    except BlockingIOError:
        return False


def _send(channel: socket.socket, message: dict[str, object]) -> None:
    channel.sendall(json.dumps(message).encode() + b"\n")


def _start(channel: socket.socket, request: dict[str, object], fds: list[int]) -> None:
    pid = os.fork()
    if pid == 0:
        _child(request, fds)  # never returns
    for fd in fds:
        os.close(fd)
    _send(channel, {"id": request.get("id"), "pid": pid})


def _child(request: dict[str, object], fds: list[int]) -> None:
    try:
        os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.closerange(3, 1 << 16)
        signal.set_wakeup_fd(-1)
        for signum in (signal.SIGCHLD, signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT):
            signal.signal(signum, signal.SIG_DFL)
        argv = [str(a) for a in request["argv"]]  # type: ignore[attr-defined]
        env = {str(k): str(v) for k, v in request["env"].items()}  # type: ignore[attr-defined]
        os.chdir(str(request["cwd"]))
        spec = env.pop(SPEC_VARIABLE, None)
        if spec is None:
            _fail(f"no walls were given ({SPEC_VARIABLE} is not set)")
        linux.enter(decode(spec), argv, env, die_with_parent=True)
    except linux.Failure as exc:
        _fail(str(exc))
    except (OSError, ValueError, KeyError) as exc:
        _fail(f"{type(exc).__name__}: {exc}")


def _fail(message: str) -> NoReturn:
    try:
        os.write(2, f"{FAILURE_MARK} {message}; the command was not run\n".encode())
    finally:
        os._exit(FAILURE_STATUS)


def _reap(channel: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        try:
            _send(channel, {"exit": pid, "code": code})
        except OSError:
            sys.exit(0)
