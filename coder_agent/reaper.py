"""The reaper: a tiny process that ends the agent's process groups when the agent dies, however it dies.

`coder_agent.process` starts it on the first spawn (`python -I -S <this file> FD MARK`, in its own session, stdlib
only, importing nothing of ours). It reads lines from the pipe on descriptor FD: `+PGID` when the agent started a
process group, `-PGID` when the agent stopped it. Only the agent holds the write end, so end of file means the agent
is gone (exit, crash, SIGKILL, the OOM killer): the reaper then sends SIGTERM to every group still listed and to
every process whose environment holds the entry MARK (`CODER_AGENT_OWNER=<agent pid>.<random>`, which the agent puts
in the environment of everything it spawns: it catches a process the agent had no time to announce, and one that
left its group with `setsid`), gives them `GRACE` seconds, SIGKILLs what is left, and exits. It also removes the
sessions' cgroups the agent made (`sandbox/cgroups.py`: `coder-agent-<agent pid>-…`, beneath the agent's own cgroup,
which is the reaper's too), killing whatever is still in them, so none is left behind in a cgroup it does not own.
After a clean shutdown nothing is listed, nothing carries the mark and no such cgroup is left, and it just exits.

While groups are listed it checks every `PRUNE_EVERY` seconds which are gone and forgets them, so an entry the agent
could not withdraw never names a group id the system has since handed to someone else.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import time

GRACE = 3.0
"""After SIGTERM, how long the groups get to exit before SIGKILL (more than a command's supervisor gives its command,
`sandbox.supervisor.KILL_AFTER`, so that it can end everything the command started first)."""
CGROUPS = "/sys/fs/cgroup"
PRUNE_EVERY = 2.0


def group_alive(pgid: int) -> bool:
    """Whether process group `pgid` has a member we may signal (a group we may not signal is not ours)."""
    return _signal(True, pgid, 0)


def marked(mark: bytes) -> set[int]:
    """The processes we may read whose environment holds the entry `mark` (Linux's /proc; elsewhere none)."""
    found: set[int] = set()
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc"):
            if name.isdigit():
                with contextlib.suppress(OSError), open(f"/proc/{name}/environ", "rb") as environ:
                    if mark in environ.read().split(b"\0"):
                        found.add(int(name))
    found.discard(os.getpid())
    return found


def end(groups: set[int], pids: set[int]) -> None:
    """SIGTERM every group and process, wait up to GRACE for them to go, SIGKILL the rest."""
    for pgid in groups:
        _signal(True, pgid, signal.SIGTERM)
    for pid in pids:
        _signal(False, pid, signal.SIGTERM)
    deadline = time.monotonic() + GRACE
    while (groups or pids) and time.monotonic() < deadline:
        time.sleep(0.02)
        groups = {pgid for pgid in groups if group_alive(pgid)}
        pids = {pid for pid in pids if _signal(False, pid, 0)}
    for pgid in groups:
        _signal(True, pgid, signal.SIGKILL)
    for pid in pids:
        _signal(False, pid, signal.SIGKILL)


def remove_cgroups(agent: str) -> None:
    """Kill what is in the agent's leftover session cgroups, and remove them."""
    try:
        with open("/proc/self/cgroup") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers not in ("pids", "memory", ""):
            continue
        base = os.path.join(CGROUPS, controllers, path.lstrip("/")) if controllers else CGROUPS + path
        with contextlib.suppress(OSError):
            for name in os.listdir(base):
                if name.startswith(f"coder-agent-{agent}-"):
                    _remove_cgroup(os.path.join(base, name))


def _remove_cgroup(folder: str) -> None:
    for _ in range(50):
        try:
            with open(os.path.join(folder, "cgroup.procs")) as handle:
                pids = {int(p) for p in handle.read().split()}
        except OSError:
            return
        if not pids:
            break
        for pid in pids:
            _signal(False, pid, signal.SIGKILL)
        time.sleep(0.02)
    with contextlib.suppress(OSError):
        os.rmdir(folder)


def _signal(group: bool, target: int, sig: int) -> bool:
    """Send `sig` to a process group or a process (0: only ask whether we may); False if it is gone or not ours."""
    try:
        if group:
            os.killpg(target, sig)
        else:
            os.kill(target, sig)
    except OSError:
        return False
    return True


def watch(fd: int) -> set[int]:
    """Read announcements from `fd` until end of file; return the groups still listed then."""
    groups: set[int] = set()
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    buffer = b""
    while True:
        if not poller.poll(PRUNE_EVERY * 1000 if groups else None):
            groups = {pgid for pgid in groups if group_alive(pgid)}
            continue
        chunk = os.read(fd, 4096)
        if not chunk:
            return groups
        *lines, buffer = (buffer + chunk).split(b"\n")
        for line in lines:
            try:
                pgid = int(line[1:])
            except ValueError:
                continue
            if line.startswith(b"+") and pgid > 1:
                groups.add(pgid)
            elif line.startswith(b"-"):
                groups.discard(pgid)


def main(argv: list[str]) -> int:
    if len(argv) != 3 or not argv[1].isdigit() or not argv[2].startswith("CODER_AGENT_OWNER="):
        print("usage: reaper.py FD MARK (started by coder_agent.process, not by hand)", file=sys.stderr)
        return 2
    for sig in (signal.SIGINT, signal.SIGHUP):  # a terminal's Ctrl-C or hangup is for the agent, not for us
        signal.signal(sig, signal.SIG_IGN)
    groups = watch(int(argv[1]))
    end(groups, marked(argv[2].encode()))
    remove_cgroups(argv[2].partition("=")[2].partition(".")[0])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
