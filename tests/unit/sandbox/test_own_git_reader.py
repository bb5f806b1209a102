"""The session's walled reader (`own_git.WalledReader`): the agent's own git runs inside the walls through one
process started there, which is started again when the walls change (a `.git` a command made), after a request
was cancelled midway, and which ends with the sandbox."""

from __future__ import annotations

from pathlib import Path

import anyio
import anyio.abc
import pytest

from coder_agent import own_git
from coder_agent.sandbox import probe
from coder_agent.sandbox.command import CommandSandbox
from coder_agent.sandbox.settings import SandboxConfig
from tests.support.git_traps import make_repo
from tests.support.processes import wait_gone

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not probe.check().available, reason=f"no sandbox here: {probe.check().reason}"),
]


async def status(work: Path, sandbox: CommandSandbox) -> own_git.Ran:
    return await own_git.run(["status", "--porcelain=v1", "--branch"], root=work, cwd=work, sandbox=sandbox)


def reader_pid(sandbox: CommandSandbox) -> int:
    started = own_git.reader_for(sandbox)._process
    assert started is not None
    return started.pid


async def test_one_reader_serves_the_turns(work: Path, tasks: anyio.abc.TaskGroup) -> None:
    sandbox = await CommandSandbox.open((work,), SandboxConfig(), probe.check(), tasks)
    try:
        make_repo(work)
        first = await status(work, sandbox)
        assert first.ok and b"## main" in first.out
        pid = reader_pid(sandbox)
        for _ in range(3):
            assert (await status(work, sandbox)).ok
        assert reader_pid(sandbox) == pid  # the same process: the walls went up once
    finally:
        await sandbox.aclose()


async def test_a_reader_started_before_the_repository_existed_is_replaced(
    work: Path, tasks: anyio.abc.TaskGroup
) -> None:
    sandbox = await CommandSandbox.open((work,), SandboxConfig(), probe.check(), tasks)
    try:
        (work / "sub").mkdir()
        make_repo(work / "sub")
        assert (await own_git.run(["status"], root=work / "sub", cwd=work / "sub", sandbox=sandbox)).ok
        before = reader_pid(sandbox)
        make_repo(work)  # the session folder becomes a repository: its .git is pinned from now on
        assert (await status(work, sandbox)).ok
        assert reader_pid(sandbox) != before
        await wait_gone(before)
    finally:
        await sandbox.aclose()


async def test_a_cancelled_request_leaves_no_half_answer_and_the_reader_ends_with_the_sandbox(
    work: Path, tasks: anyio.abc.TaskGroup
) -> None:
    sandbox = await CommandSandbox.open((work,), SandboxConfig(), probe.check(), tasks)
    try:
        make_repo(work)
        with anyio.move_on_after(0):
            await status(work, sandbox)
        found = await status(work, sandbox)
        assert found.ok and found.out.startswith(b"## main")
        pid = reader_pid(sandbox)
    finally:
        await sandbox.aclose()
    await wait_gone(pid)
