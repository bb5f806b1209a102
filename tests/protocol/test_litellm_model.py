"""The litellm model against the fake OpenAI-compatible server, over the in-memory protocol: streaming, usage,
retries, cut and silent streams, and how provider errors reach the loop. The loop itself: tests/unit/agent."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.fake_llm import FakeLLM, Fault, Reply
from tests.support.llm_agent import llm_agent

pytestmark = pytest.mark.anyio


async def test_streams_text_and_thoughts_and_reports_usage(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.add(Reply("Hello from the model.", reasoning="Thinking it over.", chunk_size=4, usage=(120, 7)))
    async with llm_agent(tmp_path, fake_llm) as (client, session):
        assert await client.prompt(session, "Say hello") == "end_turn"
    chunks = client.session_updates(session, "agent_message_chunk")
    assert len(chunks) > 1, "text arrives as it streams, in several chunks"
    assert client.agent_text(session) == "Hello from the model."
    thoughts = "".join(u["content"]["text"] for u in client.session_updates(session, "agent_thought_chunk"))
    assert thoughts == "Thinking it over."
    usage = client.session_updates(session, "usage_update")[-1]
    assert usage["used"] == 127
    assert usage["size"] > 0
    request = fake_llm.last_request
    assert request["stream"] is True
    assert request["stream_options"] == {"include_usage": True}
    system, user = request["messages"][0], request["messages"][-1]
    assert system["role"] == "system"
    assert str(tmp_path / "work") in system["content"]
    assert user == {"role": "user", "content": "Say hello"}
    assert fake_llm.recorded[-1].bearer == "sk-test"


async def test_retries_429_with_retry_after_and_500(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.script([Fault.status(429, retry_after=0), Fault.status(500, retry_after=0), Reply("Recovered.")])
    async with llm_agent(tmp_path, fake_llm) as (client, session):
        assert await client.prompt(session, "go") == "end_turn"
    assert client.agent_text(session) == "Recovered."
    notes = "".join(u["content"]["text"] for u in client.session_updates(session, "agent_thought_chunk"))
    assert notes.count("Retrying") == 2
    assert len(fake_llm.requests) == 3


async def test_gives_up_with_the_providers_words_and_keeps_the_history(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.script([Fault.status(500, message="upstream exploded", retry_after=0)] * 3 + [Reply("Back.")])
    async with llm_agent(tmp_path, fake_llm, retries=2) as (client, session):
        assert await client.prompt(session, "first") == "end_turn"
        assert "upstream exploded" in client.agent_text(session)
        assert await client.prompt(session, "second") == "end_turn"
    assert [m["content"] for m in fake_llm.last_request["messages"][1:]] == ["first", "second"]


async def test_non_retryable_errors_are_shown_at_once(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.add(Fault.status(400, message="model does not exist"))
    async with llm_agent(tmp_path, fake_llm) as (client, session):
        assert await client.prompt(session, "go") == "end_turn"
    assert "model does not exist" in client.agent_text(session)
    assert len(fake_llm.requests) == 1


async def test_a_cut_before_any_text_is_retried(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.script([Fault.cut(1, Reply("never shown")), Reply("Second try.")])
    async with llm_agent(tmp_path, fake_llm) as (client, session):
        assert await client.prompt(session, "go") == "end_turn"
    assert client.agent_text(session) == "Second try."


async def test_a_cut_after_text_stops_cleanly_without_repeating(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.script([Fault.cut(4, Reply("abcdefghijklmnop", chunk_size=2)), Reply("Next.")])
    async with llm_agent(tmp_path, fake_llm) as (client, session):
        assert await client.prompt(session, "go") == "end_turn"
        text = client.agent_text(session)
        assert text.startswith("abcdef")
        assert text.count("abc") == 1, "nothing already shown is streamed again"
        assert "cut off" in text
        await client.prompt(session, "continue")
    kept = fake_llm.last_request["messages"][2]
    assert kept["role"] == "assistant"
    assert kept["content"].startswith("abcdef")


async def test_a_silent_stream_times_out_and_is_retried(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.script([Fault.stall(30), Reply("Awake.")])
    async with llm_agent(tmp_path, fake_llm, idle_timeout=0.5) as (client, session):
        assert await client.prompt(session, "go") == "end_turn"
    assert client.agent_text(session) == "Awake."


async def test_context_window_exceeded_compacts_and_retries(tmp_path: Path, fake_llm: FakeLLM) -> None:
    overflow = Fault.status(
        400, message="This model's maximum context length is 1000 tokens", code="context_length_exceeded"
    )
    fake_llm.script([Reply("first"), overflow, Reply("SUMMARY"), Reply("fits now")])
    async with llm_agent(tmp_path, fake_llm) as (client, session):
        await client.prompt(session, "one")
        assert await client.prompt(session, "two") == "end_turn"
    assert client.agent_text(session).endswith("fits now")


async def test_images_are_sent_to_the_model(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.add(Reply("A red pixel."))
    async with llm_agent(tmp_path, fake_llm) as (client, session):
        prompt = [
            {"type": "text", "text": "What is this?"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///x/a.py", "text": "print(1)"}},
        ]
        await client.request("session/prompt", {"sessionId": session, "prompt": prompt})
    content = fake_llm.last_request["messages"][-1]["content"]
    assert content[1] == {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    assert "print(1)" in content[2]["text"]
