"""Keeping a command's processes together: nothing it starts outlives it, whatever it does to its process group,
session or environment (`setsid env -i daemon &`). Membership is by the kernel's bookkeeping, never by a mark a
process could shed.

Standard library only: it runs in the launcher (`enter.py`) and the fork server's children, before `exec`.

**Inside the walls** (`linux.enter` calls `split` once the namespaces are made and the walls ready, and
`run_command` once every wall is up). The command gets a PID namespace of its own, whose init is ours:

- the *waiter* (the process the agent or the editor started, outside the namespace) forks the init and waits for
  it; it ends as the command ended (its exit status, or the same signal), so whoever started it sees the command;
- the *init* (pid 1 inside) starts the command, reaps whatever ends in the namespace, and exits as soon as the
  command itself ends; the kernel then kills everything left in the namespace, daemons included. It dies with the
  waiter (PR_SET_PDEATHSIG), and a fork server's waiter with the fork server, so killing the waiter, its process
  group, or the fork server ends all of it. A signal that reaches the waiter alone
  (SIGTERM, SIGHUP) gives the command `KILL_AFTER` seconds, then ends the namespace; SIGINT and SIGQUIT, which a
  terminal sends the whole group, the waiter ignores (the command got them too).
- Outside pids do not exist in the namespace: nothing inside can signal, or see in its own /proc, a process outside,
  whatever the kernel's Landlock ABI.

**Outside the walls** (`supervise`, run by `enter.py --own -- COMMAND`: commands that run with the user's rights).
No namespace can be made without privileges, so the supervisor is a *child subreaper* (PR_SET_CHILD_SUBREAPER): a
process that leaves its parent (a daemon's double fork) is re-parented to it rather than to the machine's init, so
when the command ends, or the supervisor is told to stop (SIGTERM, SIGHUP, its parent's death), every descendant is
found and killed. What it cannot hold: a process started by a service outside (systemd, cron, at, a terminal
multiplexer's server, a container engine), and a command that kills the supervisor itself first, since it runs
with the same rights.
"""

from __future__ import annotations

import ctypes
import os
import signal
import struct
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy reads the name the same way)

if TYPE_CHECKING:  # typing costs the launcher's start ~10 ms, and so would contextlib: neither is used here
    from typing import NoReturn

KILL_AFTER = 2.0
"""After SIGTERM or SIGHUP reaches the waiter (or the supervisor), how long the command gets to end by itself before
everything of it is killed. Below the reaper's grace (`coder_agent.reaper.GRACE`), so a killed agent's reaper finds
it done."""
PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36
SYS_CLOSE_RANGE, CLOSE_RANGE_CLOEXEC = 436, 4  # the same on every architecture
FAILURE_STATUS = 125
STATUS = struct.Struct("=i")

_libc = ctypes.CDLL(None, use_errno=True)


def _prctl(option: int, value: int) -> int:
    return int(_libc.prctl(ctypes.c_int(option), ctypes.c_ulong(value), ctypes.c_ulong(0), ctypes.c_ulong(0), 0))


def close_from(first: int, keep: int = -1) -> None:
    """Close every descriptor from `first` up, but `keep`: what a process inherited must not reach the command."""
    ranges = [(first, keep - 1), (keep + 1, 0xFFFFFFFF)] if keep >= first else [(first, 0xFFFFFFFF)]
    for low, high in ranges:
        if low > high:
            continue
        if _libc.syscall(ctypes.c_long(SYS_CLOSE_RANGE), ctypes.c_uint(low), ctypes.c_uint(high), 0) == 0:
            continue
        for name in os.listdir("/proc/self/fd"):  # no close_range (a kernel older than 5.9)
            fd = int(name)
            if low <= fd <= high:
                try:  # noqa: SIM105
                    os.close(fd)
                except OSError:
                    pass


# ---- inside the walls: a PID namespace whose init is ours ---------------------------------------------------------


def split() -> int:
    """Right after `unshare(CLONE_NEWPID)`: fork the namespace's init. This process becomes the waiter and never
    returns; the init returns, with the descriptor on which it will report how the command ended."""
    read_end, write_end = os.pipe()
    init = os.fork()
    if init:
        os.close(write_end)
        _wait_for_init(init, read_end)
    os.close(read_end)
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    import select

    poller = select.poll()
    poller.register(write_end, select.POLLERR)
    if poller.poll(0):  # the waiter died before the line above: no one would see the command end
        os._exit(FAILURE_STATUS)
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Python's handler would let a process inside kill pid 1
    return write_end


