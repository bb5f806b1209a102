"""`Gathered`: one litellm stream read into a `ModelTurn` — deltas relayed as they come, the bill settled later.

litellm streams OpenAI-style chunks for every provider. Text and reasoning deltas go to the sink as they
arrive and tool-call fragments are joined by index. Once a chunk carries `finish_reason` the answer is
complete and the turn is returned, with a `settle` that reads on to the usage chunk (which litellm sends
only after assembling the whole response) and closes the response. Stopping at the usage chunk keeps
litellm from assembling the response a second time and from running its success logging, neither of
which the agent uses. Anthropic's signed thinking blocks are put together here from their fragments.

Gathering is linear in the answer's length, and its memory is the answer's text: each fragment is written once
into a growing buffer (`io.StringIO`, about a byte per character of ASCII), never kept as an object of its own
(a 4-character string costs 50 bytes) and never a chunk object. litellm's stream wrapper keeps every chunk
it returns, for that final assembly (a 4-character fragment costs it a few kilobytes): past `RETAINED_CHUNKS` the
older ones are dropped as the stream goes, so a megabyte of arguments does not take a gigabyte. The usage report
is the provider's, which does not need them; a provider that reports none gets litellm's count of what was
left, so for such a long answer the output tokens are estimated from the characters streamed (characters / 4).
Every `YIELD_EVERY` chunks the event loop gets a turn (a checkpoint): litellm reads a chunk through a new async
generator of the OpenAI client each time and leaves it unfinished, and asyncio finishes such a generator in a
task of its own; while the chunks are already there to read nothing else runs, so without the turn those tasks,
and a chunk each, piled up until the stream ended (and other sessions waited as long).

Usage comes from the provider's report: input tokens (cache reads and writes counted apart) and output
tokens; the cost is litellm's price for that usage, cache reads at the cached rate. A provider that
reports no usage gets an estimate of the input (characters / 4), so the context stays measured.
"""

from __future__ import annotations

import dataclasses
import io
import json
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import anyio

from coder_agent.model.base import FinishReason, Message, ModelTurn, Spend, StreamSink, ToolCallRequest, Usage

log = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4
RETAINED_CHUNKS = 64
"""The most chunks litellm's stream wrapper is left holding (see the module's docstring)."""
YIELD_EVERY = 32
"""The event loop gets a turn after this many chunks (see the module's docstring; after each one, the loop's own
cost per turn halved the relay's throughput of a fast stream of text)."""
_UNPRICED: set[str] = set()


class StreamStalled(Exception):
    """The stream went silent for longer than the idle timeout."""


@dataclass
class _CallParts:
    id: str | None = None
    name: str = ""
    arguments: io.StringIO = field(default_factory=io.StringIO)


