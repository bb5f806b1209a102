"""What one model call produces, and the model errors the loop tells apart. No litellm here.

Messages are OpenAI-style chat dicts (`{"role": ..., "content": ..., "tool_calls": ...}`): litellm's
common format for every provider, and plain JSON for the session store.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

Message = dict[str, Any]
FinishReason = Literal["stop", "tool_calls", "length", "content_filter"]


@dataclass(frozen=True)
class ToolCallRequest:
    """A tool call the model asked for; `arguments` is the raw JSON text it wrote."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass
class ModelTurn:
    """One finished model call: the assistant message for the history, and what it cost."""

    message: Message
    text: str
    tool_calls: list[ToolCallRequest]
    finish_reason: FinishReason
    usage: Usage
    cost: float | None = None


@dataclass
class StreamSink:
    """Where streamed deltas go as they arrive (to the client, in practice)."""

    on_text: Callable[[str], Awaitable[None]]
    on_thought: Callable[[str], Awaitable[None]]
    on_retry: Callable[[str], Awaitable[None]] = field(default=lambda note: _nothing())


async def _nothing() -> None:
    return None


class ModelError(Exception):
    """The model call failed for good; the message carries the provider's own words for the user."""


class ContextWindowExceeded(ModelError):
    """The request did not fit the model's context window."""


class ModelAuthError(ModelError):
    """The provider rejected the credentials."""


class StreamCut(ModelError):
    """The stream broke after text had already been shown to the user; the partial text is kept."""

    def __init__(self, message: str, partial: ModelTurn) -> None:
        super().__init__(message)
        self.partial = partial
