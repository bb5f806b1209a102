"""`LitellmModel`: one streamed chat completion through litellm, with our own retries and deadlines.

This is the only module that imports litellm. The import (seconds, ~200 MB) runs in a daemon thread
started right after the agent loads (`start_background_import`); only a prompt that arrives before it is
done waits for it. litellm is told to keep off the network at import (`LITELLM_LOCAL_MODEL_COST_MAP`) and
to print nothing (`suppress_debug_info`), and its own retries are off: ours honour Retry-After, back off
with jitter, and never repeat text the user has already seen (a stream cut after text was shown ends the
call with `StreamCut`, keeping the partial answer). Every call has a total deadline and an idle-stream
timeout, so nothing hangs. litellm's exceptions are translated here and nowhere else.
"""

from __future__ import annotations

import datetime
import logging
import os
import random
import re
import socket
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from types import ModuleType
from typing import Any

import anyio

from coder_agent.model.base import (
    ContextWindowExceeded,
    FinishReason,
    Message,
    ModelAuthError,
    ModelError,
    ModelSettings,
    ModelTurn,
    StreamCut,
    StreamSink,
    ToolCallRequest,
    Usage,
)

log = logging.getLogger(__name__)

DEFAULT_CONTEXT_WINDOW = 32_768
MAX_RETRY_AFTER = 120.0
MAX_BACKOFF = 30.0

_UNPRICED: set[str] = set()
_import_started = threading.Lock()
_import_done = threading.Event()
_litellm: ModuleType | None = None
_import_error: BaseException | None = None


def _import_litellm() -> None:
    global _litellm, _import_error
    try:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        litellm.suppress_debug_info = True
        litellm.drop_params = True
        litellm.telemetry = False
        for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):
            logging.getLogger(name).setLevel(logging.WARNING)
        _litellm = litellm
        log.info("litellm %s loaded", getattr(litellm, "__version__", "?"))
    except BaseException as exc:  # reported to the first prompt that needs the model
        _import_error = exc
        log.exception("litellm failed to import")
    finally:
        _import_done.set()


def start_background_import() -> None:
    """Begin importing litellm in a daemon thread (once); returns at once."""
    if _import_started.acquire(blocking=False):
        threading.Thread(target=_import_litellm, name="litellm-import", daemon=True).start()


def wait_for_import(timeout: float) -> bool:
    """Block until litellm has loaded (starting the import if needed); False if it is still loading."""
    start_background_import()
    return _import_done.wait(timeout)


async def load_litellm() -> ModuleType:
    """The litellm module, waiting for the background import if it is still running."""
    start_background_import()
    if not _import_done.is_set():
        await anyio.to_thread.run_sync(_import_done.wait, abandon_on_cancel=True)
    if _litellm is None:
        raise ModelError(f"The model library (litellm) failed to load: {_import_error}")
    return _litellm


