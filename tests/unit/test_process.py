"""Tests for coder_agent.process and coder_agent.reaper with real processes: a stopped group leaves nothing behind,
and groups end with their owner even when it is SIGKILLed, even after its reaper was killed first, and so does
a process that left its group."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from coder_agent import reaper
from coder_agent.process import (
    OWNER_MARK,
    OWNER_VARIABLE,
    child_env,
    find_program,
    run_sync,
    spawn_group,
    stop_group,
)
from tests.support.processes import HAS_PROC, group_alive, wait_gone, wait_groups_gone

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not hasattr(os, "killpg"), reason="process groups are POSIX"),
]

ROOT = Path(__file__).resolve().parents[2]
STUBBORN = "trap '' TERM; sleep 300 & echo ready; wait"
"""A shell that ignores SIGTERM, with a child that ignores it too."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_stop_group_ends_the_leader_and_what_it_left_behind() -> None:
    process = await spawn_group(["bash", "-c", STUBBORN], stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert process.stdout is not None
    assert await process.stdout.receive() == b"ready\n"
    await stop_group(process, grace=0.2)
    assert process.returncode == -signal.SIGKILL
    await wait_groups_gone(process.pid)  # its child, killed too, may still wait for init to reap it


async def test_stop_group_lets_a_polite_process_exit_on_stdin_close() -> None:
    process = await spawn_group([sys.executable, "-c", "import sys; sys.stdin.read()"], stderr=subprocess.DEVNULL)
    await stop_group(process, stdin_grace=30)
    assert process.returncode == 0


async def test_the_reaper_ends_announced_groups_and_marked_processes_when_its_pipe_closes() -> None:
    mark = f"CODER_AGENT_OWNER=test.{os.getpid()}"
    stubborn = await anyio.open_process(["bash", "-c", STUBBORN], start_new_session=True, stderr=subprocess.DEVNULL)
    withdrawn = await anyio.open_process(["sleep", "300"], start_new_session=True)
    marked_env = {**os.environ, "CODER_AGENT_OWNER": mark.partition("=")[2]}
    unannounced = await anyio.open_process(["sleep", "300"], start_new_session=True, env=marked_env)
    other_mark = {**os.environ, "CODER_AGENT_OWNER": "another-agent"}
    another_agents = await anyio.open_process(["sleep", "300"], start_new_session=True, env=other_mark)
    try:
        assert stubborn.stdout is not None
        assert await stubborn.stdout.receive() == b"ready\n"
        read_fd, write_fd = os.pipe()
        watcher = await anyio.open_process(
            [sys.executable, "-I", "-S", reaper.__file__, str(read_fd), mark],
            pass_fds=(read_fd,),
            start_new_session=True,
        )
        os.close(read_fd)
        os.write(write_fd, f"+{stubborn.pid}\n+{withdrawn.pid}\nnot a line\n+\n-{withdrawn.pid}\n".encode())
        os.close(write_fd)  # as the kernel does when the agent dies
        with anyio.fail_after(20):
            assert await watcher.wait() == 0
        await watcher.aclose()
        await wait_groups_gone(stubborn.pid)  # it ignores SIGTERM, so SIGKILL must have followed
        if HAS_PROC:  # Linux: the reaper also finds processes by the mark in their environment
            with anyio.fail_after(10):
                assert await unannounced.wait() == -signal.SIGTERM, "never announced, but it carries the mark"
        assert withdrawn.returncode is None, "a withdrawn group is left alone"
        assert another_agents.returncode is None, "another agent's processes are left alone"
    finally:
        for process in (stubborn, withdrawn, unannounced, another_agents):
            if group_alive(process.pid):
                os.killpg(process.pid, signal.SIGKILL)
            await process.aclose()


OWNER = """
import os, signal, subprocess, anyio
from coder_agent.process import reaper_pid, spawn_group

async def main():
    quiet = dict(stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    first = await spawn_group(["bash", "-c", STUBBORN], **quiet)
    assert await first.stdout.receive() == b"ready\\n"
    killed = reaper_pid()
    os.kill(killed, signal.SIGKILL)  # the reaper dies first: the next spawn must start another and tell it all
    os.waitpid(killed, 0)
    second = await spawn_group(["sleep", "300"], **quiet)
    third = await spawn_group(["bash", "-c", "setsid sleep 300 & echo $!; wait"], **quiet)
    left_its_group = int(await third.stdout.receive())
    print(first.pid, second.pid, left_its_group, flush=True)
    print(killed, reaper_pid(), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)

anyio.run(main)
"""


@pytest.mark.skipif(not HAS_PROC, reason="needs /proc")
async def test_groups_end_with_a_sigkilled_owner_even_after_its_reaper_was_killed_or_they_left() -> None:
    code = f"STUBBORN = {STUBBORN!r}\n{OWNER}"
    owner = await anyio.run_process(
        [sys.executable, "-c", code], check=False, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    assert owner.returncode == -signal.SIGKILL, owner.stderr.decode()
    groups, reapers = owner.stdout.decode().splitlines()
    first, second, left_its_group = (int(pid) for pid in groups.split())
    try:
        killed, restarted = reapers.split()
        assert restarted.isdigit() and restarted != killed, "a new reaper was started"
        await wait_groups_gone(first, second, left_its_group)  # the last one found by the mark its environment carries
        await wait_gone(int(restarted))  # and the reaper itself is gone after its work
    finally:
        for pgid in (first, second, left_its_group):
            if group_alive(pgid):
                os.killpg(pgid, signal.SIGKILL)


async def test_children_start_from_the_scrubbed_environment_with_the_owner_mark(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GH_TOKEN", "ghp_process_test_0123456789")
    monkeypatch.setenv("PLAIN_SETTING", "kept")
    env = child_env({"EXTRA": "1"})
    assert "GH_TOKEN" not in env and env["PLAIN_SETTING"] == "kept" and env["EXTRA"] == "1"
    assert env[OWNER_VARIABLE] == OWNER_MARK.partition("=")[2]
    process = await spawn_group([sys.executable, "-c", "import os; print(sorted(os.environ))"], stderr=None)
    assert process.stdout is not None
    seen = b"".join([chunk async for chunk in process.stdout]).decode()
    await stop_group(process)
    assert "GH_TOKEN" not in seen and "PLAIN_SETTING" in seen and OWNER_VARIABLE in seen


async def test_run_sync_kills_the_whole_group_at_its_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pid_file = tmp_path / "child.pid"
    with pytest.raises(subprocess.TimeoutExpired):
        run_sync(["bash", "-c", f"sleep 300 & echo $! > {pid_file}; wait"], timeout=1.0)
    await wait_gone(int(pid_file.read_text()))  # the leader's child went with it
    monkeypatch.setenv("GH_TOKEN", "ghp_process_test_0123456789")
    done = run_sync(["bash", "-c", "echo $GH_TOKEN-x"], timeout=30)
    assert done.returncode == 0 and done.stdout.strip() == b"-x"


def test_find_program_passes_over_what_lies_inside_the_folders_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A program in a folder a command may write is passed over on PATH, however the entry leads there (directly,
    through a symlink outside, relatively); the first one outside is taken, and None when there is none."""
    work, system = tmp_path / "work", tmp_path / "system"
    for folder in (work / ".venv" / "bin", system):
        folder.mkdir(parents=True)
        (folder / "tool").write_text("#!/bin/sh\nexit 0\n")
        (folder / "tool").chmod(0o755)
    (tmp_path / "link").symlink_to(work / ".venv" / "bin")
    entries = [str(work / ".venv" / "bin"), str(tmp_path / "link"), "work/.venv/bin", str(system)]
    monkeypatch.setenv("PATH", os.pathsep.join(entries))
    monkeypatch.chdir(tmp_path)
    assert find_program("tool") == str(work / ".venv" / "bin" / "tool")  # nothing kept out: the first
    assert find_program("tool", outside=[work]) == str(system / "tool")
    assert find_program("tool", outside=[work, system]) is None
    assert find_program("no-such-tool", outside=[work]) is None
