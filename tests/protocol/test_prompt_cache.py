"""Requests a provider's prompt cache can serve: a prefix that only grows, cache breakpoints for Claude, and cached
input tokens read from usage, shown in `usage_update` and priced at the cached rate. Against the fake LLM server,
through litellm, over the in-memory protocol."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_llm import Call, FakeLLM, Reply, Usage
from tests.support.llm_agent import llm_agent, tool_agent

pytestmark = pytest.mark.anyio


def wire_text(request: dict[str, Any]) -> str:
    """A request as the provider's cache sees it: the tools, then the messages."""
    return json.dumps(request.get("tools")) + json.dumps(request["messages"])


def shared_prefix(before: str, after: str) -> float:
    """The share of `before` that `after` starts with, character for character."""
    differ = (i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b)
    return next(differ, min(len(before), len(after))) / len(before)


def commit_all(work: Path, message: str) -> None:
    import git

    repo = git.Repo.init(work) if not (work / ".git").exists() else git.Repo(work)
    repo.git.add(A=True)
    actor = git.Actor("t", "t@example.com")
    repo.index.commit(message, author=actor, committer=actor)
    repo.close()


async def test_every_request_starts_with_the_whole_request_before_it(tmp_path: Path, fake_llm: FakeLLM) -> None:
    edit = {"path": "app.py", "old_string": "x = 1", "new_string": "x = 2"}
    fake_llm.script(
        [
            Reply(calls=[Call("read_file", {"path": "app.py"})]),
            Reply(calls=[Call("edit_file", edit)]),
            Reply("Bumped x."),
            Reply(calls=[Call("write_file", {"path": "new.py", "content": "y = 1\n"})]),
            Reply("Wrote new.py."),
            Reply("Nothing else to do."),
        ]
    )
    agent = tool_agent(tmp_path, fake_llm, mode="accept-edits", open_session=False)
    async with agent as (client, editor, _, work):
        (work / "app.py").write_text("x = 1\n")
        (work / "AGENTS.md").write_text("Use tabs.\n")
        commit_all(work, "first")
        session = await client.new_session(str(work))
        assert await client.prompt(session, "bump x") == "end_turn"
        assert await client.prompt(session, "add new.py") == "end_turn"
        (work / "AGENTS.md").write_text("Use spaces.\n")
        assert await client.prompt(session, "anything else?") == "end_turn"
    requests = fake_llm.requests
    assert len(requests) == 6
    for before, after in itertools.pairwise(requests):
        assert shared_prefix(wire_text(before), wire_text(after)) >= 0.95
    assert len({json.dumps(r["messages"][0]) for r in requests}) == 1, "one system prompt for the whole session"
    assert len({json.dumps(r["tools"]) for r in requests}) == 1, "the same tools in the same order"
    updates = [m["content"] for m in requests[-1]["messages"] if m["role"] == "user" and "[Environment" in m["content"]]
    assert len(updates) == 2, "one update after each turn that changed the working tree"
    assert "Git status: 1 modified" in updates[0]
    assert "Git status: 2 modified, 1 untracked" in updates[1]
    assert "Use spaces." in updates[1]
    assert requests[-1]["messages"][-1] == {"role": "user", "content": "anything else?"}
    assert requests[-1]["messages"][-2]["content"] == updates[1], "the update comes right before the prompt"