def find_program(name: str, env: dict[str, str]) -> str:
    """Where `exec` would find `name` along `env`'s PATH (as `execvpe`), or `name` itself (it then fails to start)."""
    if "/" in name:
        return name
    for folder in env.get("PATH", os.defpath).split(os.pathsep):
        candidate = os.path.join(folder or ".", name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return name


def run_command(report: int, path: str, argv: list[str], env: dict[str, str]) -> NoReturn:
    """In the init, every wall up: start the command (`posix_spawn`: no copy of this process), reap whatever ends in
    the namespace and, when the command ends, report its wait status and exit, which ends the namespace."""
    if _libc.syscall(ctypes.c_long(SYS_CLOSE_RANGE), ctypes.c_uint(3), ctypes.c_uint(0xFFFFFFFF), CLOSE_RANGE_CLOEXEC):
        for name in os.listdir("/proc/self/fd"):  # no close_range flags (a kernel older than 5.11)
            if int(name) >= 3:
                try:  # noqa: SIM105
                    os.set_inheritable(int(name), False)
                except OSError:
                    pass
    try:
        command = os.posix_spawn(path, argv, env, setsigdef=(signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT))
    except OSError as exc:
        os.write(2, f"{argv[0]}: {exc.strerror}\n".encode())
        _report(report, (127 if isinstance(exc, FileNotFoundError) else 126) << 8)
    close_from(0, keep=report)
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:  # pragma: no cover - the command is our child until we reap it
            _report(report, FAILURE_STATUS << 8)
        if pid == command:
            _report(report, status)


def _report(report: int, status: int) -> NoReturn:
    try:  # noqa: SIM105
        os.write(report, STATUS.pack(status))
    except OSError:
        pass
    os._exit(0)


def _wait_for_init(init: int, report: int) -> NoReturn:
    close_from(3, keep=report)
    _stop_later(lambda: _kill(init))
    status: int | None = None
    try:  # noqa: SIM105
        status = os.waitpid(init, 0)[1]
    except ChildProcessError:
        pass
    try:
        said = os.read(report, STATUS.size)
    except OSError:
        said = b""
    if len(said) == STATUS.size:
        status = STATUS.unpack(said)[0]  # the command's own end
    _end_as(FAILURE_STATUS << 8 if status is None else status)


def _kill(pid: int, number: int = signal.SIGKILL) -> None:
    try:  # noqa: SIM105
        os.kill(pid, number)
    except OSError:
        pass


def _stop_later(stop: object) -> None:
    """SIGINT and SIGQUIT ignored (a terminal sends them to the whole group: the command has them); SIGTERM and SIGHUP
    call `stop` after `KILL_AFTER` seconds, unless all has ended by then."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGQUIT, signal.SIG_IGN)

    def later(signum: int, frame: object) -> None:
        if signal.getitimer(signal.ITIMER_REAL)[0] == 0:
            signal.setitimer(signal.ITIMER_REAL, KILL_AFTER)

    def now(signum: int, frame: object) -> None:
        stop()  # type: ignore[operator]

    signal.signal(signal.SIGTERM, later)
    signal.signal(signal.SIGHUP, later)
    signal.signal(signal.SIGALRM, now)


def _end_as(status: int) -> NoReturn:
    """Exit as a process with this wait status did: the same exit code, or killed by the same signal."""
    signal.setitimer(signal.ITIMER_REAL, 0)
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            signal.signal(number, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [number])
            os.kill(os.getpid(), number)
        except (OSError, ValueError):
            pass
        os._exit(128 + number)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else FAILURE_STATUS)


# ---- outside the walls: a child subreaper ----------------------------------------------------------------------


def supervise(argv: list[str], *, die_with_parent: bool = False) -> NoReturn:
    """Run `argv` and end everything it started when it ends (see the module docstring); with `die_with_parent` (a
    parent whose starting thread lives as long as it does: the agent's event loop), also when this process's parent
    ends.

    Two subreapers, each ending the other's work if the other is killed outright: this process (the *outer*, in the
    process group its starter signals) and a child of it (the *inner*, in a process group of its own, the terminal's
    foreground when there is one), which runs the command. SIGKILL to the outer one's group (an editor killing its
    terminal) ends the outer one only: the inner one, told by PR_SET_PDEATHSIG, ends the command's group (SIGTERM,
    then after `KILL_AFTER` every descendant). SIGKILL to the inner one sends everything below it to the outer one,
    which ends it all."""
    parent = os.getppid()
    if sys.platform != "linux" or _prctl(PR_SET_CHILD_SUBREAPER, 1) != 0:
        os.execvp(argv[0], argv)  # nothing to hold them with: the command as it is
    if die_with_parent:
        _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:
            os._exit(FAILURE_STATUS)  # whoever started it is gone already
    outer = os.getpid()
    inner = os.fork()
    if inner == 0:
        _inner(argv, outer)
    close_from(3)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal sends them to its foreground group: the inner one's
    signal.signal(signal.SIGQUIT, signal.SIG_IGN)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, lambda number, frame: _kill(inner, signal.SIGTERM))
    status = _wait_for(inner)
    _end_descendants()
    _end_as(status)


def _inner(argv: list[str], outer: int) -> NoReturn:
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != outer:
        os._exit(FAILURE_STATUS)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _own_group()
    command = os.fork()
    if command == 0:
        for signum in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGTTOU):
            signal.signal(signum, signal.SIG_DFL)
        try:
            os.execvp(argv[0], argv)
        except OSError as exc:
            os.write(2, f"{argv[0]}: {exc.strerror}\n".encode())
            os._exit(127 if isinstance(exc, FileNotFoundError) else 126)
    close_from(3)
    told: list[int] = []

    def tell_then_end(number: int, frame: object) -> None:
        if not told:  # the command's group hears it (this process too, once), and gets KILL_AFTER to end
            told.append(number)
            _kill(-os.getpgrp(), signal.SIGTERM)
            signal.setitimer(signal.ITIMER_REAL, KILL_AFTER)

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGQUIT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, tell_then_end)
    signal.signal(signal.SIGHUP, tell_then_end)
    signal.signal(signal.SIGALRM, lambda number, frame: _end_descendants())
    status = _wait_for(command)
    _end_descendants()
    _end_as(status)


def _own_group() -> None:
    """A process group of its own, the terminal's foreground group if its parent's was (so that the command reads
    and sets the terminal as it would have)."""
    terminal = next((fd for fd in (0, 1, 2) if os.isatty(fd)), None)
    foreground = False
    if terminal is not None:
        try:  # noqa: SIM105
            foreground = os.tcgetpgrp(terminal) == os.getpgrp()
        except OSError:
            pass
    os.setpgid(0, 0)
    if foreground:
        signal.signal(signal.SIGTTOU, signal.SIG_IGN)  # a background group may set the foreground when it ignores this
        try:  # noqa: SIM105
            os.tcsetpgrp(terminal, os.getpgrp())  # type: ignore[arg-type]
        except OSError:
            pass
        signal.signal(signal.SIGTTOU, signal.SIG_DFL)


def _wait_for(child: int) -> int:
    """Reap children (orphans come here too) until `child` has ended; its wait status."""
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return FAILURE_STATUS << 8
        if pid == child:
            return status


def _end_descendants() -> None:
    """SIGKILL every child, reap them, and again until there is none: a killed child's own children come to us (we
    are their subreaper) before it can be reaped, so the whole tree goes, however deep."""
    while children := _children():
        for pid in children:
            _kill(pid)
        for pid in children:
            try:  # noqa: SIM105
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


def _children() -> list[int]:
    me = str(os.getpid())
    try:
        with open(f"/proc/{me}/task/{me}/children") as handle:
            return [int(pid) for pid in handle.read().split()]
    except OSError:
        pass
    found = []
    for name in os.listdir("/proc"):  # no children file (a kernel without CONFIG_PROC_CHILDREN)
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as handle:
                    if handle.read().rpartition(b")")[2].split()[1] == me.encode():
                        found.append(int(name))
            except (OSError, IndexError):
                pass
    return found
