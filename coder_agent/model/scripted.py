"""`ScriptedModel`: a real `Model` that answers from a script, for tests and for trying the loop without a provider.

Each call takes the next item of the script: a `Reply` (streamed to the sink in chunks, like a provider
would), a `ModelError` to raise, or a function of the request that returns either. When the script runs
out, `default` answers. Every request is recorded (`requests`), so a test can check what the loop sent.
A `Reply` with `hold` set streams its first chunks and then waits until the event is set (or the call is
cancelled), which is how tests stand in the middle of a stream.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from coder_agent.model.base import (
    FinishReason,
    Message,
    ModelError,
    ModelTurn,
    Spend,
    StreamSink,
    ToolCallRequest,
    Usage,
)


@dataclass(frozen=True)
class Call:
    """A tool call in a scripted reply; `arguments` may be a dict (sent as JSON) or raw text."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None

    def arguments_json(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)

    def request(self) -> ToolCallRequest:
        return ToolCallRequest(
            id=self.id or f"call_{uuid.uuid4().hex[:12]}", name=self.name, arguments=self.arguments_json()
        )


@dataclass(frozen=True)
class Reply:
    """One scripted answer: what the model says (`text`), thinks (`thought`) and calls (`calls`), why it stopped,
    what it used. The fake OpenAI-compatible server of the tests takes the same vocabulary
    (`tests.support.fake_llm.Reply` adds how it is delivered over HTTP)."""

    text: str = ""
    calls: Sequence[Call] = ()
    thought: str = ""
    finish_reason: FinishReason | None = None
    """Default: `tool_calls` when there are calls, else `stop`."""
    usage: Usage | None = None
    """None: no usage (the fake server estimates one from the text)."""
    cost: float | None = None
    chunk_size: int = 0
    """Stream the text in pieces of this many characters (0: one piece)."""
    hold: anyio.Event | None = None
    """Stream the first `hold_after` chunks, then wait for this event before the rest."""
    hold_after: int = 1
    late_bill: bool = False
    """The usage and cost come after the answer (`ModelTurn.settle`), as a provider's closing chunk does."""


@dataclass(frozen=True)
class Request:
    """What one call was given."""

    messages: list[Message]
    tools: list[dict[str, Any]]

    @property
    def tool_names(self) -> list[str]:
        return [tool["function"]["name"] for tool in self.tools]


Answer = Reply | ModelError
Scripted = Answer | Callable[[Request], Answer]


class ScriptedModel:
    """A `Model` whose answers are written in advance."""

    def __init__(
        self,
        script: Iterable[Scripted] = (),
        *,
        name: str = "scripted/model",
        default: Scripted | None = None,
        window: int = 100_000,
        images: bool | None = True,
    ) -> None:
        self.name = name
        self.script: list[Scripted] = list(script)
        self.default = default
        self.window = window
        self.images = images
        self.requests: list[Request] = []

    def add(self, *items: Scripted) -> None:
        self.script.extend(items)

    @property
    def last_request(self) -> Request:
        return self.requests[-1]

    async def stream(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], sink: StreamSink) -> ModelTurn:
        request = Request(json.loads(json.dumps(list(messages))), [dict(tool) for tool in tools])
        self.requests.append(request)
        answer = self._next(request)
        if isinstance(answer, ModelError):
            raise answer
        await anyio.lowlevel.checkpoint()
        if answer.thought:
            await sink.on_thought(answer.thought)
        pieces = _pieces(answer.text, answer.chunk_size)
        for index, piece in enumerate(pieces):
            if answer.hold is not None and index == answer.hold_after:
                await answer.hold.wait()
            await sink.on_text(piece)
        if answer.hold is not None and len(pieces) <= answer.hold_after:
            await answer.hold.wait()
        return _turn(answer)

    async def complete(self, messages: Sequence[Message]) -> str:
        async def ignore(_: str) -> None:
            return None

        return (await self.stream(messages, (), StreamSink(on_text=ignore, on_thought=ignore))).text

    async def context_window(self) -> int:
        return self.window

    async def context_window_known(self) -> bool:
        return True

    async def accepts_images(self) -> bool | None:
        return self.images

    def _next(self, request: Request) -> Answer:
        item = self.script.pop(0) if self.script else self.default
        if item is None:
            raise ModelError("The scripted model has no answer left")
        return item(request) if callable(item) else item


def _pieces(text: str, size: int) -> list[str]:
    if not text:
        return []
    if size <= 0:
        return [text]
    return [text[i : i + size] for i in range(0, len(text), size)]


def _turn(reply: Reply) -> ModelTurn:
    calls = [call.request() for call in reply.calls]
    message: Message = {"role": "assistant", "content": reply.text or (None if calls else "")}
    if calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in calls
        ]
    finish = reply.finish_reason or ("tool_calls" if calls else "stop")
    if not reply.late_bill:
        return ModelTurn(message, reply.text, calls, finish, reply.usage or Usage(), reply.cost)

    async def settle() -> Spend:
        await anyio.lowlevel.checkpoint()
        return Spend(reply.usage or Usage(), reply.cost)

    return ModelTurn(message, reply.text, calls, finish, Usage(), None, settle)