@pytest.mark.parametrize("caching", [True, False])
async def test_claude_requests_mark_the_system_prompt_and_the_last_message(
    tmp_path: Path, fake_llm: FakeLLM, caching: bool
) -> None:
    fake_llm.script(
        [
            Reply("One.", usage=Usage(3000, 5, cache_write_tokens=2800)),
            Reply("Two.", usage=Usage(3100, 5, cached_tokens=2900)),
        ]
    )
    anthropic = {"model": "anthropic/claude-sonnet-4-5", "api_base": f"http://127.0.0.1:{fake_llm.port}"}
    async with llm_agent(tmp_path, fake_llm, prompt_caching=caching, **anthropic) as (client, session):
        assert await client.prompt(session, "first") == "end_turn"
        assert await client.prompt(session, "second") == "end_turn"
        await client.wait_for(lambda: len(client.session_updates(session, "usage_update")) == 2)
    assert [r.path for r in fake_llm.recorded] == ["/v1/messages", "/v1/messages"]
    first, second = fake_llm.requests
    marked = [block for block in second["system"] if "cache_control" in block]
    last = second["messages"][-1]["content"][-1]
    if caching:
        assert marked and marked[-1]["cache_control"] == {"type": "ephemeral"}
        assert last == {"type": "text", "text": "second", "cache_control": {"type": "ephemeral"}}
        assert "cache_control" not in json.dumps(second["messages"][:-1]), "earlier messages carry no marker"
    else:
        assert "cache_control" not in json.dumps(first) + json.dumps(second)
    tokens = [u["_meta"]["coder-agent"] for u in client.session_updates(session, "usage_update")]
    assert tokens[0]["cacheWriteTokens"] == 2800
    assert tokens[1]["cachedInputTokens"] == 2900
    assert tokens[1]["inputTokens"] == 3100
    assert client.agent_messages(session)[-2:] == ["One.", "Two."]


async def test_cached_input_is_shown_and_priced_at_the_cached_rate(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.script(
        [
            Reply("Full price.", usage=Usage(100_000, 10)),
            Reply("Mostly cached.", usage=Usage(100_000, 10, cached_tokens=90_000)),
        ]
    )
    async with llm_agent(tmp_path, fake_llm, model="openai/gpt-4o-mini") as (client, session):
        await client.prompt(session, "one")
        await client.wait_for(lambda: len(client.session_updates(session, "usage_update")) == 1)
        await client.prompt(session, "two")
        await client.wait_for(lambda: len(client.session_updates(session, "usage_update")) == 2)
        await client.prompt(session, "/context")
    first, second = client.session_updates(session, "usage_update")
    assert second["_meta"]["coder-agent"]["cachedInputTokens"] == 90_000
    import litellm

    price = litellm.model_cost["gpt-4o-mini"]
    full = first["cost"]["amount"]
    assert full == pytest.approx(100_000 * price["input_cost_per_token"] + 10 * price["output_cost_per_token"])
    cached_call = second["cost"]["amount"] - full
    expected = 10_000 * price["input_cost_per_token"] + 90_000 * price["cache_read_input_token_cost"]
    assert cached_call == pytest.approx(expected + 10 * price["output_cost_per_token"], rel=1e-3)
    assert cached_call < full, "cache reads are billed at the cached rate"
    assert "45% of the input tokens sent so far were read from the provider's cache" in client.agent_text(session)


@pytest.mark.parametrize("thinking", [True, False])
async def test_claude_tool_calls_and_signed_thinking_come_back_whole(
    tmp_path: Path, fake_llm: FakeLLM, thinking: bool
) -> None:
    reasoning = "Look at it first." if thinking else ""
    fake_llm.script(
        [
            Reply(thought=reasoning, calls=[Call("read_file", {"path": "a.txt"})], chunk_size=5),
            Reply("It says hello."),
        ]
    )
    anthropic = {"model": "anthropic/claude-sonnet-4-5", "api_base": f"http://127.0.0.1:{fake_llm.port}"}
    async with tool_agent(tmp_path, fake_llm, **anthropic) as (client, editor, session, work):
        (work / "a.txt").write_text("hello\n")
        assert await client.prompt(session, "read a.txt") == "end_turn"
    thoughts = "".join(u["content"]["text"] for u in client.session_updates(session, "agent_thought_chunk"))
    assert thoughts == reasoning
    assistant = fake_llm.last_request["messages"][-2]
    assert assistant["role"] == "assistant"
    first, call = assistant["content"][0], assistant["content"][-1]
    if thinking:
        assert first == {"type": "thinking", "thinking": reasoning, "signature": "sig-chatcmpl-fake-1"}
    else:
        assert len(assistant["content"]) == 1
    assert call["type"] == "tool_use" and call["name"] == "read_file" and call["input"] == {"path": "a.txt"}
    result = fake_llm.last_request["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == call["id"] and "hello" in str(result)
    assert client.agent_messages(session)[-1] == "It says hello."