class Gathered:
    """What one attempt has streamed so far, and the turn it makes."""

    def __init__(self, litellm: ModuleType, model: str, messages: Sequence[Message]) -> None:
        self.litellm = litellm
        self.model = model
        self.messages = messages
        self.text = io.StringIO()
        """The answer's text so far (`partial_text`)."""
        self.shown = False
        """Whether text or reasoning reached the user (then a failure must not repeat it)."""
        self.calls: list[_CallParts] = []
        self._by_index: dict[int, _CallParts] = {}
        self.thinking: list[Any] = []
        """The fragments of Anthropic's thinking blocks, in order (`thinking_blocks` of each delta)."""
        self.finish: str | None = None
        self.usage_chunk: Any = None
        self.received = 0
        """How many chunks arrived (none: an empty response)."""
        self.streamed_chars = 0
        self.dropped_chunks = 0
        """How many chunks litellm's wrapper no longer holds (then its own count of the output is short)."""
        self.reported = False
        """Whether the provider reported the usage (litellm keeps its report among the chunks it holds)."""

    async def read(self, response: Any, sink: StreamSink, idle_timeout: float) -> ModelTurn:
        """Relay the stream up to its finish; the turn, with `settle` when the usage report is still to come.

        Raises StreamStalled after `idle_timeout` seconds without a chunk; the response is closed on any
        failure (and by `settle` otherwise)."""
        iterator = response.__aiter__()
        ended = False
        try:
            while self.finish is None:
                with anyio.move_on_after(idle_timeout) as waiting:
                    try:
                        chunk = await iterator.__anext__()
                    except StopAsyncIteration:
                        ended = True
                        break
                if waiting.cancelled_caught:
                    raise StreamStalled
                await self.add(chunk, sink)
                self.bound(response)
                if self.received % YIELD_EVERY == 0:
                    await anyio.lowlevel.checkpoint()  # see the module's docstring
            turn = self.turn()
        except BaseException:
            await _close(response)
            raise
        if ended:
            self.reported = _holds_report(response)
            spend = self.spend()
            turn.usage, turn.cost = spend.usage, spend.cost
        else:

            async def settle() -> Spend:
                return await self.settle(response, iterator, idle_timeout)

            turn.settle = settle
        return turn

    async def add(self, chunk: Any, sink: StreamSink) -> None:
        self.received += 1
        if getattr(chunk, "usage", None) is not None:
            self.usage_chunk = chunk
        if not chunk.choices:
            return
        choice = chunk.choices[0]
        delta = choice.delta
        if delta is not None:
            thought = getattr(delta, "reasoning_content", None)
            if thought:
                self.shown = True
                self.streamed_chars += len(thought)
                await sink.on_thought(thought)
            if delta.content:
                self.shown = True
                self.text.write(delta.content)
                self.streamed_chars += len(delta.content)
                await sink.on_text(delta.content)
            for call in getattr(delta, "tool_calls", None) or ():
                self._add_call(call)
            self.thinking += getattr(delta, "thinking_blocks", None) or ()
        if choice.finish_reason:
            self.finish = choice.finish_reason

    def _add_call(self, call: Any) -> None:
        index = getattr(call, "index", None)
        call_id = getattr(call, "id", None)
        parts = self._by_index.get(index) if index is not None else None
        if parts is None and index is None and self.calls and (not call_id or self.calls[-1].id == call_id):
            parts = self.calls[-1]  # a provider without indexes: fragments follow their call
        if parts is None or (call_id and parts.id and parts.id != call_id):
            parts = _CallParts()
            self.calls.append(parts)
            if index is not None:
                self._by_index[index] = parts
        function = getattr(call, "function", None)
        if call_id:
            parts.id = call_id
        if function is not None:
            if function.name:
                parts.name = function.name
            if function.arguments:
                parts.arguments.write(function.arguments)
                self.streamed_chars += len(function.arguments)

    @property
    def partial_text(self) -> str:
        return self.text.getvalue()

    def bound(self, response: Any) -> None:
        """Leave litellm's stream wrapper holding at most `RETAINED_CHUNKS` chunks (the newest)."""
        kept = getattr(response, "chunks", None)
        if isinstance(kept, list) and len(kept) > 2 * RETAINED_CHUNKS:  # trimmed in batches: linear overall
            dropped = len(kept) - RETAINED_CHUNKS
            del kept[:dropped]
            self.dropped_chunks += dropped

    def turn(self) -> ModelTurn:
        """The answer gathered so far as a turn (usage and cost not filled in)."""
        text = self.partial_text
        calls = [
            ToolCallRequest(id=p.id or _call_id(), name=p.name, arguments=p.arguments.getvalue() or "{}")
            for p in self.calls
        ]
        return _turn(text, calls, self.finish, thinking_blocks(self.thinking))

    async def settle(self, response: Any, iterator: Any, idle_timeout: float) -> Spend:
        """Read on to the usage report, close the response, and price the call."""
        try:
            with anyio.move_on_after(idle_timeout):
                while self.usage_chunk is None:
                    try:
                        chunk = await iterator.__anext__()
                    except StopAsyncIteration:
                        break
                    if getattr(chunk, "usage", None) is not None:
                        self.usage_chunk = chunk
                        self.reported = _holds_report(response)
                    self.bound(response)
        except Exception as exc:  # the answer is whole: only its bill is lost
            log.info("the model's usage report did not arrive: %s", exc)
        finally:
            await _close(response)
        return self.spend()

    def spend(self) -> Spend:
        raw = getattr(self.usage_chunk, "usage", None)
        usage = usage_from(raw)
        if self.dropped_chunks and not self.reported:  # litellm counted only the chunks it still held
            estimated = self.streamed_chars // CHARS_PER_TOKEN
            usage = dataclasses.replace(usage, completion_tokens=max(usage.completion_tokens, estimated))
        if not usage.prompt_tokens:
            usage = Usage(prompt_tokens=estimate_tokens(self.messages), completion_tokens=usage.completion_tokens)
            return Spend(usage, None)
        cost = getattr(raw, "cost", None)
        if cost is None:
            cost = (getattr(self.usage_chunk, "_hidden_params", None) or {}).get("response_cost")
        if cost is None and self.model not in _UNPRICED:
            try:
                response = self.litellm.ModelResponse(model=self.model, usage=raw)
                cost = self.litellm.completion_cost(completion_response=response, model=self.model)
            except Exception:
                _UNPRICED.add(self.model)  # litellm has no price for it: do not ask again on every call
        return Spend(usage, float(cost) if isinstance(cost, int | float) and cost > 0 else None)