class _Retryable(Exception):
    """A failure worth another attempt, with the provider's words and an optional server-given delay."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass
class _Progress:
    """What one attempt has streamed so far."""

    text: list[str] = field(default_factory=list)
    shown: bool = False


class LitellmModel:
    """A `Model` backed by litellm."""

    def __init__(self, settings: ModelSettings) -> None:
        self.settings = settings
        self.name = settings.model

    async def stream(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], sink: StreamSink) -> ModelTurn:
        """Stream one completion to `sink`; retry transient failures; raise a ModelError when giving up."""
        litellm = await load_litellm()
        attempt = 0
        while True:
            progress = _Progress()
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
                partial = _partial_turn("".join(progress.text))
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
        return params

    async def _attempt(
        self,
        litellm: ModuleType,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]],
        sink: StreamSink,
        progress: _Progress,
    ) -> ModelTurn:
        idle = self.settings.idle_timeout
        with anyio.move_on_after(idle) as waiting:
            response = await litellm.acompletion(**self._params(messages, tools))
        if waiting.cancelled_caught:
            raise _Retryable(f"The model did not start answering within {idle:g} s")
        chunks: list[Any] = []
        iterator = response.__aiter__()
        while True:
            with anyio.move_on_after(idle) as waiting:
                try:
                    chunk = await iterator.__anext__()
                except StopAsyncIteration:
                    break
            if waiting.cancelled_caught:
                raise _Retryable(f"The model's stream went silent for {idle:g} s")
            chunks.append(chunk)
            if not chunk.choices:
                continue
            delta = chunk.choices[0].delta
            thought = getattr(delta, "reasoning_content", None)
            if thought:
                progress.shown = True
                await sink.on_thought(thought)
            if delta.content:
                progress.shown = True
                progress.text.append(delta.content)
                await sink.on_text(delta.content)
        if not chunks:
            raise _Retryable("The model returned an empty response")
        return _assemble(litellm, chunks, messages, self.settings.model)

    async def complete(self, messages: Sequence[Message]) -> str:
        """A whole answer without tools or streaming to the user (summaries, titles)."""

        async def ignore(_: str) -> None:
            return None

        turn = await self.stream(messages, (), StreamSink(on_text=ignore, on_thought=ignore))
        return turn.text

    async def context_window(self) -> int:
        """The model's input window: the config override, litellm's model map, or a conservative default."""
        if self.settings.context_window:
            return self.settings.context_window
        litellm = await load_litellm()
        try:
            info = litellm.get_model_info(self.settings.model)
        except Exception:
            return DEFAULT_CONTEXT_WINDOW
        return int(info.get("max_input_tokens") or info.get("max_tokens") or DEFAULT_CONTEXT_WINDOW)

    async def accepts_images(self) -> bool | None:
        """True or False when litellm knows the model; None when it does not (then the provider decides)."""
        litellm = await load_litellm()
        try:
            litellm.get_model_info(self.settings.model)
        except Exception:
            return None
        return bool(litellm.supports_vision(self.settings.model))


def _assemble(litellm: ModuleType, chunks: list[Any], messages: Sequence[Message], model: str) -> ModelTurn:
    built = litellm.stream_chunk_builder(chunks, messages=list(messages))
    choice = built.choices[0]
    message = choice.message
    text = message.content or ""
    calls = [
        ToolCallRequest(
            id=call.id or f"call_{uuid.uuid4().hex[:24]}",
            name=call.function.name or "",
            arguments=call.function.arguments or "{}",
        )
        for call in (message.tool_calls or [])
    ]
    history: Message = {"role": "assistant", "content": text or (None if calls else "")}
    if calls:
        history["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in calls
        ]
    thinking = getattr(message, "thinking_blocks", None)
    if thinking:
        history["thinking_blocks"] = thinking
    usage = _usage(getattr(built, "usage", None))
    cost = (getattr(chunks[-1], "_hidden_params", None) or {}).get("response_cost")
    if cost is None and model not in _UNPRICED:
        try:
            cost = litellm.completion_cost(completion_response=built, model=model)
        except Exception:
            _UNPRICED.add(model)  # litellm has no price for it: do not ask again on every call
            cost = None
    return ModelTurn(
        message=history,
        text=text,
        tool_calls=calls,
        finish_reason=_finish_reason(choice.finish_reason, bool(calls)),
        usage=usage,
        cost=float(cost) if cost else None,
    )


def _usage(raw: Any) -> Usage:
    if raw is None:
        return Usage()
    details = getattr(raw, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    return Usage(
        prompt_tokens=int(getattr(raw, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(raw, "completion_tokens", 0) or 0),
        cached_tokens=int(cached or 0),
    )


def _finish_reason(raw: str | None, has_calls: bool) -> FinishReason:
    if has_calls:
        return "tool_calls"
    if raw == "length":
        return "length"
    if raw == "content_filter":
        return "content_filter"
    return "stop"


def _partial_turn(text: str) -> ModelTurn:
    return ModelTurn(
        message={"role": "assistant", "content": text}, text=text, tool_calls=[], finish_reason="stop", usage=Usage()
    )


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
