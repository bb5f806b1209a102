"""The loop's view of a model: the `Model` protocol, what one call produces, and the errors the loop tells apart.

Messages are OpenAI-style chat dicts (`{"role": ..., "content": ..., "tool_calls": ...}`): litellm's
common format for every provider, and plain JSON for the session store. No litellm here: `LitellmModel`
(`model.litellm_model`) and `ScriptedModel` (`model.scripted`, for tests) implement the protocol.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Message = dict[str, Any]
FinishReason = Literal["stop", "tool_calls", "length", "content_filter"]


@dataclass(frozen=True)
class ModelSettings:
    """Everything one model call needs; built from the session's Config and the key from the environment."""

    model: str
    api_key: str | None = field(default=None, repr=False)
    api_base: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    reasoning_effort: str | None = None
    context_window: int | None = None
    request_timeout: float = 600.0
    idle_timeout: float = 120.0
    retries: int = 5
    retry_base_delay: float = 1.0
    prompt_caching: bool = True
    """Mark the stable prefix with cache breakpoints where the provider needs them (Claude on Anthropic, Bedrock…)."""
    extra_params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolCallRequest:
    """A tool call the model asked for; `arguments` is the raw JSON text it wrote."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Usage:
    """The tokens of one call; `prompt_tokens` counts every input token, those served from the cache included."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    """Input tokens read from the provider's prompt cache (billed at its cheaper rate)."""
    cache_write_tokens: int = 0
    """Input tokens written to the prompt cache (Anthropic and Bedrock bill these above the input rate)."""

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class Spend:
    """What one call used and cost (`cost` None when the provider's prices are unknown)."""

    usage: Usage
    cost: float | None = None


@dataclass
class ModelTurn:
    """One model call whose answer is complete: the assistant message for the history, and what it cost.

    `settle`, when set, means the answer is complete but the provider's closing part (the usage report)
    is still on its way: awaiting it gives the call's `Spend` and closes the response. The loop awaits it
    in the background, so neither the prompt response nor the next tool call waits for the bill; until
    then `usage` and `cost` are empty.
    """

    message: Message
    text: str
    tool_calls: list[ToolCallRequest]
    finish_reason: FinishReason
    usage: Usage
    cost: float | None = None
    settle: Callable[[], Awaitable[Spend]] | None = None


async def settled(turn: ModelTurn) -> None:
    """Wait for a call's pending usage report, when the caller has nothing better to do meanwhile."""
    if turn.settle is not None:
        await turn.settle()


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


class Model(Protocol):
    """A chat model that streams one turn at a time."""

    name: str
    """The model string, as configured (`anthropic/claude-sonnet-4-5`)."""

    async def stream(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], sink: StreamSink) -> ModelTurn:
        """Stream one completion to `sink`, retrying what is worth retrying; raise a ModelError when giving up."""
        ...

    async def complete(self, messages: Sequence[Message]) -> str:
        """A whole answer without tools and without streaming it to the user (summaries)."""
        ...

    async def context_window(self) -> int:
        """How many input tokens the model takes."""
        ...

    async def context_window_known(self) -> bool:
        """Whether `context_window` is known (set in the config, or in litellm's model map) rather than guessed."""
        ...

    async def accepts_images(self) -> bool | None:
        """Whether the model takes images; None when unknown (then the provider decides)."""
        ...
