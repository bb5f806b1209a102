"""MCP servers end with the agent: stdin EOF and SIGTERM leave no server process behind."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import anyio
import pytest

from tests.support.fake_llm import FakeLLM, Reply, ToolCall
from tests.support.spawn import spawned_agent

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[-1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.parametrize("how", ["eof", "sigterm"])
async def test_mcp_servers_end_with_the_agent(tmp_path: Path, fake_llm: FakeLLM, how: str) -> None:
    fake_llm.script([Reply(tool_calls=[ToolCall("mcp__tools__peek", {})]), Reply("peeked")])
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
    with anyio.fail_after(5):
        while any(alive(pid) for pid in children):
            await anyio.sleep(0.05)
    assert "peeked" in client.agent_text(result["sessionId"])
