"""The litellm model against the fake OpenAI-compatible server, over the in-memory protocol: streaming, usage,
retries, cut and silent streams, and how provider errors reach the loop. The loop itself: tests/unit/agent."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

from coder_agent.agent import turn as turn_module
from coder_agent.model import litellm_stream
from tests.support.acp_client import RpcFailure
from tests.support.fake_llm import Call, FakeLLM, Fault, Reply, Usage
from tests.support.llm_agent import llm_agent
from tests.support.llm_agent import tool_agent as llm_tool_agent

pytestmark = pytest.mark.anyio


def text(value: str) -> dict[str, str]:
    return {"type": "text", "text": value}


async def test_streams_text_and_thoughts_and_reports_usage(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.add(Reply("Hello from the model.", thought="Thinking it over.", chunk_size=4, usage=Usage(120, 7)))
    async with llm_agent(tmp_path, fake_llm) as (client, session):
        assert await client.prompt(session, "Say hello") == "end_turn"
        await client.wait_for(lambda: bool(client.session_updates(session, "usage_update")))
    chunks = client.session_updates(session, "agent_message_chunk")
    assert len(chunks) > 1, "text arrives as it streams, in several chunks"
    assert client.agent_messages(session)[-1] == "Hello from the model."
    thoughts = "".join(u["content"]["text"] for u in client.session_updates(session, "agent_thought_chunk"))
    assert thoughts == "Thinking it over."
    usage = client.session_updates(session, "usage_update")[-1]
    assert usage["used"] == 127
    assert usage["size"] > 0
    assert usage["_meta"]["coder-agent"] == {
        "inputTokens": 120,
        "cachedInputTokens": 0,
        "cacheWriteTokens": 0,
        "outputTokens": 7,
        "contextWindowGuessed": True,  # litellm does not know the fake model: the size is a guess, and says so
    }
    request = fake_llm.last_request
    assert request["stream"] is True
    assert request["stream_options"] == {"include_usage": True}
    system, user = request["messages"][0], request["messages"][-1]
    assert system["role"] == "system"
    assert str(tmp_path / "work") in system["content"]
    assert user == {"role": "user", "content": "Say hello"}
    assert "cache_control" not in json.dumps(request), "OpenAI-compatible servers cache without markers"
    assert fake_llm.recorded[-1].bearer == "sk-test"


async def test_the_prompt_response_waits_for_a_late_usage_report_and_carries_it(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    gate = threading.Event()
    # chunks: role, "Done.", finish_reason, then the usage chunk (number 3), held until the gate opens
    fake_llm.add(Reply("Done.", usage=Usage(50, 2), gate=gate, stall_after=3))
    async with llm_agent(tmp_path, fake_llm) as (client, session):
        answers: list[dict[str, Any]] = []

        async def prompt() -> None:
            answers.append(await client.request("session/prompt", {"sessionId": session, "prompt": [text("go")]}))

        try:
            async with anyio.create_task_group() as task_group:
                task_group.start_soon(prompt)
                await client.wait_for(lambda: client.agent_messages(session)[-1:] == ["Done."])
                assert not answers, "the answer is whole, but its usage report is still on its way"
                gate.set()
        finally:
            gate.set()
        fake_llm.add(Reply("Again."))
        assert await client.prompt(session, "again") == "end_turn"
    [answer] = answers
    assert answer["stopReason"] == "end_turn"
    assert answer["usage"] == {
        "totalTokens": 52,
        "inputTokens": 50,
        "outputTokens": 2,
        "cachedReadTokens": 0,
        "cachedWriteTokens": 0,
        "_meta": {"coder-agent": {"requests": 1}},
    }
    usage_frame = next(i for i, f in enumerate(client.frames) if f.get("params", {}).get("update", {}).get("used"))
    response_frame = next(i for i, f in enumerate(client.frames) if f.get("result") == answer)
    assert usage_frame < response_frame, "the usage_update is sent before the prompt's response"
    assert fake_llm.last_request["messages"][-2] == {"role": "assistant", "content": "Done."}


async def test_a_usage_report_that_never_comes_delays_the_response_only_a_little(
    tmp_path: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(turn_module, "USAGE_WAIT", 0.05)
    gate = threading.Event()
    fake_llm.add(Reply("Done.", usage=Usage(50, 2), gate=gate, stall_after=3))
    async with llm_agent(tmp_path, fake_llm) as (client, session):
        try:
            answer = await client.request("session/prompt", {"sessionId": session, "prompt": [text("go")]})
            assert "usage" not in answer, "the report is not in yet: the response goes without it"
        finally:
            gate.set()
        await client.wait_for(lambda: bool(client.session_updates(session, "usage_update")))
        assert client.session_updates(session, "usage_update")[-1]["used"] == 52, "it is still counted"


@pytest.mark.parametrize("notices", [True, False])
async def test_retries_429_with_retry_after_and_500(tmp_path: Path, fake_llm: FakeLLM, notices: bool) -> None:
    fake_llm.script([Fault.status(429, retry_after=0), Fault.status(500, retry_after=0), Reply("Recovered.")])
    capabilities = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
    if notices:
        capabilities["session"] = {"notices": {}}
    async with llm_agent(tmp_path, fake_llm, capabilities=capabilities) as (client, session):
        assert await client.prompt(session, "go") == "end_turn"
    assert not client.session_updates(session, "agent_thought_chunk"), "retries are never shown as thoughts"
    if notices:
        assert client.agent_messages(session) == ["Recovered."]
        retries = client.session_updates(session, "notice")
        assert [n["severity"] for n in retries] == ["warning", "warning"]
        assert all("Retrying in 0 s" in n["description"] for n in retries)
    else:
        text = client.agent_text(session)
        assert text.count("Retrying in 0 s") == 2
        assert text.endswith("Recovered.")
    assert len(fake_llm.requests) == 3


async def test_gives_up_with_the_providers_words_and_keeps_the_history(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.script([Fault.status(500, message="upstream exploded", retry_after=0)] * 3 + [Reply("Back.")])
    async with llm_agent(tmp_path, fake_llm, retries=2) as (client, session):
        with pytest.raises(RpcFailure) as failure:
            await client.prompt(session, "first")
        assert failure.value.code == -32003, "a model failure is not an internal error"
        assert "upstream exploded" in failure.value.message
        assert "litellm" not in failure.value.message
        assert await client.prompt(session, "second") == "end_turn"
    assert [m["content"] for m in fake_llm.last_request["messages"][1:]] == ["first", "second"]


async def test_non_retryable_errors_are_shown_at_once(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.add(Fault.status(400, message="model does not exist"))
    async with llm_agent(tmp_path, fake_llm) as (client, session):
        with pytest.raises(RpcFailure) as failure:
            await client.prompt(session, "go")
    assert "model does not exist" in failure.value.message
    assert len(fake_llm.requests) == 1


async def test_an_unreachable_server_is_said_in_one_sentence_without_retries(tmp_path: Path, fake_llm: FakeLLM) -> None:
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    base = f"http://127.0.0.1:{port}/v1"
    async with llm_agent(tmp_path, fake_llm, api_base=base) as (client, session):
        with pytest.raises(RpcFailure) as failure:
            await client.prompt(session, "go")
    assert failure.value.code == -32003
    assert f"The model server at {base} is not reachable (connection refused)" in failure.value.message
    assert "CODER_AGENT_API_BASE" in failure.value.message
    assert "ssl:" not in failure.value.message
    assert not client.session_updates(session, "agent_thought_chunk")
    assert "Retrying" not in client.agent_text(session), "connection refused is not retried"


async def test_a_cut_before_any_text_is_retried(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.script([Fault.cut(1, Reply("never shown")), Reply("Second try.")])
    async with llm_agent(tmp_path, fake_llm) as (client, session):
        assert await client.prompt(session, "go") == "end_turn"
    assert client.agent_text(session).endswith("Second try.")
    assert "retrying" in client.agent_text(session), "a retry is said, briefly"


async def test_a_cut_after_text_stops_cleanly_without_repeating(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.script([Fault.cut(4, Reply("abcdefghijklmnop", chunk_size=2)), Reply("Next.")])
    async with llm_agent(tmp_path, fake_llm) as (client, session):
        assert await client.prompt(session, "go") == "end_turn"
        reply, said = client.agent_messages(session)[-2:]
        assert reply.startswith("abcdef")
        assert reply.count("abc") == 1, "nothing already shown is streamed again"
        assert "cut off" in said, "the agent says so in a message of its own"
        await client.prompt(session, "continue")
    kept = fake_llm.last_request["messages"][2]
    assert kept["role"] == "assistant"
    assert kept["content"].startswith("abcdef")


async def test_a_silent_stream_times_out_and_is_retried(tmp_path: Path, fake_llm: FakeLLM) -> None:
    # Every request after the stalled one answers at once, so a retry that a loaded machine made slow to start is
    # retried again rather than failing the test.
    fake_llm.default = Reply("Awake.")
    fake_llm.script([Fault.stall(30)])
    async with llm_agent(tmp_path, fake_llm, idle_timeout=1.0) as (client, session):
        assert await client.prompt(session, "go") == "end_turn"
    assert client.agent_text(session).endswith("Awake.")


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


@pytest.mark.parametrize("reported", [True, False])
async def test_a_long_argument_in_small_fragments_comes_back_whole_and_counted(
    tmp_path: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch, reported: bool
) -> None:
    # litellm's wrapper is left holding a few chunks only (the bench streams a megabyte; a few hundred do here).
    monkeypatch.setattr(litellm_stream, "RETAINED_CHUNKS", 8)
    content = "".join(f"line {n}\n" for n in range(300))
    call = Call("write_file", {"path": "big.txt", "content": content})
    usage = Usage(500, 777) if reported else None
    fake_llm.script([Reply(calls=[call], chunk_size=4, usage=usage, no_usage=not reported), Reply("Written.")])
    async with llm_tool_agent(tmp_path, fake_llm, mode="accept-edits") as (client, _, session, work):
        assert await client.prompt(session, "write it") == "end_turn"
        await client.wait_for(lambda: len(client.session_updates(session, "usage_update")) == 2)
        assert (work / "big.txt").read_text() == content
    first = client.session_updates(session, "usage_update")[0]["_meta"]["coder-agent"]
    if reported:
        assert first["outputTokens"] == 777, "the provider's report, whatever litellm still holds"
    else:
        assert first["outputTokens"] >= len(content) // 4, "estimated from what streamed, not from the chunks kept"
