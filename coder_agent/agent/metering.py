"""`MeteredModel`: a session's model with its bill — the one place model spending is counted and reported.

Every model call of a session goes through one: the turn's, a compaction's summary, an MCP server's sampling
request (and a sub-agent's). When the call's usage report is in (at once, or when the provider's closing part
arrives: `ModelTurn.settle`), its cost and tokens are added to the session's `Spending` and to each of its `bills`
(the turn's, which its prompt response reports; a sub-agent's own, shown with its work), the conversation's
context size is taken from it if the call was the conversation's own and still its latest, and the client
gets a `usage_update` (the call's tokens in its `_meta`, under `USAGE_META`, and whether its window is a guess). The
call is a span of the turn's trace when telemetry is on (`session.telemetry`).

A turn awaits a pending report in the background (see `agent.turn`), a compaction or a sampling request right
away (`model.base.settled`): either way the report is counted here.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from typing import Any

from coder_agent.model.base import Message, Model, ModelTurn, Spend, StreamSink
from coder_agent.protocol.schema import Cost, UsageUpdate
from coder_agent.session.conversation import Spending
from coder_agent.session.telemetry import ModelSpan, current_turn
from coder_agent.session.turn_context import TurnContext

log = logging.getLogger(__name__)

USAGE_META = "coder-agent"
"""The `_meta` key of `usage_update` carrying the last call's tokens (input, cached input, cache writes, output)."""
WINDOW_GUESSED = "contextWindowGuessed"
"""In it, true when the window (`size`) is a guess: neither the config nor litellm knows the model's."""


class MeteredModel:
    """A `Model` whose calls are billed to a turn context's session; `measures` says whether its calls are the
    conversation's own (their usage is the context's size); `bills` count them apart as well."""

    def __init__(
        self, model: Model, ctx: TurnContext, *, measures: bool = True, bills: Sequence[Spending] = ()
    ) -> None:
        self.model = model
        self.ctx = ctx
        self.measures = measures
        self.bills = tuple(bills)
        """Where else each call's bill is added besides the session's: the turn's report, a sub-agent's own."""
        self.name = model.name

    def side_calls(self) -> MeteredModel:
        """The same model and bill for calls that are not the conversation's (a compaction's summary)."""
        return MeteredModel(self.model, self.ctx, measures=False, bills=self.bills)

    async def stream(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], sink: StreamSink) -> ModelTurn:
        """The call, streamed; its bill is counted now, or by the returned turn's `settle` when still to come. Traced
        as a span of the turn's trace when telemetry is on."""
        trace = current_turn()
        span = trace.model_request(self.name) if trace is not None else None
        try:
            turn = await self.model.stream(messages, tools, sink if span is None else _timed(sink, span))
        except BaseException as exc:
            if span is not None:
                span.end(None, None, error=str(exc) or type(exc).__name__)
            raise
        number = self.ctx.conversation.next_call() if self.measures else None  # numbered as its answer completes
        pending = turn.settle
        if pending is None:
            await self._count(Spend(turn.usage, turn.cost), number)
            if span is not None:
                span.end(turn.usage, turn.cost, turn.text)
            return turn

        async def settle() -> Spend:
            try:
                spend = await pending()
            except BaseException as exc:
                if span is not None:
                    span.end(None, None, error=str(exc) or type(exc).__name__)
                raise
            await self._count(spend, number)
            if span is not None:
                span.end(spend.usage, spend.cost, turn.text)
            return spend

        return dataclasses.replace(turn, settle=settle)

    async def complete(self, messages: Sequence[Message]) -> str:
        return await self.model.complete(messages)

    async def context_window(self) -> int:
        return await self.model.context_window()

    async def context_window_known(self) -> bool:
        return await self.model.context_window_known()

    async def accepts_images(self) -> bool | None:
        return await self.model.accepts_images()

    async def _count(self, spend: Spend, number: int | None) -> None:
        """Add a call's spend to the session (and the tally) and tell the client."""
        usage, ctx = spend.usage, self.ctx
        ctx.spending.add(spend.cost, usage)
        for bill in self.bills:
            bill.add(spend.cost, usage)
        if number is not None and not ctx.conversation.measure(number, usage.total_tokens):
            return  # a later call, a compaction or a /clear came first: this size is out of date
        await self.report(
            {
                "inputTokens": usage.prompt_tokens,
                "cachedInputTokens": usage.cached_tokens,
                "cacheWriteTokens": usage.cache_write_tokens,
                "outputTokens": usage.completion_tokens,
            }
        )

    async def report(self, last_call: dict[str, int] | None = None) -> None:
        """Tell the client the context's size and the session's cost (a `usage_update`), with the last call's tokens
        when there is one (after a sub-agent's calls, the parent's context with the session's new cost)."""
        ctx, spending = self.ctx, self.ctx.spending
        update = UsageUpdate(
            used=ctx.conversation.context_tokens,
            size=await self.model.context_window(),
            cost=Cost(amount=round(spending.cost, 6)) if spending.cost else None,
        )
        if last_call is not None:
            guessed = {} if await self.model.context_window_known() else {WINDOW_GUESSED: True}
            update.meta = {USAGE_META: {**last_call, **guessed}}
        await ctx.bridge.update(update)


def _timed(sink: StreamSink, span: ModelSpan) -> StreamSink:
    """`sink`, marking the span's time to first token at its first text or thought."""

    async def text(delta: str) -> None:
        span.first_token()
        await sink.on_text(delta)

    async def thought(delta: str) -> None:
        span.first_token()
        await sink.on_thought(delta)

    return StreamSink(on_text=text, on_thought=thought, on_retry=sink.on_retry)
