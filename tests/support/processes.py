"""What tests ask about processes: is one alive, who is in a group, what a process left behind, and waiting
until they are gone. Linux answers from /proc; elsewhere only what signal 0 can tell."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import anyio

_PROC = Path("/proc")
HAS_PROC = (_PROC / "self" / "stat").exists()


def _stat_fields(pid: int | str) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (state, ppid, pgrp, …), or None once it is gone."""
    try:
        stat = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting for its reaper does not count)."""
    if not HAS_PROC:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    fields = _stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def group_alive(pgid: int) -> bool:
    """Whether any process of group `pgid` is left (zombies included: the kernel still holds the group)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _table() -> Iterable[tuple[int, list[str]]]:
    for entry in _PROC.iterdir():
        if entry.name.isdigit() and (fields := _stat_fields(entry.name)) is not None:
            yield int(entry.name), fields


def group_members(*pgids: int) -> list[int]:
    """Live processes (zombies excluded) of the process groups `pgids`."""
    if not HAS_PROC:
        return sorted(pgid for pgid in pgids if group_alive(pgid))
    wanted = set(pgids)
    return sorted(pid for pid, fields in _table() if int(fields[2]) in wanted and fields[0] not in ("Z", "X"))


def descendants(pid: int) -> list[int]:
    """Every process below `pid` in the process tree, children first."""
    children: dict[int, list[int]] = {}
    for child, fields in _table():
        children.setdefault(int(fields[1]), []).append(child)
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def command_line(pid: int) -> str:
    """The command line of `pid`, spaces between arguments ("" once it is gone)."""
    try:
        return (_PROC / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


async def wait_gone(*pids: int, timeout: float = 10) -> None:
    """Wait until none of `pids` runs; TimeoutError after `timeout` seconds."""
    with anyio.fail_after(timeout):
        while any(alive(pid) for pid in pids):
            await anyio.sleep(0.02)


async def wait_groups_gone(*pgids: int, timeout: float = 10) -> None:
    """Wait until the process groups `pgids` are empty; TimeoutError after `timeout` seconds."""
    with anyio.fail_after(timeout):
        while any(group_alive(pgid) for pgid in pgids):
            await anyio.sleep(0.02)


def carrying(entry: str) -> list[int]:
    """The processes whose environment holds `entry` (`NAME=value`); Linux only (elsewhere none)."""
    needle = entry.encode()
    found = []
    for path in _PROC.glob("[0-9]*/environ") if HAS_PROC else ():
        try:
            if needle in path.read_bytes().split(b"\0"):
                found.append(int(path.parent.name))
        except OSError:
            continue
    return found


async def wait_carried(entry: str, *, present: bool, timeout: float = 20) -> None:
    """Wait until some process carries `entry` in its environment (or, with `present=False`, none does)."""
    with anyio.fail_after(timeout):
        while bool(carrying(entry)) != present:
            await anyio.sleep(0.02)
