"""`LitellmModel`: one streamed chat completion through litellm, with our own retries and deadlines.

litellm is loaded in the background by `model.litellm_loader` and a stream is read by
`model.litellm_stream`; this module makes the call and decides what a failure means. litellm's own
retries are off: ours honour Retry-After, back off with jitter, and never repeat text the user has
already seen (a stream cut after text was shown ends the call with `StreamCut`, keeping the partial
answer). Every call has a total deadline and an idle-stream timeout, so nothing hangs. litellm's
exceptions are translated here and nowhere else.

For Claude on Anthropic, Bedrock, Vertex and Azure, calls carry litellm's `cache_control_injection_points`
(unless `prompt_caching` is off): a cache breakpoint on the system prompt (which caches the tools and the
system prompt: they come first in the request) and one on the last message (which caches the history
for the next call). litellm writes them in each provider's own form; other providers cache a repeated
prefix by themselves.
"""

from __future__ import annotations

import datetime
import logging
import random
import re
import socket
from collections.abc import Sequence
from email.utils import parsedate_to_datetime
from types import ModuleType
from typing import Any

import anyio

from coder_agent.model import providers
from coder_agent.model.base import (
    ContextWindowExceeded,
    Message,
    ModelAuthError,
    ModelError,
    ModelSettings,
    ModelTurn,
    StreamCut,
    StreamSink,
)
from coder_agent.model.litellm_loader import load_litellm, model_info, start_background_import, wait_for_import
from coder_agent.model.litellm_stream import Gathered, StreamStalled, partial_turn

__all__ = ["LitellmModel", "start_background_import", "wait_for_import"]

log = logging.getLogger(__name__)

DEFAULT_CONTEXT_WINDOW = 32_768
MAX_RETRY_AFTER = 120.0
MAX_BACKOFF = 30.0
CACHE_BREAKPOINTS = ({"location": "message", "role": "system"}, {"location": "message", "index": -1})
"""litellm's `cache_control_injection_points`: the system prompt (and the tools before it), and the last message."""


