"""A fake OpenAI-compatible chat-completions server for tests.

This module owns the scripted LLM that tests talk to over real HTTP (through litellm, the OpenAI SDK or any
HTTP client). It serves ``POST /v1/chat/completions`` on ``127.0.0.1`` at a random free port, from a uvicorn
server running in a background thread, and:

* answers streaming requests (``"stream": true``) with real SSE in ``chat.completion.chunk`` format: a role
  chunk, reasoning deltas (``delta.reasoning_content``, DeepSeek/vLLM style), text deltas, tool-call deltas
  (the first fragment of each call carries ``id``/``type``/``function.name``, the arguments follow in several
  fragments), a ``finish_reason`` chunk, a usage chunk when ``stream_options.include_usage`` is set, then
  ``data: [DONE]``; non-streaming requests get an ordinary ``chat.completion`` object;
* replies from a FIFO script (:meth:`FakeLLM.add` / :meth:`FakeLLM.script`), one entry per request; an entry is
  a :class:`Reply`, an :class:`ErrorReply` or a callable ``(request_body) -> Reply | ErrorReply``; when the
  script is empty the ``default`` entry answers (a short text, ``"(fake llm: script exhausted)"``, unless
  configured otherwise);
* injects faults as script entries (:class:`Fault`): HTTP errors with an OpenAI-style JSON body and optional
  ``Retry-After``, a stream cut after N chunks (the connection is closed without the terminating chunk of the
  chunked body, so the client sees a broken stream), a stall before the first byte or after N chunks, and a
  per-chunk delay; pauses end at once when the server shuts down or the client goes away;
* records every request (:attr:`FakeLLM.requests`, :attr:`FakeLLM.recorded`, :attr:`FakeLLM.last_request`), with
  its :class:`Timing` (``time.perf_counter()`` when its body had arrived, as the response started and as its last
  bytes were written), so a benchmark can put the server's times next to its client's;
* reports prompt-cache usage (``Reply(usage=Usage(..., cached_tokens=..., cache_write_tokens=...))``: OpenAI's
  ``usage.prompt_tokens_details.cached_tokens``), holds a reply at a chunk until a test opens a gate
  (``Reply(gate=threading.Event(), stall_after=N)``), and also speaks Anthropic's streaming Messages API on
  ``POST /v1/messages`` (the same script entries, rendered by :mod:`tests.support.fake_anthropic`).

Usage::

    with FakeLLM() as llm:
        llm.script([
            Reply(thought="Let me look.", calls=[Call("read_file", {"path": "a.py"})]),
            Reply("All done.", chunk_size=4),
            Fault.status(429, retry_after=1),
        ])
        ...  # point the client at llm.base_url ("http://127.0.0.1:PORT/v1")
        assert llm.last_request["messages"][-1]["role"] == "tool"

or take the ``fake_llm`` pytest fixture (register it with ``pytest_plugins = ["tests.support.fake_llm"]`` in the
root conftest, or import it). A "chunk" below is one SSE ``data:`` event; the role chunk is chunk number 1.
Callable entries run on the server's event loop thread: keep them quick and non-blocking. An exception raised by
one is answered with HTTP 500 and raised again from :meth:`FakeLLM.stop` (so from the ``with`` block's exit).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import json
import logging
import socket
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, TypeAlias

import pytest
import uvicorn

from coder_agent.model.base import Usage
from coder_agent.model.scripted import Call
from coder_agent.model.scripted import Reply as ScriptedReply
from tests.support.fake_anthropic import anthropic_events

__all__ = [
    "DEFAULT_TEXT",
    "Call",
    "ErrorReply",
    "FakeLLM",
    "Fault",
    "FinishReason",
    "RecordedRequest",
    "Reply",
    "ScriptEntry",
    "Timing",
    "Usage",
    "fake_llm",
]

FinishReason: TypeAlias = Literal["stop", "tool_calls", "length", "content_filter"]

DEFAULT_TEXT = "(fake llm: script exhausted)"

_Scope: TypeAlias = MutableMapping[str, Any]
_Message: TypeAlias = MutableMapping[str, Any]
_Receive: TypeAlias = Callable[[], Awaitable[_Message]]
_Send: TypeAlias = Callable[[_Message], Awaitable[None]]
_Headers: TypeAlias = list[tuple[bytes, bytes]]

_CHAT_PATHS = frozenset({"/v1/chat/completions", "/chat/completions"})
_MESSAGES_PATHS = frozenset({"/v1/messages", "/messages"})
_ERROR_TYPES: Mapping[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
}


# --------------------------------------------------------------------------------------------------------------
# Script entries
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply(ScriptedReply):
    """A successful completion, in the scripted model's vocabulary (:class:`coder_agent.model.scripted.Reply`),
    plus how to deliver it.

    Content: ``text`` (positional), ``thought`` (``reasoning_content``), ``calls`` (:class:`Call`);
    ``finish_reason`` defaults to ``"tool_calls"`` when there are tool calls, else ``"stop"``; ``usage`` is a
    :class:`Usage` (its ``cached_tokens`` and ``cache_write_tokens`` of the prompt tokens were read from / written
    to the provider's prompt cache) and defaults to a rough estimate (characters / 4). The scripted-only fields
    (``cost``, ``hold``, ``late_bill``) mean nothing here: the client computes the cost.
    Streaming shape: ``chunk_size`` characters per text/reasoning delta and per tool-argument fragment;
    ``no_usage``: no usage chunk, even when the request asks for one.
    Delivery (usually set through :class:`Fault`): ``chunk_delay`` seconds before every chunk after the first;
    ``stall`` seconds of silence, before the response headers (``stall_after=None``) or after ``stall_after``
    chunks; ``gate``: like a stall after ``stall_after`` chunks, but until the test sets the event (streams
    only); ``cut_after``: close the connection after that many chunks, without ``[DONE]``. A non-streaming
    reply stalls before its response, ignores ``chunk_delay`` and, when cut, is cut halfway through its body.
    A pause interrupted by server shutdown or by the client going away drops the response (if the headers were
    not sent yet, uvicorn answers 500). ``model`` defaults to the requested model.
    There is no ``Reply.text(...)`` factory (it would clash with the field): write ``Reply("hi", chunk_size=5)``.
    """

    chunk_size: int = 8
    chunk_delay: float = 0.0
    stall: float = 0.0
    stall_after: int | None = None
    cut_after: int | None = None
    model: str | None = None
    gate: threading.Event | None = None
    no_usage: bool = False
    """Send no usage chunk even when the request asks for one (a provider that never reports usage)."""

    def __post_init__(self) -> None:
        if self.chunk_size < 1:
            raise ValueError("chunk_size must be >= 1")
        if self.cut_after is not None and self.cut_after < 0:
            raise ValueError("cut_after must be >= 0")

    @classmethod
    def tool(
        cls, name: str, arguments: Mapping[str, Any] | str | None = None, *, id: str | None = None, **kwargs: Any
    ) -> Reply:
        """A reply making one tool call: ``Reply.tool("read_file", {"path": "a.py"})``."""
        return cls(calls=[Call(name, {} if arguments is None else arguments, id=id)], **kwargs)

    @property
    def effective_finish_reason(self) -> FinishReason:
        if self.finish_reason is not None:
            return self.finish_reason
        return "tool_calls" if self.calls else "stop"

    @property
    def cached(self) -> int:
        return self.usage.cached_tokens if self.usage is not None else 0

    @property
    def cache_write(self) -> int:
        return self.usage.cache_write_tokens if self.usage is not None else 0


@dataclass(frozen=True)
class ErrorReply:
    """An HTTP error answer with an OpenAI-style body ``{"error": {"message", "type", "param", "code"}}``."""

    status: int
    message: str
    type: str
    code: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.type, "param": None, "code": self.code}}


ScriptEntry: TypeAlias = Reply | ErrorReply | Callable[[dict[str, Any]], Reply | ErrorReply]

_CUT_FILLER = Reply("This reply is long enough to be cut before it ends. " * 4)


class Fault:
    """Factories for injectable faults; each returns a script entry."""

    @staticmethod
    def status(
        status: int,
        *,
        message: str | None = None,
        retry_after: float | None = None,
        headers: Mapping[str, str] | None = None,
        type: str | None = None,
        code: str | None = None,
    ) -> ErrorReply:
        """HTTP ``status`` with a JSON error body; ``retry_after`` adds a ``Retry-After`` header."""
        all_headers = dict(headers or {})
        if retry_after is not None:
            all_headers["retry-after"] = f"{retry_after:g}"
        if code is None and status == 429:
            code = "rate_limit_exceeded"
        return ErrorReply(
            status=status,
            message=message if message is not None else f"fake llm: injected HTTP {status}",
            type=type or _ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error"),
            code=code,
            headers=all_headers,
        )

    @staticmethod
    def cut(after_chunks: int, reply: Reply | None = None) -> Reply:
        """Close the connection abruptly after ``after_chunks`` SSE events (a long text reply by default)."""
        return dataclasses.replace(reply or _CUT_FILLER, cut_after=after_chunks)

    @staticmethod
    def stall(seconds: float, *, after_chunks: int | None = None, reply: Reply | None = None) -> Reply:
        """Send nothing for ``seconds``: before the first byte (default) or after ``after_chunks`` events."""
        return dataclasses.replace(reply or Reply("(fake llm: stalled reply)"), stall=seconds, stall_after=after_chunks)

    @staticmethod
    def slow(chunk_delay: float, reply: Reply | None = None) -> Reply:
        """Wait ``chunk_delay`` seconds before every chunk after the first."""
        return dataclasses.replace(reply or Reply("(fake llm: slow reply)"), chunk_delay=chunk_delay)


@dataclass
class Timing:
    """When (``time.perf_counter()``) a request's body had arrived, its response started and its last bytes were
    written; ``None`` until then, and ``finished`` stays ``None`` for a response cut or dropped on purpose."""

    arrived: float = field(default_factory=time.perf_counter)
    started: float | None = None
    finished: float | None = None


@dataclass(frozen=True)
class RecordedRequest:
    """One request as received: method, path, headers (lower-case names), parsed JSON body and timing."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: dict[str, Any]
    timing: Timing = field(default_factory=Timing, compare=False)

    @property
    def bearer(self) -> str | None:
        """The ``Authorization: Bearer`` key, if any."""
        auth = self.headers.get("authorization", "")
        return auth[len("bearer ") :] if auth.lower().startswith("bearer ") else None


# --------------------------------------------------------------------------------------------------------------
# Rendering replies as OpenAI JSON
# --------------------------------------------------------------------------------------------------------------


class _Abort(Exception):
    """Raised inside the ASGI app to make uvicorn drop the connection (an intentional cut)."""


def _drop_abort_records(record: logging.LogRecord) -> bool:
    exc = record.exc_info[1] if record.exc_info else None
    return not isinstance(exc, _Abort)


# uvicorn logs every exception escaping the app; the intentional ones are noise.
logging.getLogger("uvicorn.error").addFilter(_drop_abort_records)


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


@dataclass(frozen=True)
class _Rendered:
    """What one request gets: its ids, model and usage, ready to serialise."""

    reply: Reply
    completion_id: str
    model: str
    created: int
    call_ids: list[str]
    usage: dict[str, Any]

    def _chunk(self, choices: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        return {
            "id": self.completion_id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": "fp_fake",
            "choices": choices,
            **extra,
        }

    def _delta(self, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return self._chunk([{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}])

    def chunks(self, include_usage: bool) -> list[dict[str, Any]]:
        reply, size = self.reply, self.reply.chunk_size
        out = [self._delta({"role": "assistant", "content": ""})]
        out += [self._delta({"reasoning_content": piece}) for piece in _pieces(reply.thought, size)]
        out += [self._delta({"content": piece}) for piece in _pieces(reply.text, size)]
        for index, (call, call_id) in enumerate(zip(reply.calls, self.call_ids, strict=True)):
            head = {"index": index, "id": call_id, "type": "function", "function": {"name": call.name, "arguments": ""}}
            out.append(self._delta({"tool_calls": [head]}))
            for piece in _pieces(call.arguments_json(), size):
                out.append(self._delta({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
        out.append(self._delta({}, reply.effective_finish_reason))
        if include_usage and not reply.no_usage:
            for chunk in out:
                chunk["usage"] = None
            out.append(self._chunk([], usage=self.usage))
        return out

    def completion(self) -> dict[str, Any]:
        reply = self.reply
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or (None if reply.calls else "")}
        if reply.thought:
            message["reasoning_content"] = reply.thought
        if reply.calls:
            message["tool_calls"] = [
                {"id": call_id, "type": "function", "function": {"name": call.name, "arguments": call.arguments_json()}}
                for call, call_id in zip(reply.calls, self.call_ids, strict=True)
            ]
        choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": reply.effective_finish_reason}
        return {
            "id": self.completion_id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": "fp_fake",
            "choices": [choice],
            "usage": self.usage,
        }


def _render(reply: Reply, body: Mapping[str, Any], number: int) -> _Rendered:
    if reply.usage is not None:
        prompt, completion = reply.usage.prompt_tokens, reply.usage.completion_tokens
    else:
        prompt = max(1, len(json.dumps(body.get("messages", []))) // 4)
        produced = len(reply.text) + len(reply.thought)
        produced += sum(len(c.name) + len(c.arguments_json()) for c in reply.calls)
        completion = max(1, produced // 4)
    return _Rendered(
        reply=reply,
        completion_id=f"chatcmpl-fake-{number}",
        model=reply.model or str(body.get("model") or "fake-model"),
        created=int(time.time()),
        call_ids=[call.id or f"call_{number}_{i}" for i, call in enumerate(reply.calls)],
        usage=_usage(prompt, completion, reply.cached),
    )


def _usage(prompt: int, completion: int, cached: int) -> dict[str, Any]:
    usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion}
    usage["total_tokens"] = prompt + completion
    if cached:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    return usage


def _json_bytes(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


# --------------------------------------------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------------------------------------------


class FakeLLM:
    """A scripted OpenAI-compatible server on ``127.0.0.1``; use as a context manager (or ``start``/``stop``)."""

    def __init__(self, *, default: ScriptEntry | None = None, startup_timeout: float = 10.0) -> None:
        self.default: ScriptEntry = default if default is not None else Reply(DEFAULT_TEXT)
        self._startup_timeout = startup_timeout
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._script: deque[ScriptEntry] = deque()
        self._recorded: list[RecordedRequest] = []
        self._errors: list[BaseException] = []
        self._numbers = itertools.count(1)
        self._port: int | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._thread_error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closing: asyncio.Event | None = None

    # ---- lifecycle ------------------------------------------------------------------------------------------

    def start(self) -> FakeLLM:
        if self._thread is not None:
            raise RuntimeError("FakeLLM already started")
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        # As real model servers do: without it, a response's small writes wait on a kept-alive client's delayed
        # ACK, and each reply ends about 40 ms late (accepted connections inherit the option on Linux).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            sock.bind(("127.0.0.1", 0))
        except OSError:
            sock.close()
            raise
        self._port = sock.getsockname()[1]
        config = uvicorn.Config(
            self._app,
            interface="asgi3",
            http="h11",
            ws="none",
            lifespan="off",
            log_config=None,
            access_log=False,
            proxy_headers=False,
            timeout_graceful_shutdown=2,
        )
        server = self._server = uvicorn.Server(config)
        thread = self._thread = threading.Thread(target=self._run, args=(sock,), name=f"fake-llm:{self._port}")
        thread.daemon = True
        thread.start()
        deadline = time.monotonic() + self._startup_timeout
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("fake llm server did not start") from self._thread_error
            time.sleep(0.005)
        return self

    def stop(self) -> None:
        """Stop the server (promptly: stalled responses are dropped) and re-raise a callable entry's exception."""
        thread, server, loop, closing = self._thread, self._server, self._loop, self._closing
        if thread is None or server is None:
            return
        server.should_exit = True
        if loop is not None and closing is not None:
            with contextlib.suppress(RuntimeError):  # RuntimeError: the loop is already closed
                loop.call_soon_threadsafe(closing.set)
        thread.join(timeout=10)
        if thread.is_alive():
            raise RuntimeError("fake llm server thread did not stop")
        self._thread = self._server = self._loop = self._closing = None
        with self._lock:
            errors, self._errors = self._errors, []
        if errors:
            raise errors[0]

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is None:
            self.stop()
            return
        with contextlib.suppress(Exception):  # don't hide the error already propagating
            self.stop()

    def _run(self, sock: socket.socket) -> None:
        try:
            asyncio.run(self._serve(sock))
        except BaseException as exc:  # surfaced by start()
            self._thread_error = exc
        finally:
            sock.close()

    async def _serve(self, sock: socket.socket) -> None:
        assert self._server is not None
        self._loop = asyncio.get_running_loop()
        self._closing = asyncio.Event()
        await self._server.serve(sockets=[sock])

    # ---- public state -----------------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("FakeLLM not started")
        return self._port

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``: the ``api_base`` to give litellm / the OpenAI SDK."""
        return f"http://127.0.0.1:{self.port}/v1"

    def add(self, *entries: ScriptEntry) -> FakeLLM:
        """Append entries to the script; each request consumes one."""
        with self._lock:
            self._script.extend(entries)
        return self

    def script(self, entries: Iterable[ScriptEntry]) -> FakeLLM:
        """Append a sequence of entries to the script."""
        return self.add(*entries)

    @property
    def pending(self) -> int:
        """How many scripted entries have not been consumed yet."""
        with self._lock:
            return len(self._script)

    @property
    def recorded(self) -> list[RecordedRequest]:
        """Every chat-completions request so far (a snapshot), with headers."""
        with self._lock:
            return list(self._recorded)

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The parsed JSON body of every chat-completions request so far (a snapshot)."""
        return [r.body for r in self.recorded]

    @property
    def last_request(self) -> dict[str, Any]:
        """The body of the latest request; ``LookupError`` if there was none."""
        with self._lock:
            if not self._recorded:
                raise LookupError("fake llm: no request received yet")
            return self._recorded[-1].body

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> list[RecordedRequest]:
        """Block until at least ``count`` requests have arrived (from async code: ``anyio.to_thread.run_sync``)."""
        with self._arrived:
            if not self._arrived.wait_for(lambda: len(self._recorded) >= count, timeout):
                raise TimeoutError(f"fake llm: {len(self._recorded)} request(s) after {timeout}s, wanted {count}")
            return list(self._recorded)

    # ---- the ASGI app (runs on the server thread) -----------------------------------------------------------

    def _next_entry(self, record: RecordedRequest) -> ScriptEntry:
        with self._lock:
            self._recorded.append(record)
            self._arrived.notify_all()
            return self._script.popleft() if self._script else self.default

    async def _app(self, scope: _Scope, receive: _Receive, send: _Send) -> None:
        if scope["type"] != "http":
            return
        raw = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            raw += message.get("body", b"")
            if not message.get("more_body", False):
                break
        path = scope["path"].rstrip("/")
        if scope["method"] != "POST" or path not in _CHAT_PATHS | _MESSAGES_PATHS:
            error = Fault.status(404, message=f"fake llm: no route {scope['method']} {scope['path']}")
            await self._send_error(send, error)
            return
        try:
            body = json.loads(raw)
        except ValueError as exc:
            body = None
            problem = str(exc)
        else:
            problem = "the body must be a JSON object"
        if not isinstance(body, dict):
            await self._send_error(send, Fault.status(400, message=f"fake llm: {problem}"))
            return
        headers: dict[str, str] = {}
        for name, value in scope["headers"]:
            key = name.decode("latin-1").lower()
            headers[key] = f"{headers[key]}, {value.decode('latin-1')}" if key in headers else value.decode("latin-1")
        record = RecordedRequest(scope["method"], scope["path"], headers, body)
        send = self._timed(send, record.timing)
        entry = self._next_entry(record)
        if callable(entry):
            try:
                entry = entry(body)
            except Exception as exc:
                with self._lock:
                    self._errors.append(exc)
                await self._send_error(send, Fault.status(500, message=f"fake llm: reply callable raised {exc!r}"))
                return
        if isinstance(entry, ErrorReply):
            await self._send_error(send, entry)
            return
        disconnected = asyncio.Event()
        watcher = asyncio.create_task(self._watch_disconnect(receive, disconnected))
        try:
            rendered = _render(entry, body, next(self._numbers))
            if path in _MESSAGES_PATHS:
                # litellm's Anthropic client keeps a pooled connection open past the end of the test's event loop
                await self._stream(send, rendered, anthropic_events(rendered), b"", disconnected, close=True)
            elif body.get("stream"):
                options = body.get("stream_options")
                chunks = rendered.chunks(include_usage=isinstance(options, dict) and bool(options.get("include_usage")))
                events = [b"data: " + _json_bytes(chunk) + b"\n\n" for chunk in chunks]
                await self._stream(send, rendered, events, b"data: [DONE]\n\n", disconnected)
            else:
                await self._complete(send, rendered, disconnected)
        finally:
            watcher.cancel()

    @staticmethod
    def _timed(send: _Send, timing: Timing) -> _Send:
        """``send``, stamping ``timing`` as the response starts and as its last bytes go out: just before those
        writes, so no client can have read them before the stamp is there (the writes take microseconds)."""

        async def timed_send(message: _Message) -> None:
            if message["type"] == "http.response.start":
                timing.started = time.perf_counter()
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                timing.finished = time.perf_counter()
            await send(message)

        return timed_send

    @staticmethod
    async def _watch_disconnect(receive: _Receive, disconnected: asyncio.Event) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        disconnected.set()

    async def _pause(self, seconds: float, disconnected: asyncio.Event) -> None:
        """Sleep, but raise ``_Abort`` as soon as the server closes or the client disconnects."""
        assert self._closing is not None
        if seconds <= 0 and not (self._closing.is_set() or disconnected.is_set()):
            return
        waiters = {asyncio.create_task(self._closing.wait()), asyncio.create_task(disconnected.wait())}
        try:
            await asyncio.wait(waiters, timeout=max(seconds, 0), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()
        if self._closing.is_set() or disconnected.is_set():
            raise _Abort

    @staticmethod
    async def _start(send: _Send, status: int, headers: _Headers) -> None:
        await send({"type": "http.response.start", "status": status, "headers": headers})

    @staticmethod
    async def _body(send: _Send, data: bytes, more: bool) -> None:
        await send({"type": "http.response.body", "body": data, "more_body": more})

    async def _send_error(self, send: _Send, error: ErrorReply) -> None:
        payload = _json_bytes(error.body())
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
        headers += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in error.headers.items()]
        await self._start(send, error.status, headers)
        await self._body(send, payload, more=False)

    async def _complete(self, send: _Send, rendered: _Rendered, disconnected: asyncio.Event) -> None:
        reply = rendered.reply
        if reply.stall:
            await self._pause(reply.stall, disconnected)
        payload = _json_bytes(rendered.completion())
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
        await self._start(send, 200, headers)
        if reply.cut_after is not None:
            await self._body(send, payload[: len(payload) // 2], more=True)
            raise _Abort
        await self._body(send, payload, more=False)

    async def _hold(self, gate: threading.Event, disconnected: asyncio.Event) -> None:
        """Wait until the test sets ``gate``; raise ``_Abort`` if the server closes or the client goes away first."""
        while not gate.is_set():
            await self._pause(0.005, disconnected)

    async def _stream(
        self,
        send: _Send,
        rendered: _Rendered,
        chunks: Sequence[bytes],
        done: bytes,
        disconnected: asyncio.Event,
        *,
        close: bool = False,
    ) -> None:
        reply = rendered.reply
        if reply.stall and reply.stall_after is None:
            await self._pause(reply.stall, disconnected)
        headers = [(b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-cache")]
        if close:
            headers.append((b"connection", b"close"))
        await self._start(send, 200, headers)
        for sent, chunk in enumerate(chunks):
            if sent == reply.cut_after:
                raise _Abort
            if reply.gate is not None and sent == reply.stall_after:
                await self._hold(reply.gate, disconnected)
            if reply.stall and sent == reply.stall_after:
                await self._pause(reply.stall, disconnected)
            elif sent and reply.chunk_delay:
                await self._pause(reply.chunk_delay, disconnected)
            await self._body(send, chunk, more=True)
        if reply.cut_after is not None:  # more chunks asked for than the reply has: still no [DONE]
            raise _Abort
        if reply.stall and reply.stall_after is not None and reply.stall_after >= len(chunks):
            await self._pause(reply.stall, disconnected)
        await self._body(send, done, more=False)


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    """A started :class:`FakeLLM`, stopped after the test; litellm is loaded first (once per run), so a test's
    first prompt does not spend its time budget on the import."""
    from coder_agent.model.litellm_model import wait_for_import

    wait_for_import(120)
    with FakeLLM() as llm:
        yield llm
