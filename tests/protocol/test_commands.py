"""Slash commands, titles and config options (model, reasoning effort), through the protocol, on the scripted model."""

from __future__ import annotations

from pathlib import Path

import pytest

from coder_agent.model.scripted import Call, Reply, ScriptedModel, Usage
from tests.support import llm_agent
from tests.support.fake_llm import FakeLLM
from tests.support.fake_llm import Reply as WireReply
from tests.support.scripted_agent import tool_agent

pytestmark = pytest.mark.anyio


async def test_commands_are_advertised_after_session_new(tmp_path: Path) -> None:
    model = ScriptedModel()
    async with tool_agent(tmp_path, model) as (client, editor, session, work):
        await client.wait_for(lambda: bool(client.session_updates(session, "available_commands_update")))
    names = {c["name"] for c in client.session_updates(session, "available_commands_update")[0]["availableCommands"]}
    assert {"compact", "clear", "context", "undo", "init", "permissions", "mcp", "model"} <= names
    update_index = next(i for i, f in enumerate(client.frames) if f.get("method") == "session/update")
    response_index = next(i for i, f in enumerate(client.frames) if f.get("result", {}).get("sessionId") == session)
    assert response_index < update_index, "the client knows the session before it hears about it"


async def test_context_and_clear(tmp_path: Path) -> None:
    model = ScriptedModel([Reply("first answer", usage=Usage(1500, 20)), Reply("after clear")])
    async with tool_agent(tmp_path, model, context_window=100_000) as (client, editor, session, work):
        await client.prompt(session, "hello")
        await client.wait_for(lambda: bool(client.session_updates(session, "usage_update")))  # sent after the answer
        assert await client.prompt(session, "/context") == "end_turn"
        report = client.agent_text(session)
        assert "1,520 of 100,000 tokens" in report
        assert "System prompt" in report and "Tool definitions" in report and "Cost so far" in report
        assert "Prompt cache:** 0% of the input tokens" in report
        await client.prompt(session, "/clear")
        assert "fresh context" in client.agent_text(session)
        await client.prompt(session, "next")
    assert [m["content"] for m in model.last_request.messages[1:]] == ["next"]
    assert len(model.requests) == 2, "commands do not call the model"


async def test_compact_command_summarises_with_a_focus(tmp_path: Path) -> None:
    model = ScriptedModel([Reply("one"), Reply("two"), Reply("THE SUMMARY"), Reply("three")])
    async with tool_agent(tmp_path, model) as (client, editor, session, work):
        await client.prompt(session, "a")
        await client.prompt(session, "b")
        await client.prompt(session, "/compact the API decisions")
        assert "compacted" in client.agent_text(session).lower()
        await client.prompt(session, "c")
    assert "the API decisions" in model.requests[2].messages[0]["content"]
    assert "THE SUMMARY" in model.last_request.messages[1]["content"]


async def test_permissions_lists_and_revokes_remembered_rules(tmp_path: Path) -> None:
    model = ScriptedModel([Reply(calls=[Call("run_command", {"command": "git status --short"})]), Reply("ok")])
    async with tool_agent(tmp_path, model, permissions={"deny": ["execute:rm"]}) as (client, editor, session, work):
        editor.permission_answers = ["allow_always"]
        await client.prompt(session, "status")
        assert "Remembered for this session: allow `execute:git status`" in client.agent_text(session)
        await client.prompt(session, "/permissions")
        listing = client.agent_text(session)
        assert "`execute:git status`" in listing and "`execute:rm`" in listing
        await client.prompt(session, "/permissions revoke execute:git status")
        assert "Revoked `execute:git status`" in client.agent_text(session)


# On the fake LLM: the switched model and reasoning effort are checked where they arrive, on the provider's wire.
async def test_model_command_and_config_options(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.script([WireReply("from b")])
    async with llm_agent.tool_agent(tmp_path, fake_llm, models=["openai/model-b"]) as (client, editor, session, work):
        new = await client.request("session/new", {"cwd": str(work), "mcpServers": []})
        ids = [o["id"] for o in new["configOptions"]]
        assert ids == ["mode", "model", "reasoning_effort"]
        model = new["configOptions"][1]
        assert model["currentValue"] == "openai/fake-model"
        assert [o["value"] for o in model["options"]] == ["openai/fake-model", "openai/model-b"]
        await client.prompt(session, "/model")
        assert "`openai/model-b`" in client.agent_text(session)
        result = await client.request(
            "session/set_config_option", {"sessionId": session, "configId": "model", "value": "openai/model-b"}
        )
        assert result["configOptions"][1]["currentValue"] == "openai/model-b"
        await client.request(
            "session/set_config_option", {"sessionId": session, "configId": "reasoning_effort", "value": "high"}
        )
        await client.prompt(session, "hi")
        await client.prompt(session, "/model openai/model-c")
        assert "Switched this session to `openai/model-c`" in client.agent_text(session)
    assert fake_llm.last_request["model"] == "model-b"
    assert fake_llm.last_request["reasoning_effort"] == "high"
    assert client.session_updates(session, "config_option_update")


async def test_unknown_command_lists_the_commands(tmp_path: Path) -> None:
    model = ScriptedModel()
    async with tool_agent(tmp_path, model) as (client, editor, session, work):
        await client.prompt(session, "/frobnicate now")
    text = client.agent_text(session)
    assert "Unknown command `/frobnicate`" in text and "/compact" in text
    assert model.requests == []


async def test_init_writes_agents_md_through_the_model(tmp_path: Path) -> None:
    model = ScriptedModel(
        [Reply(calls=[Call("write_file", {"path": "AGENTS.md", "content": "# Agents\n"})]), Reply("Wrote it.")]
    )
    async with tool_agent(tmp_path, model, mode="accept-edits") as (client, editor, session, work):
        await client.prompt(session, "/init")
    assert (work / "AGENTS.md").read_text() == "# Agents\n"
    assert "AGENTS.md" in model.requests[0].messages[-1]["content"]


async def test_the_first_prompt_titles_the_session(tmp_path: Path) -> None:
    model = ScriptedModel([Reply("a"), Reply("b")])
    async with tool_agent(tmp_path, model) as (client, editor, session, work):
        await client.prompt(session, "Fix the flaky   login test\nand more details")
        await client.prompt(session, "second")
    infos = client.session_updates(session, "session_info_update")
    assert len(infos) == 1
    assert infos[0]["title"] == "Fix the flaky login test and more details"
    assert infos[0]["updatedAt"].endswith("Z")
