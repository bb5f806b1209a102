"""Asking the user, end to end: a spawned agent, the model behind litellm (the fake server), a real MCP server that
elicits and samples, and an editor that answers its questions (form and URL) and its permission requests."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.asker import FakeAsker, accept, elicitation_capabilities
from tests.support.editor import FakeEditor
from tests.support.fake_llm import Call, FakeLLM, Reply
from tests.support.spawn import spawned_agent

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]
WAIT = 60.0


def answer(params: dict[str, Any]) -> dict[str, Any]:
    if params["mode"] == "url":
        return accept()
    if "color" in params["requestedSchema"]["properties"]:
        return accept(color="green", size=2)
    return accept(choice="SQLite")


def tool_results(llm: FakeLLM) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in llm.last_request["messages"] if m["role"] == "tool"}


async def test_the_model_and_an_mcp_server_ask_the_user_and_the_server_samples_the_model(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    question = {"question": "Which database?", "options": ["PostgreSQL", "SQLite"]}
    fake_llm.script(
        [
            Reply(calls=[Call("ask_user", question, id="q1")]),
            Reply(calls=[Call("mcp__asker__ask_form", {}, id="f1")]),
            Reply(calls=[Call("mcp__asker__sign_in", {}, id="u1")]),
            Reply(calls=[Call("mcp__asker__summarize", {"text": "a long story"}, id="s1")]),
            Reply("A short story."),  # the server's sampling request
            Reply("All done."),
        ]
    )
    work = tmp_path / "work"
    work.mkdir()
    server = {
        "name": "asker",
        "command": sys.executable,
        "args": ["-m", "tests.support.mcp_servers.asking"],
        "env": [{"name": "PYTHONPATH", "value": str(ROOT)}],
    }
    async with spawned_agent(tmp_path, llm=fake_llm) as agent:
        client = agent.client
        editor = FakeEditor(client, root=work)
        asker = FakeAsker(client)
        asker.default = answer
        capabilities = {
            **editor.capabilities(),
            "elicitation": elicitation_capabilities(),
            "session": {"notices": {}, "compaction": {}},
        }
        await client.initialize(capabilities)
        params = {"cwd": str(work), "mcpServers": [server]}
        session = (await client.request("session/new", params, timeout=WAIT))["sessionId"]
        assert await client.prompt(session, "set it up", timeout=WAIT) == "end_turn"
        await client.wait_for(lambda: bool(asker.completed()), timeout=WAIT)
        await editor.aclose()

    results = tool_results(fake_llm)
    assert "Chose: SQLite." in results["q1"]
    assert results["f1"] == "accept [('color', 'green'), ('size', 2)]"
    assert results["u1"] == "accept"
    assert results["s1"] == "openai/fake-model: A short story. (endTurn)"
    form, own_form, url = asker.requests
    assert form["toolCallId"] == "q1" and own_form["toolCallId"] == "f1" and url["toolCallId"] == "u1"
    assert asker.completed() == [url["elicitationId"]]
    sampling = fake_llm.requests[4]
    assert sampling["messages"] == [
        {"role": "system", "content": "You summarise."},
        {"role": "user", "content": "Summarise: a long story"},
    ]
    assert not sampling.get("tools")
    assert sampling["max_tokens"] == 64
    titles = [r["toolCall"]["title"] for r in editor.permission_requests]
    assert "The MCP server asker asks the model for a completion" in titles
