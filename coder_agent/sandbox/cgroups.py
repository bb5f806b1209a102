"""A session's cgroup: how many processes, and how much memory, its sandboxed commands may use together, where the
kernel lets the agent make one.

RLIMIT_NPROC holds an ordinary user (the launcher sets it inside the command's user namespace) but not root, whom the
kernel exempts, and no rlimit bounds the memory of a group of processes. So where it can, the agent makes each
sandboxed session a group of its own, *beneath the agent's own cgroup* (so whatever limits the agent, an editor's
or a container's, still holds its commands too):

- cgroup v1 (root): a group in each of the `pids` and `memory` hierarchies the agent may write;
- cgroup v2: a group with the `pids` and `memory` controllers, where the agent may enable them for its own cgroup's
  children, which the kernel allows only when no process lives in that cgroup itself: the cgroup v2 root (root in a
  container whose cgroup is the root).

Every command of the session joins it before its walls go up (`linux.join_cgroups`; the fork server joins it once,
and its children are born there), and the session's network holder too; closing the session kills what is left in
it and removes it. Elsewhere there is none: on a desktop, the
user's own cgroups are systemd's, the agent shares its editor's, and a controller cannot be enabled below a cgroup
processes live in. There the processes are held by RLIMIT_NPROC and the memory by nothing of ours (run the agent
under `systemd-run --user --scope -p MemoryMax=…` to bound it and everything it starts). Which processes belong to a
command does not depend on any of this: each command has a PID namespace of its own (`sandbox/supervisor.py`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

ROOT = Path("/sys/fs/cgroup")
SWAP_SHARE = 1
"""Swap a session's commands may use besides their memory, as a multiple of the memory limit."""


@dataclass(frozen=True)
class SessionGroup:
    """One session's cgroup: a folder per hierarchy (v1), or one folder (v2); what it limits."""

    folders: tuple[Path, ...]
    max_processes: int | None
    max_memory: int | None
    """Bytes, or None where no memory controller could be had."""

    def describe(self) -> str:
        parts = []
        if self.max_processes is not None:
            parts.append(f"{self.max_processes} processes")
        if self.max_memory is not None:
            parts.append(f"{self.max_memory >> 20} MiB of memory (and as much in swap)")
        return f"limits of the session's commands together (a cgroup): {', '.join(parts)}"


def default_memory() -> int:
    """Three quarters of this machine's memory: a runaway command is stopped before the agent and the editor are."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") * 3 // 4
    except (OSError, ValueError):
        return 8 << 30


def make_session_group(max_processes: int, max_memory: int) -> SessionGroup | None:
    """A new cgroup for a session's commands, limited as far as this machine allows, or None where none can be made
    or it would limit nothing."""
    name = f"coder-agent-{os.getpid()}-{os.urandom(4).hex()}"
    own = _own_cgroups()
    v1 = {kind: ROOT / kind / own[kind].lstrip("/") for kind in ("pids", "memory") if kind in own}
    folders: list[Path] = []
    processes = memory = None
    if "pids" in v1 and (folder := _make(v1["pids"] / name, {"pids.max": str(max_processes)})) is not None:
        folders.append(folder)
        processes = max_processes
    if "memory" in v1:
        limits = {"memory.limit_in_bytes": str(max_memory)}
        if (v1["memory"] / "memory.memsw.limit_in_bytes").exists():
            limits["memory.memsw.limit_in_bytes"] = str(max_memory * (1 + SWAP_SHARE))
        if (folder := _make(v1["memory"] / name, limits)) is not None:
            folders.append(folder)
            memory = max_memory
    if not folders and own.get("") == "/" and (ROOT / "cgroup.controllers").exists():
        folder = _v2_group(ROOT / name, max_processes, max_memory)
        if folder is not None:
            folders.append(folder)
            processes, memory = max_processes, max_memory
    return SessionGroup(tuple(folders), processes, memory) if folders else None


def can_limit_memory() -> bool:
    """Whether a session's cgroup here could hold its memory (read without making one: for `initialize`)."""
    if os.getuid() != 0:
        return False
    own = _own_cgroups()
    if "memory" in own:
        return (ROOT / "memory" / own["memory"].lstrip("/")).is_dir()
    try:
        return own.get("") == "/" and "memory" in (ROOT / "cgroup.controllers").read_text().split()
    except OSError:
        return False


def _own_cgroups() -> dict[str, str]:
    """The agent's cgroup per v1 controller it names, and under "" its v2 cgroup."""
    own: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return own
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(","):
            own[controller] = path
    return own


def _make(folder: Path, limits: dict[str, str]) -> Path | None:
    """Make the cgroup and write its limits; None (and nothing left behind) where that is not allowed."""
    try:
        folder.mkdir()
    except OSError:
        return None
    try:
        for name, value in limits.items():
            (folder / name).write_text(value)
    except OSError as exc:
        log.debug("the cgroup %s could not be limited: %s", folder, exc)
        with contextlib.suppress(OSError):
            folder.rmdir()
        return None
    return folder


def _v2_group(folder: Path, max_processes: int, max_memory: int) -> Path | None:
    try:
        available = set((ROOT / "cgroup.controllers").read_text().split())
    except OSError:
        return None
    wanted = [c for c in ("pids", "memory") if c in available]
    if len(wanted) < 2:
        return None
    try:
        (ROOT / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in wanted))
    except OSError:
        return None
    limits = {"pids.max": str(max_processes), "memory.max": str(max_memory)}
    limits["memory.swap.max"] = str(max_memory * SWAP_SHARE)
    return _make(folder, limits)


def remove_group(group: SessionGroup) -> None:
    """Kill whatever is left in the cgroup and remove it."""
    for folder in group.folders:
        _empty(folder)
        try:
            folder.rmdir()
        except OSError as exc:
            log.warning("could not remove the cgroup %s: %s", folder, exc.strerror)


def _empty(folder: Path) -> None:
    kill = folder / "cgroup.kill"
    if kill.exists():  # cgroup v2 from Linux 5.14: the kernel kills them all, forks in flight included
        with contextlib.suppress(OSError):
            kill.write_text("1")
    for _ in range(50):
        try:
            pids = [int(p) for p in (folder / "cgroup.procs").read_text().split()]
        except OSError:
            return
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG)