class _Retryable(Exception):
    """A failure worth another attempt, with the provider's words and an optional server-given delay."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class LitellmModel:
    """A `Model` backed by litellm."""

    def __init__(self, settings: ModelSettings) -> None:
        self.settings = settings
        self.name = settings.model

    async def stream(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], sink: StreamSink) -> ModelTurn:
        """Stream one completion to `sink`; retry transient failures; raise a ModelError when giving up.

        The turn comes back as soon as the answer is complete; its `settle` brings the usage and cost."""
        litellm = await load_litellm()
        attempt = 0
        while True:
            progress = Gathered(litellm, self.settings.model, messages)
            try:
                with anyio.fail_after(self.settings.request_timeout):
                    return await self._attempt(litellm, messages, tools, sink, progress)
            except TimeoutError:
                failure: Exception = _Retryable(f"The model did not finish within {self.settings.request_timeout:g} s")
            except (ModelError, _Retryable) as exc:
                failure = exc
            except Exception as exc:
                failure = _translate(litellm, exc, self.settings)
            if progress.shown:
                partial = partial_turn(progress.partial_text)
                raise StreamCut(f"The model's answer was cut off: {failure}", partial) from failure
            if not isinstance(failure, _Retryable):
                raise failure
            if attempt >= self.settings.retries:
                raise ModelError(f"{failure} (gave up after {attempt + 1} attempts)") from failure
            delay = self._delay(attempt, failure.retry_after)
            if delay is None:
                raise ModelError(f"{failure} (the provider asked to wait too long to retry)") from failure
            log.warning("model call failed (%s); retry %d in %.1f s", failure, attempt + 1, delay)
            await sink.on_retry(f"{failure}. Retrying in {delay:.0f} s…")
            await anyio.sleep(delay)
            attempt += 1

    def _delay(self, attempt: int, retry_after: float | None) -> float | None:
        if retry_after is not None:
            return None if retry_after > MAX_RETRY_AFTER else max(retry_after, 0.0)
        backoff: float = min(MAX_BACKOFF, self.settings.retry_base_delay * 2.0**attempt)
        return backoff * random.uniform(0.5, 1.0)

    def _params(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]]) -> dict[str, Any]:
        s = self.settings
        params: dict[str, Any] = {
            **s.extra_params,
            "model": s.model,
            "messages": list(messages),
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_retries": 0,
            "timeout": s.idle_timeout,
        }
        if tools:
            params["tools"] = list(tools)
        optional = {
            "api_key": s.api_key,
            "api_base": s.api_base,
            "temperature": s.temperature,
            "max_tokens": s.max_tokens,
            "reasoning_effort": s.reasoning_effort,
        }
        params.update({key: value for key, value in optional.items() if value is not None})
        if s.prompt_caching and providers.takes_cache_breakpoints(s.model):
            params.setdefault("cache_control_injection_points", [dict(point) for point in CACHE_BREAKPOINTS])
        return params

    async def _attempt(
        self,
        litellm: ModuleType,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]],
        sink: StreamSink,
        progress: Gathered,
    ) -> ModelTurn:
        idle = self.settings.idle_timeout
        with anyio.move_on_after(idle) as waiting:
            response = await litellm.acompletion(**self._params(messages, tools))
        if waiting.cancelled_caught:
            raise _Retryable(f"The model did not start answering within {idle:g} s")
        try:
            turn = await progress.read(response, sink, idle)
        except StreamStalled:
            raise _Retryable(f"The model's stream went silent for {idle:g} s") from None
        if not progress.received:
            raise _Retryable("The model returned an empty response")
        return turn

    async def complete(self, messages: Sequence[Message]) -> str:
        """A whole answer without tools or streaming to the user (summaries, titles)."""

        async def ignore(_: str) -> None:
            return None

        turn = await self.stream(messages, (), StreamSink(on_text=ignore, on_thought=ignore))
        if turn.settle is not None:
            await turn.settle()
        return turn.text

    async def context_window(self) -> int:
        """The model's input window: the config override, litellm's model map, or a conservative default."""
        if self.settings.context_window:
            return self.settings.context_window
        info = model_info(await load_litellm(), self.settings.model) or {}
        return int(info.get("max_input_tokens") or info.get("max_tokens") or DEFAULT_CONTEXT_WINDOW)

    async def context_window_known(self) -> bool:
        """Whether the window comes from the config or litellm's model map (else `DEFAULT_CONTEXT_WINDOW` is a
        guess)."""
        if self.settings.context_window:
            return True
        info = model_info(await load_litellm(), self.settings.model) or {}
        return bool(info.get("max_input_tokens") or info.get("max_tokens"))

    async def accepts_images(self) -> bool | None:
        """True or False when litellm knows the model; None when it does not (then the provider decides)."""
        info = model_info(await load_litellm(), self.settings.model)
        return None if info is None else bool(info.get("supports_vision"))


def _retry_after(exc: Exception) -> float | None:
    headers = getattr(exc, "litellm_response_headers", None)
    if headers is None:
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
    value = headers.get("retry-after") if headers is not None else None
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None

    return max(0.0, (when - datetime.datetime.now(when.tzinfo)).total_seconds())


_PREFIXES = re.compile(r"^(?:(?:litellm\.)?\w+(?:Error|Exception)(?::| -) )+")
_SSL_CONTEXT = re.compile(r" ssl:<[^>]*>")


def _words(exc: Exception) -> str:
    """The provider's message, without litellm's class-name prefixes and object reprs."""
    message = _SSL_CONTEXT.sub("", str(getattr(exc, "message", "") or exc))
    message = _PREFIXES.sub("", message).strip() or type(exc).__name__
    status = getattr(exc, "status_code", None)
    return f"{message} (HTTP {status})" if isinstance(status, int) else message


def _unreachable(exc: BaseException) -> str | None:
    """Why the server could not be reached at all (refused, unknown host), from the exception's causes."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        for candidate in (current, getattr(current, "os_error", None)):
            if isinstance(candidate, ConnectionRefusedError):
                return "connection refused"
            if isinstance(candidate, socket.gaierror):
                return "its host name does not resolve"
        current = current.__cause__ or current.__context__
    return None


def _unreachable_message(settings: ModelSettings, reason: str) -> str:
    if settings.api_base:
        return (
            f"The model server at {settings.api_base} is not reachable ({reason}). Start it, or point "
            "CODER_AGENT_API_BASE (or `api_base` in the config) at the right URL."
        )
    return f"The provider of {settings.model} is not reachable ({reason}). Check the network connection."


def _translate(litellm: ModuleType, exc: Exception, settings: ModelSettings) -> Exception:
    """A litellm exception as ContextWindowExceeded, ModelAuthError, _Retryable or ModelError."""
    errors = litellm.exceptions
    unreachable = _unreachable(exc)
    if unreachable is not None:
        return ModelError(_unreachable_message(settings, unreachable))
    words = _words(exc)
    if isinstance(exc, errors.ContextWindowExceededError):
        return ContextWindowExceeded(words)
    if isinstance(exc, errors.AuthenticationError | errors.PermissionDeniedError):
        return ModelAuthError(words)
    retryable = (
        errors.RateLimitError,
        errors.APIConnectionError,
        errors.InternalServerError,
        errors.ServiceUnavailableError,
        errors.BadGatewayError,
        errors.Timeout,
        errors.MidStreamFallbackError,
    )
    if isinstance(exc, retryable):
        return _Retryable(words, _retry_after(exc))
    status = getattr(exc, "status_code", None)
    if isinstance(exc, errors.APIError) and isinstance(status, int) and status >= 500:
        return _Retryable(words, _retry_after(exc))
    if isinstance(exc, OSError):
        return _Retryable(f"Connection error: {exc}")
    log.debug("model call failed", exc_info=exc)
    return ModelError(words)
