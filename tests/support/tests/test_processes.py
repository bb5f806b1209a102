"""Tests for tests/support/processes.py on real processes: what counts as alive, who is in a group, what a
process left behind, and waiting until they are gone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import anyio
import pytest

from tests.support.processes import (
    HAS_PROC,
    alive,
    command_line,
    descendants,
    group_alive,
    group_members,
    wait_gone,
    wait_groups_gone,
)

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not hasattr(os, "killpg"), reason="process groups are POSIX"),
]
needs_proc = pytest.mark.skipif(not HAS_PROC, reason="needs /proc")

# A session leader with a child; prints "<child pid>" once the child runs, then waits for it.
LEADER_AND_CHILD = "sleep 300 & echo $!; wait"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(["sleep", "300"])
    yield process
    if process.returncode is None:
        process.kill()
        process.wait()


@pytest.fixture
def group() -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """A new session (its own process group): the leader and its child's pid."""
    leader = subprocess.Popen(["sh", "-c", LEADER_AND_CHILD], stdout=subprocess.PIPE, start_new_session=True)
    assert leader.stdout is not None
    child = int(leader.stdout.readline())
    yield leader, child
    if group_alive(leader.pid):
        os.killpg(leader.pid, signal.SIGKILL)
    leader.wait()
    leader.stdout.close()


async def test_a_sleeping_child_is_alive_until_killed_and_reaped(sleeper: subprocess.Popen[bytes]) -> None:
    assert alive(sleeper.pid)
    sleeper.kill()
    sleeper.wait()
    assert not alive(sleeper.pid)
    await wait_gone(sleeper.pid, timeout=1)  # returns at once


@needs_proc
def test_a_zombie_is_not_alive(sleeper: subprocess.Popen[bytes]) -> None:
    sleeper.kill()
    os.waitid(os.P_PID, sleeper.pid, os.WEXITED | os.WNOWAIT)  # it has exited, and nobody reaped it yet
    assert not alive(sleeper.pid)
    assert command_line(sleeper.pid) == ""  # a zombie has no command line left
    sleeper.wait()


@needs_proc
def test_command_line_joins_the_arguments(sleeper: subprocess.Popen[bytes]) -> None:
    # Popen returns as the child's exec begins; on a busy machine /proc may show no arguments for a moment more.
    deadline = time.monotonic() + 10
    while command_line(sleeper.pid) == "" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert command_line(sleeper.pid) == "sleep 300"


@needs_proc
def test_group_members_lists_the_leader_and_its_child(group: tuple[subprocess.Popen[bytes], int]) -> None:
    leader, child = group
    assert group_members(leader.pid) == sorted([leader.pid, child])
    assert group_alive(leader.pid)
    assert os.getpid() in group_members(os.getpgrp()), "a group of its own: ours is not the leader's"
    assert leader.pid not in group_members(os.getpgrp())


@needs_proc
def test_descendants_finds_a_grandchild() -> None:
    code = "import subprocess, sys; p = subprocess.Popen(['sleep', '300']); print(p.pid, flush=True); p.wait()"
    with subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE) as parent:
        assert parent.stdout is not None
        grandchild = int(parent.stdout.readline())
        try:
            found = descendants(os.getpid())
            assert parent.pid in found and grandchild in found
            assert found.index(parent.pid) < found.index(grandchild), "children come first"
            assert descendants(parent.pid) == [grandchild]
        finally:
            os.kill(grandchild, signal.SIGKILL)


async def test_wait_groups_gone_returns_once_the_whole_group_ended(group: tuple[subprocess.Popen[bytes], int]) -> None:
    leader, child = group
    os.killpg(leader.pid, signal.SIGKILL)
    await wait_gone(child)  # the orphaned child is reaped by init, the leader by us below
    assert await anyio.to_thread.run_sync(leader.wait) == -signal.SIGKILL
    await wait_groups_gone(leader.pid)
    assert not group_alive(leader.pid)


async def test_wait_gone_and_wait_groups_gone_give_up_with_timeout_error(
    sleeper: subprocess.Popen[bytes], group: tuple[subprocess.Popen[bytes], int]
) -> None:
    with pytest.raises(TimeoutError):
        await wait_gone(sleeper.pid, timeout=0.05)
    with pytest.raises(TimeoutError):
        await wait_groups_gone(group[0].pid, timeout=0.05)
    assert alive(sleeper.pid)
