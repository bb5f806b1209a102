"""The fake LLM server (tests/support/fake_llm.py) driven through litellm for real, over HTTP.

Importing litellm takes seconds, so this file holds a few broad tests rather than many small ones.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import anyio
import pytest

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

import litellm
from litellm.exceptions import MidStreamFallbackError

from tests.support.fake_llm import DEFAULT_TEXT, Call, FakeLLM, Fault, Reply, Usage

litellm.suppress_debug_info = True
# pydantic warns (UserWarning) about the ReadOnly TypedDicts of modules that litellm imports lazily during calls.
pytestmark = pytest.mark.filterwarnings(r"ignore:.*ReadOnly.*:UserWarning")

MESSAGES = [{"role": "user", "content": "Read both files."}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        },
    }
]


def _args(llm: FakeLLM, **overrides: Any) -> dict[str, Any]:
    return {
        "model": "openai/fake-model",
        "api_base": llm.base_url,
        "api_key": "sk-test",
        "messages": MESSAGES,
        "max_retries": 0,
        **overrides,
    }


async def _drain(llm: FakeLLM, **overrides: Any) -> list[Any]:
    response = await litellm.acompletion(**_args(llm, stream=True, **overrides))
    return [chunk async for chunk in response]


@pytest.mark.anyio
async def test_stream_text_reasoning_tool_calls_usage_and_recording(fake_llm: FakeLLM) -> None:
    llm = fake_llm
    llm.script(
        [
            Reply(
                "Reading both.",
                thought="The user wants two files.",
                calls=[
                    Call("read_file", {"path": "src/a.py"}),
                    Call("read_file", '{"path": "b.py"}', id="c2"),
                ],
                chunk_size=4,
                usage=Usage(42, 17),
            ),
            lambda body: Reply(f"summary of {len(body['messages'])} message(s)"),
        ]
    )

    chunks = await _drain(llm, tools=TOOLS, stream_options={"include_usage": True})

    argument_fragments = [
        call.function.arguments
        for chunk in chunks
        if chunk.choices
        for call in chunk.choices[0].delta.tool_calls or []
        if call.function.arguments
    ]
    assert len(argument_fragments) > 4  # each call's arguments arrive in several pieces
    full = litellm.stream_chunk_builder(chunks, messages=MESSAGES)
    message = full.choices[0].message
    assert message.content == "Reading both."
    assert message.reasoning_content == "The user wants two files."
    assert full.choices[0].finish_reason == "tool_calls"
    calls = [(c.id, c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls]
    assert calls == [("call_1_0", "read_file", {"path": "src/a.py"}), ("c2", "read_file", {"path": "b.py"})]
    assert (full.usage.prompt_tokens, full.usage.completion_tokens, full.usage.total_tokens) == (42, 17, 59)

    body = llm.last_request
    assert body["stream"] is True
    assert body["messages"] == MESSAGES
    assert [t["function"]["name"] for t in body["tools"]] == ["read_file"]
    assert llm.recorded[0].bearer == "sk-test"

    # Non-streaming (e.g. a summarisation call), answered by a callable entry; then the script is exhausted.
    summary = await litellm.acompletion(**_args(llm))
    assert summary.choices[0].message.content == "summary of 1 message(s)"
    assert summary.usage.total_tokens > 0
    leftover = await litellm.acompletion(**_args(llm))
    assert leftover.choices[0].message.content == DEFAULT_TEXT
    assert len(llm.requests) == 3
    assert llm.pending == 0
    # Each request is timed in order: body arrived, response started, last byte written; one after another.
    previous_end = 0.0
    for timing in (r.timing for r in llm.recorded):
        assert timing.started is not None and timing.finished is not None
        assert previous_end <= timing.arrived <= timing.started <= timing.finished
        previous_end = timing.finished


@pytest.mark.anyio
async def test_http_errors_map_to_litellm_exceptions(fake_llm: FakeLLM) -> None:
    fake_llm.add(Fault.status(429, retry_after=7), Fault.status(500, message="upstream exploded"))

    with pytest.raises(litellm.RateLimitError) as rate_limited:
        await _drain(fake_llm)
    assert rate_limited.value.litellm_response_headers["retry-after"] == "7"
    assert rate_limited.value.response.headers["retry-after"] == "7"

    with pytest.raises(litellm.InternalServerError, match="upstream exploded"):
        await _drain(fake_llm)


@pytest.mark.anyio
async def test_cut_stream_and_stalls() -> None:
    with FakeLLM() as llm:
        llm.add(Fault.cut(3))
        response = await litellm.acompletion(**_args(llm, stream=True))
        received: list[str] = []
        with pytest.raises(MidStreamFallbackError) as cut:
            await _collect_text(response, received)
        assert isinstance(cut.value.original_exception, litellm.APIConnectionError)
        assert "".join(received).startswith("This rep")
        assert llm.recorded[-1].timing.started is not None
        assert llm.recorded[-1].timing.finished is None  # a cut response never writes its last byte

        llm.add(
            Fault.stall(60), Fault.stall(60, after_chunks=2), Fault.slow(0.05, Reply("slow but sure", chunk_size=4))
        )
        with pytest.raises(TimeoutError), anyio.fail_after(0.3):  # before the first byte
            await _drain(llm)
        with pytest.raises(TimeoutError), anyio.fail_after(0.3):  # mid-stream
            await _drain(llm)
        started = time.monotonic()
        chunks = await _drain(llm)
        assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "slow but sure"
        assert time.monotonic() - started >= 0.2

        llm.add(Fault.stall(60))
        expected_requests = len(llm.requests) + 1
        outcome: list[BaseException] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(_capture_failure, llm, outcome)
            await anyio.to_thread.run_sync(llm.wait_for_requests, expected_requests)
            with anyio.fail_after(30):  # the request is still stalled (60 s): shutting down must not wait for it
                await anyio.to_thread.run_sync(llm.stop)
        assert len(outcome) == 1
        assert isinstance(outcome[0], litellm.InternalServerError | litellm.APIConnectionError)


async def _collect_text(response: Any, received: list[str]) -> None:
    async for chunk in response:
        received.append(chunk.choices[0].delta.content or "")


async def _capture_failure(llm: FakeLLM, outcome: list[BaseException]) -> None:
    try:
        await _drain(llm)
    except Exception as exc:
        outcome.append(exc)
