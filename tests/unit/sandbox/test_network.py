"""The session's network, for real: a server one sandboxed command starts (a background job, say) is reachable from
the session's next commands, whichever way they start (the fork server for local commands, the launcher for the
editor's terminal), and from no other session's; the process holding the namespace is out of the commands' reach,
is started again when it died, and ends with the session; a command told to join a namespace that is not the
session's any more runs nothing."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import anyio
import pytest

from coder_agent.process import PipedLeader
from coder_agent.sandbox import probe
from coder_agent.sandbox.command import CommandSandbox
from coder_agent.sandbox.settings import SandboxConfig
from coder_agent.sandbox.spec import SPEC_VARIABLE, decode, encode
from coder_agent.secrets import child_environ
from tests.support.processes import alive
from tests.support.sandbox_network import (
    AS_NOBODY,
    CLIENT,
    SERVER,
    WAIT,
    first_line,
    held_as_nobody,
    stopped,
    through_launcher,
)

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not probe.check().available, reason=f"no sandbox here: {probe.check().reason}"),
    pytest.mark.skipif(probe.check().kind != "landlock", reason="the shared network is Linux's"),
]


async def opened(work: Path, tasks: anyio.abc.TaskGroup, settings: SandboxConfig | None = None) -> CommandSandbox:
    return await CommandSandbox.open((work,), settings or SandboxConfig(max_processes=256), probe.check(), tasks)


async def started_server(sandbox: CommandSandbox, work: Path) -> tuple[PipedLeader, int]:
    """A server started like a local background job (through the fork server); its port."""
    process = await sandbox.start(["python3", "-c", SERVER], work, child_environ())
    return process, int(await first_line(process))


async def test_a_server_a_job_starts_is_reachable_from_the_sessions_next_commands_both_ways(
    work: Path, tasks: anyio.abc.TaskGroup
) -> None:
    sandbox = await opened(work, tasks)
    try:
        server, port = await started_server(sandbox, work)
        try:
            served = await sandbox.start(["python3", "-c", CLIENT, str(port)], work, child_environ())
            assert await first_line(served) == "pong"
            with anyio.fail_after(WAIT):
                await served.wait()
            assert await through_launcher(sandbox, work, ["python3", "-c", CLIENT, str(port)]) == (0, "pong\n")
            outside = await anyio.run_process(["python3", "-c", CLIENT, str(port)], check=False)
            assert outside.stdout.decode().startswith("refused:"), "the machine's loopback is another one"
        finally:
            await stopped(server)
    finally:
        await sandbox.aclose()


async def test_another_sessions_commands_cannot_reach_it(work: Path, tasks: anyio.abc.TaskGroup) -> None:
    ours, theirs = await opened(work, tasks), await opened(work, tasks)
    try:
        server, port = await started_server(ours, work)
        try:
            code, output = await through_launcher(theirs, work, ["python3", "-c", CLIENT, str(port)])
            assert output.startswith("refused: Connection refused"), output
        finally:
            await stopped(server)
    finally:
        await ours.aclose()
        await theirs.aclose()


async def test_the_holder_is_out_of_reach_and_ends_with_the_session(work: Path, tasks: anyio.abc.TaskGroup) -> None:
    sandbox = await opened(work, tasks)
    assert sandbox.network is not None
    try:
        assert await through_launcher(sandbox, work, ["true"]) == (0, "")
        holder = sandbox.network.holder_pid
        assert holder is not None
        code, output = await through_launcher(
            sandbox, work, ["bash", "-c", f"kill -9 {holder}; kill -STOP {holder}; echo sent"]
        )
        assert "No such process" in output and alive(holder)  # its pid means nothing in the command's namespace
        leave = (
            "import ctypes, os\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "for pid in (1, os.getppid()):\n"
            "    try:\n"
            "        fd = os.open(f'/proc/{pid}/ns/net', os.O_RDONLY)\n"
            "    except OSError as exc:\n"
            "        print('open', exc.strerror); continue\n"
            "    print('setns', libc.setns(fd, 0x40000000), os.strerror(ctypes.get_errno()))\n"
        )
        code, output = await through_launcher(sandbox, work, ["python3", "-c", leave])
        assert code == 0 and len(output.splitlines()) == 2, output
        assert all(line.startswith(("open Permission denied", "setns -1")) for line in output.splitlines()), output
    finally:
        await sandbox.aclose()
    with anyio.fail_after(WAIT):
        while alive(holder):
            await anyio.sleep(0.02)


async def test_a_holder_that_died_is_started_again(work: Path, tasks: anyio.abc.TaskGroup) -> None:
    sandbox = await opened(work, tasks)
    assert sandbox.network is not None
    try:
        assert await through_launcher(sandbox, work, ["true"]) == (0, "")
        first = sandbox.network.holder_pid
        assert first is not None
        os.kill(first, signal.SIGKILL)  # the OOM killer, say
        with anyio.fail_after(WAIT):
            while sandbox.network.holder_pid is not None:
                await anyio.sleep(0.02)
        server, port = await started_server(sandbox, work)
        try:
            assert await through_launcher(sandbox, work, ["python3", "-c", CLIENT, str(port)]) == (0, "pong\n")
        finally:
            await stopped(server)
        assert sandbox.network.holder_pid not in (None, first)
    finally:
        await sandbox.aclose()


async def test_a_namespace_that_is_not_the_sessions_any_more_runs_nothing(
    work: Path, tasks: anyio.abc.TaskGroup
) -> None:
    sandbox = await opened(work, tasks)
    try:
        argv, env = await sandbox.launch(["touch", str(work / "ran")])
        walls = decode(env[SPEC_VARIABLE])
        holder, *identity = walls["network"][0].split(":")
        for pid in (os.getpid(), 1):  # the holder's pid came back as another process (in the machine's namespaces)
            walls["network"] = [":".join([str(pid), *identity])]
            done = await anyio.run_process(
                argv, env={**child_environ(), **env, SPEC_VARIABLE: encode(walls)}, cwd=work, check=False
            )
            assert done.returncode == 125, done.stderr
            assert "the session's network is gone" in done.stderr.decode()
        walls["network"] = [":".join([holder, identity[0], "12345"])]  # the holder, but another namespace's cookie
        done = await anyio.run_process(
            argv, env={**child_environ(), **env, SPEC_VARIABLE: encode(walls)}, cwd=work, check=False
        )
        assert done.returncode == 125 and "the session's network is gone" in done.stderr.decode()
        assert not (work / "ran").exists()
    finally:
        await sandbox.aclose()


@pytest.mark.skipif(os.getuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv")
async def test_an_unprivileged_users_network_has_a_user_namespace_of_its_own() -> None:
    """The agent run by an ordinary user: the holder makes a user namespace too, and commands join both."""
    async with held_as_nobody() as network:
        assert network.entry.endswith(":user"), "a user namespace besides the network one"
        launcher = [*AS_NOBODY, *probe.launcher_argv(), "--"]
        async with await anyio.open_process(
            [*launcher, "python3", "-c", SERVER], env=network.env, cwd=network.folder, stderr=None
        ) as server:
            assert server.stdout is not None
            with anyio.fail_after(WAIT):
                port = int((await server.stdout.receive()).decode())
            done = await anyio.run_process(
                [*launcher, "python3", "-c", CLIENT, str(port)], env=network.env, cwd=network.folder
            )
            assert done.stdout == b"pong\n"
            server.kill()


async def test_an_mcp_servers_ports_are_out_of_the_sessions_commands_reach(
    work: Path, tasks: anyio.abc.TaskGroup
) -> None:
    """A sandboxed MCP server gets a network of its own (`shared_network=False`): a port it listens on (a browser's
    debugging port, say) must not let `run_command` around its tools' permission questions."""
    sandbox = await opened(work, tasks)
    try:
        argv, env = await sandbox.launch(["python3", "-c", SERVER], shared_network=False)
        async with await anyio.open_process(argv, env={**child_environ(), **env}, cwd=work, stderr=None) as server:
            assert server.stdout is not None
            with anyio.fail_after(WAIT):
                port = int((await server.stdout.receive()).decode())
            code, output = await through_launcher(sandbox, work, ["python3", "-c", CLIENT, str(port)])
            assert output.startswith("refused: Connection refused"), output
            server.kill()
    finally:
        await sandbox.aclose()


async def test_no_holder_is_started_once_the_session_closes(work: Path, tasks: anyio.abc.TaskGroup) -> None:
    """A command launched while the session closes (a job racing the close) gets a network of its own, and no
    holder is left to outlive the session."""
    sandbox = await opened(work, tasks)
    assert sandbox.network is not None
    await sandbox.launch(["true"])
    holder = sandbox.network.holder_pid
    assert holder is not None
    await sandbox.network.aclose()
    _, env = await sandbox.launch(["true"])
    assert "network" not in decode(env[SPEC_VARIABLE]) and sandbox.network.holder_pid is None
    await sandbox.aclose()
    assert not alive(holder)
