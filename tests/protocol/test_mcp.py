"""MCP servers from the client: connected at session/new, their tools used by the model with the same
permission flow and visibility as built-in tools, failures reported without losing the session."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from coder_agent.model.scripted import Call, Reply, ScriptedModel
from tests.support.mcp_servers.basic_http import serve_http
from tests.support.processes import wait_gone
from tests.support.scripted_agent import tool_agent

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]


def stdio_server(name: str, module: str, **env: str) -> dict[str, Any]:
    variables = {"PYTHONPATH": str(ROOT), **env}
    return {
        "name": name,
        "command": sys.executable,
        "args": ["-m", f"tests.support.mcp_servers.{module}"],
        "env": [{"name": k, "value": v} for k, v in variables.items()],
    }


def tool_messages(model: ScriptedModel) -> list[Any]:
    return [m["content"] for m in model.last_request.messages if m["role"] == "tool"]


async def test_stdio_and_http_servers_are_used_by_the_model(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            Reply(calls=[Call("mcp__local__echo", {"text": "hello over stdio"})]),
            Reply(calls=[Call("mcp__web__add", {"a": 2, "b": 40})]),
            Reply(calls=[Call("mcp__local__env_var", {"name": "MCP_TEST_SECRET"})]),
            Reply(calls=[Call("mcp__local__image", {})]),
            Reply(calls=[Call("mcp__local__peek", {})]),
            Reply(calls=[Call("mcp__local__delete_everything", {})]),
            Reply("All tools used."),
        ]
    )
    with serve_http("http", name="web") as url:
        async with tool_agent(tmp_path, model, open_session=False) as (client, editor, _, work):
            servers = [
                stdio_server("local", "basic", MCP_TEST_SECRET="s3cret"),
                {"type": "http", "name": "web", "url": url, "headers": []},
            ]
            result = await client.request("session/new", {"cwd": str(work), "mcpServers": servers}, timeout=60)
            session = result["sessionId"]
            editor.permission_answers = ["allow_once"] * 4 + ["reject_once"]
            assert await client.prompt(session, "use the tools", timeout=60) == "end_turn"
            await client.prompt(session, "/mcp")
            report = client.agent_text(session)
            pids = [s.pid for s in client_hub_statuses(client, session) if s.pid]
            await client.request("session/close", {"sessionId": session})
            await wait_gone(*pids, timeout=10)
    tools = {t["function"]["name"]: t["function"] for t in model.requests[0].tools}
    assert "mcp__local__echo" in tools and "mcp__web__echo" in tools
    assert tools["mcp__local__add"]["parameters"]["properties"].keys() >= {"a", "b"}
    results = tool_messages(model)
    assert results[0] == "hello over stdio"
    assert "42" in results[1]
    assert results[2] == "s3cret", "env from the ACP request reaches the server"
    assert "a red pixel" in results[3] and "image(s) in the next message" in results[3]
    follow_up = [m for m in model.last_request.messages if m["role"] == "user" and isinstance(m["content"], list)]
    images = [part for part in follow_up[0]["content"] if part["type"] == "image_url"]
    assert images[0]["image_url"]["url"].startswith("data:image/png")
    assert "rejected" in results[5]
    asked = [r["toolCall"]["kind"] for r in editor.permission_requests]
    assert asked == ["other"] * 4 + ["delete"], "read-only peek does not ask; destructive is a delete"
    starts = client.session_updates(session, "tool_call")
    assert starts[0]["title"] == "local: echo"
    image_call = [u for u in client.session_updates(session, "tool_call_update") if u.get("content")]
    assert any(c["content"]["type"] == "image" for u in image_call for c in u["content"] if c["type"] == "content")
    assert "**local** (stdio): connected" in report and "**web** (http): connected" in report


def client_hub_statuses(client: Any, session: str) -> list[Any]:
    """The stdio servers' pids, from the agent in this process (tests only)."""
    import gc

    from coder_agent.session import Session

    for obj in gc.get_objects():
        if isinstance(obj, Session) and obj.id == session and obj.services.mcp is not None:
            return obj.services.mcp.statuses()
    return []


async def test_a_failing_server_is_reported_and_the_others_work(tmp_path: Path) -> None:
    model = ScriptedModel([Reply(calls=[Call("mcp__ok__echo", {"text": "still fine"})]), Reply("done")])
    async with tool_agent(tmp_path, model, open_session=False, mode="full-auto") as (client, editor, _, work):
        servers = [
            stdio_server("ok", "basic"),
            {"name": "missing", "command": "/no/such/mcp-server", "args": [], "env": []},
            stdio_server("dies", "crashy", CRASHY_AT_START="3"),
            stdio_server("slow", "slow_start", SLOW_START_SECONDS="1"),
        ]
        result = await client.request("session/new", {"cwd": str(work), "mcpServers": servers}, timeout=60)
        session = result["sessionId"]
        await client.wait_for(lambda: client.agent_text(session).count("could not be started") == 2)
        notice = client.agent_text(session)
        assert "server missing could not" in notice and "server dies could not" in notice
        assert "server ok " not in notice and "server slow " not in notice
        assert await client.prompt(session, "echo", timeout=60) == "end_turn"
    assert tool_messages(model) == ["still fine"]
    assert any(t["function"]["name"].startswith("mcp__slow__") for t in model.requests[0].tools)


async def test_a_server_that_crashes_mid_session_fails_the_call_then_reconnects(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            Reply(calls=[Call("mcp__flaky__die", {"code": 5})]),
            Reply(calls=[Call("mcp__flaky__ok", {})]),
            Reply("recovered"),
        ]
    )
    async with tool_agent(tmp_path, model, open_session=False, mode="full-auto") as (client, editor, _, work):
        result = await client.request(
            "session/new", {"cwd": str(work), "mcpServers": [stdio_server("flaky", "crashy")]}, timeout=60
        )
        session = result["sessionId"]
        assert await client.prompt(session, "crash it", timeout=60) == "end_turn"
    results = tool_messages(model)
    assert "flaky" in results[0]
    assert results[1] == "ok"
    statuses = [u.get("status") for u in client.session_updates(session, "tool_call_update") if u.get("status")]
    assert "failed" in statuses and statuses[-1] == "completed"


async def test_mcp_prompts_are_slash_commands(tmp_path: Path) -> None:
    model = ScriptedModel([Reply("Reviewed.")])
    async with tool_agent(tmp_path, model, open_session=False) as (client, editor, _, work):
        result = await client.request(
            "session/new", {"cwd": str(work), "mcpServers": [stdio_server("docs", "basic")]}, timeout=60
        )
        session = result["sessionId"]
        await client.wait_for(lambda: bool(client.session_updates(session, "available_commands_update")))
        commands = client.session_updates(session, "available_commands_update")[0]["availableCommands"]
        review = next(c for c in commands if c["name"] == "mcp:docs:review")
        assert review["description"] == "Review a file." and review["input"]["hint"] == "<file>"
        await client.prompt(session, "/mcp:docs:review src/app.py", timeout=60)
    assert model.last_request.messages[-1] == {"role": "user", "content": "Please review src/app.py for bugs."}
