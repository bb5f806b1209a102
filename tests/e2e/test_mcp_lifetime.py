"""Child processes end with the agent: stdin EOF and SIGTERM leave no MCP server behind, and SIGKILL mid-command
leaves neither the command, nor what it started in the background, nor a stubborn MCP server and its child."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from functools import partial
from pathlib import Path

import anyio
import pytest

from tests.support.editor import FakeEditor
from tests.support.fake_llm import Call, FakeLLM, Reply
from tests.support.processes import alive, command_line, descendants, wait_gone
from tests.support.spawn import spawned_agent

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("how", ["eof", "sigterm"])
async def test_mcp_servers_end_with_the_agent(tmp_path: Path, fake_llm: FakeLLM, how: str) -> None:
    fake_llm.script([Reply(calls=[Call("mcp__tools__peek", {})]), Reply("peeked")])
    server = {
        "name": "tools",
        "command": sys.executable,
        "args": ["-m", "tests.support.mcp_servers.basic"],
        "env": [{"name": "PYTHONPATH", "value": str(ROOT)}],
    }
    async with spawned_agent(tmp_path, llm=fake_llm) as agent:
        client = agent.client
        await client.initialize()
        result = await client.request("session/new", {"cwd": str(tmp_path), "mcpServers": [server]}, timeout=60)
        assert await client.prompt(result["sessionId"], "peek", timeout=60) == "end_turn"
        children = descendants(agent.process.pid)
        assert children, "the MCP server runs as a child of the agent"
        if how == "eof":
            code = await agent.close_stdin_and_wait()
        else:
            agent.process.send_signal(signal.SIGTERM)
            with anyio.fail_after(10):
                code = await agent.process.wait()
    assert code == 0
    await wait_gone(*children, timeout=5)
    assert "peeked" in client.agent_text(result["sessionId"])


async def test_a_sigkilled_agent_takes_its_command_and_mcp_servers_with_it(tmp_path: Path, fake_llm: FakeLLM) -> None:
    work = tmp_path / "project"
    work.mkdir()
    started = tmp_path / "command.pids"
    # A local command (the editor has no terminal) that leaves a child in the background and then blocks.
    command = f"sleep 300 & echo $$ $! > {started}.tmp && mv {started}.tmp {started}; sleep 300"
    fake_llm.script([Reply(calls=[Call("run_command", {"command": command})]), Reply("never reached")])
    stubborn = {  # ignores stdin EOF and SIGTERM, and has a child of its own (tests/support/mcp_servers/crashy.py)
        "name": "stubborn",
        "command": sys.executable,
        "args": ["-m", "tests.support.mcp_servers.crashy"],
        "env": [{"name": "PYTHONPATH", "value": str(ROOT)}, {"name": "CRASHY_STUBBORN", "value": "1"}],
    }
    children: list[int] = []
    try:
        async with spawned_agent(tmp_path, llm=fake_llm) as agent:
            client = agent.client
            editor = FakeEditor(client, root=work, terminal=False)
            await client.initialize(editor.capabilities())
            session = await client.new_session(str(work), [stubborn])
            await client.request("session/set_mode", {"sessionId": session, "modeId": "full-auto"})
            prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "run it"}]}
            async with anyio.create_task_group() as task_group:
                task_group.start_soon(partial(client.request, "session/prompt", prompt, timeout=120))
                with anyio.fail_after(60):
                    while not started.exists():
                        await anyio.sleep(0.05)
                shell, background = (int(pid) for pid in started.read_text().split())
                with anyio.fail_after(30):  # on a loaded machine a fork shows its exec a moment later
                    while True:
                        children = descendants(agent.process.pid)
                        lines = {pid: command_line(pid) for pid in children}
                        if sum(line == "sleep 300" for line in lines.values()) >= 3:
                            break
                        await anyio.sleep(0.05)
                assert {shell, background} <= set(children)
                assert sum("crashy" in line for line in lines.values()) == 1, lines
                assert sum(line == "sleep 300" for line in lines.values()) == 3, lines  # bg, fg, the server's child
                agent.process.send_signal(signal.SIGKILL)
                with anyio.fail_after(10):
                    await agent.process.wait()
                task_group.cancel_scope.cancel()
            await editor.aclose()
        with contextlib.suppress(TimeoutError):
            await wait_gone(*children, timeout=15)
        left = {pid: command_line(pid) for pid in children if alive(pid)}
    finally:
        for pid in children:  # when the test fails, leave nothing running behind it
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    assert left == {}, f"still running after the agent was killed: {left}"