def _holds_report(response: Any) -> bool:
    """Whether the newest chunks litellm's wrapper holds include the provider's usage report."""
    kept = getattr(response, "chunks", None)
    return isinstance(kept, list) and any(getattr(chunk, "usage", None) is not None for chunk in kept[-4:])


def thinking_blocks(fragments: Sequence[Any]) -> list[dict[str, Any]] | None:
    """Anthropic's thinking blocks from their streamed fragments: the thinking text up to each signature is one
    signed block; a redacted block stands alone (its data is opaque)."""
    blocks: list[dict[str, Any]] = []
    text: list[str] = []
    for fragment in fragments:
        get = fragment.get if isinstance(fragment, dict) else lambda key, f=fragment: getattr(f, key, None)
        if get("type") == "redacted_thinking":
            text.clear()
            if get("data"):
                blocks.append({"type": "redacted_thinking", "data": get("data")})
            continue
        if get("thinking"):
            text.append(str(get("thinking")))
        if get("signature"):
            blocks.append({"type": "thinking", "thinking": "".join(text), "signature": get("signature")})
            text.clear()
    return blocks or None


def usage_from(raw: Any) -> Usage:
    """Our `Usage` from litellm's: OpenAI's cached_tokens, Anthropic's cache reads and writes as litellm maps them."""
    if raw is None:
        return Usage()
    details = getattr(raw, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) or getattr(raw, "cache_read_input_tokens", None)
    written = getattr(raw, "cache_creation_input_tokens", None) or getattr(details, "cache_creation_tokens", None)
    return Usage(
        prompt_tokens=int(getattr(raw, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(raw, "completion_tokens", 0) or 0),
        cached_tokens=int(cached or 0),
        cache_write_tokens=int(written or 0),
    )


def estimate_tokens(messages: Sequence[Message]) -> int:
    """A rough size of a request in tokens, for providers that report none."""
    return len(json.dumps(list(messages), ensure_ascii=False, default=str)) // CHARS_PER_TOKEN


async def _close(response: Any) -> None:
    close = getattr(response, "aclose", None)
    if close is None:
        return
    with anyio.CancelScope(shield=True):
        try:
            await close()
        except Exception as exc:
            log.debug("closing the model's response failed: %s", exc)


def _call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def _turn(text: str, calls: list[ToolCallRequest], finish: str | None, thinking: Any) -> ModelTurn:
    history: Message = {"role": "assistant", "content": text or (None if calls else "")}
    if calls:
        history["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in calls
        ]
    if thinking:
        history["thinking_blocks"] = thinking
    return ModelTurn(
        message=history, text=text, tool_calls=calls, finish_reason=_finish_reason(finish, bool(calls)), usage=Usage()
    )


def _finish_reason(raw: str | None, has_calls: bool) -> FinishReason:
    if has_calls:
        return "tool_calls"
    if raw == "length":
        return "length"
    if raw == "content_filter":
        return "content_filter"
    return "stop"


def partial_turn(text: str) -> ModelTurn:
    """What a stream cut after text was shown leaves: the text, as an assistant message."""
    return ModelTurn(
        message={"role": "assistant", "content": text}, text=text, tool_calls=[], finish_reason="stop", usage=Usage()
    )
