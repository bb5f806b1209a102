"""A session's pids cgroup: how many processes its sandboxed commands may run at once, when the agent runs as root.

RLIMIT_NPROC holds an ordinary user (the launcher sets it inside the command's user namespace) but not root, whom
the kernel exempts. So a root agent gives each sandboxed session a pids cgroup of its own, where the kernel can hold
it: the cgroup v1 `pids` hierarchy, or the cgroup v2 root when the agent lives there (a container) and may enable
the `pids` controller. Every command of the session joins it before its walls go up (`linux._limits`); closing the
session kills what is left in it and removes it. Elsewhere there is none, and `Walls.describe` says what holds.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import uuid
from pathlib import Path

log = logging.getLogger(__name__)

V1_PIDS = Path("/sys/fs/cgroup/pids")
V2_ROOT = Path("/sys/fs/cgroup")


def make_pids_group(limit: int) -> Path | None:
    """A new pids cgroup holding at most `limit` processes, or None where one cannot be made (not root, no
    controller, a read-only cgroup file system)."""
    if os.getuid() != 0:
        return None
    for base in _bases():
        group = base / f"coder-agent-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        try:
            group.mkdir()
        except OSError:
            continue
        try:
            (group / "pids.max").write_text(str(limit))
        except OSError:
            with contextlib.suppress(OSError):
                group.rmdir()
            continue
        return group
    return None


def _bases() -> list[Path]:
    bases = []
    if (V1_PIDS / "cgroup.procs").exists():
        bases.append(V1_PIDS)
    controllers = V2_ROOT / "cgroup.controllers"
    if controllers.exists() and _in_v2_root():
        try:
            if "pids" in controllers.read_text().split():
                (V2_ROOT / "cgroup.subtree_control").write_text("+pids")
                bases.append(V2_ROOT)
        except OSError:
            pass
    return bases


def _in_v2_root() -> bool:
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return False
    return "0::/" in lines


def remove_group(group: Path) -> None:
    """Kill whatever is left in the cgroup and remove it."""
    for _ in range(50):
        try:
            pids = [int(p) for p in (group / "cgroup.procs").read_text().split()]
        except OSError:
            break
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG)
    try:
        group.rmdir()
    except OSError as exc:
        log.warning("could not remove the pids cgroup %s: %s", group, exc.strerror)
