"""Anthropic's streaming Messages API for the fake LLM server: a scripted reply as `message_start` … `message_stop`.

`tests.support.fake_llm.FakeLLM` serves ``POST /v1/messages`` with these events, from the same script entries
as its OpenAI-compatible route, so litellm's ``anthropic/`` provider can be driven for real (pointed at the fake
with ``api_base``). Thinking (the reply's ``reasoning``, signed ``sig-<completion id>``), text and tool calls are
rendered; the usage follows Anthropic's split: ``input_tokens``
(not cached), ``cache_read_input_tokens`` (the reply's ``cached``) and ``cache_creation_input_tokens``
(its ``cache_write``) in ``message_start``, ``output_tokens`` in ``message_delta``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.support.fake_llm import _Rendered

_STOP_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens", "content_filter": "refusal"}


def _event(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data}, separators=(',', ':'))}\n\n".encode()


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def anthropic_events(rendered: _Rendered) -> list[bytes]:
    """The SSE events of one streamed Messages API answer."""
    reply = rendered.reply
    prompt, completion = rendered.usage["prompt_tokens"], rendered.usage["completion_tokens"]
    usage = {
        "input_tokens": max(0, prompt - reply.cached - reply.cache_write),
        "cache_creation_input_tokens": reply.cache_write,
        "cache_read_input_tokens": reply.cached,
        "output_tokens": 1,
    }
    message = {
        "id": rendered.completion_id,
        "type": "message",
        "role": "assistant",
        "model": rendered.model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    events = [_event("message_start", {"message": message})]
    index = 0
    if reply.thought:
        block = {"type": "thinking", "thinking": ""}
        events.append(_event("content_block_start", {"index": index, "content_block": block}))
        for piece in _pieces(reply.thought, reply.chunk_size):
            delta = {"type": "thinking_delta", "thinking": piece}
            events.append(_event("content_block_delta", {"index": index, "delta": delta}))
        signature = {"type": "signature_delta", "signature": f"sig-{rendered.completion_id}"}
        events.append(_event("content_block_delta", {"index": index, "delta": signature}))
        events.append(_event("content_block_stop", {"index": index}))
        index += 1
    if reply.text:
        events.append(_event("content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}}))
        for piece in _pieces(reply.text, reply.chunk_size):
            delta = {"type": "text_delta", "text": piece}
            events.append(_event("content_block_delta", {"index": index, "delta": delta}))
        events.append(_event("content_block_stop", {"index": index}))
        index += 1
    for call, call_id in zip(reply.calls, rendered.call_ids, strict=True):
        block = {"type": "tool_use", "id": call_id, "name": call.name, "input": {}}
        events.append(_event("content_block_start", {"index": index, "content_block": block}))
        for piece in _pieces(call.arguments_json(), reply.chunk_size):
            delta = {"type": "input_json_delta", "partial_json": piece}
            events.append(_event("content_block_delta", {"index": index, "delta": delta}))
        events.append(_event("content_block_stop", {"index": index}))
        index += 1
    stop = {"stop_reason": _STOP_REASONS[reply.effective_finish_reason], "stop_sequence": None}
    events.append(_event("message_delta", {"delta": stop, "usage": {"output_tokens": completion}}))
    events.append(_event("message_stop", {}))
    return events
