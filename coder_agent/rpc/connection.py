"""One JSON-RPC 2.0 connection over a pair of byte streams, in both directions at once.

The connection owns: framing (one JSON object per line), request ids and the correlation of the peer's
responses with our requests, one task per incoming request (so requests run concurrently), the peer's
`$/cancel_request`, timeouts on our own requests (a late answer to one we cancelled is expected, and logged at
debug only), and THE mapping from exceptions to wire errors:
`RpcError` keeps its code, a pydantic `ValidationError` becomes -32602 naming the bad fields (never their
values), anything else becomes -32603 with the traceback in the log only. Text is made safe where it enters:
a lone UTF-16 surrogate (`\ud800`, which no UTF-8 encoder accepts) becomes U+FFFD, and a message nested
deeper than `MAX_DEPTH` is refused (-32602 for a request, dropped for a notification).

The byte streams carry newline-delimited frames (stdio), or, with `whole_messages`, one message per `receive()`
and per `send()` (a WebSocket's text messages: no newline is added or looked for, the transport bounds a
message's size). It knows nothing of ACP: methods are strings, params and results are plain JSON values, and the
`Dispatcher` decides what a method means. Notifications from the peer are handled in arrival order,
before the next frame is read, so a `session/cancel` always takes effect before a later request.
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import re
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio
from anyio.abc import TaskGroup

from coder_agent.errors import (
    ClientError,
    ClientTimeout,
    InternalError,
    InvalidParams,
    InvalidRequest,
    ParseError,
    RequestCancelled,
    RpcError,
    field_problems,
)
from coder_agent.rpc.framing import ByteSink, ByteSource, FrameTooLarge, read_frames

log = logging.getLogger(__name__)

RequestId = int | str | None
CANCEL_REQUEST = "$/cancel_request"
DEFAULT_REQUEST_TIMEOUT = 60.0
_LOG_FRAME_CHARS = 2000
CANCELLED_IDS_KEPT = 1000
"""How many of our requests cancelled or timed out are remembered, so the peer's late answer is expected."""
MAX_DEPTH = 128
"""How deeply a message's JSON may nest; ACP's deepest objects are a handful of levels."""
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class Dispatcher(Protocol):
    """What the connection calls for the peer's requests and notifications."""

    async def handle_request(self, method: str, params: Any) -> Any:
        """Return the result (or a `FollowedBy`), or raise `RpcError` (e.g. `MethodNotFound`)."""
        ...

    async def handle_notification(self, method: str, params: Any) -> None:
        """Act on a notification quickly; must not wait on the peer. Unknown ones are ignored."""
        ...


@dataclass(frozen=True)
class FollowedBy:
    """A handler's result, and work to run once its response is written (say, notifications that must follow it)."""

    result: Any
    then: Callable[[], Awaitable[None]]


@dataclass
class _Outgoing:
    method: str
    done: anyio.Event = field(default_factory=anyio.Event)
    result: Any = None
    error: Mapping[str, Any] | None = None


def as_invalid_params(exc: Exception) -> InvalidParams | None:
    """A pydantic ValidationError as InvalidParams naming each bad field (never its value); else None.

    pydantic is looked up, not imported: if it is not loaded yet, nothing could have raised its errors.
    """
    pydantic = sys.modules.get("pydantic")
    if pydantic is None or not isinstance(exc, pydantic.ValidationError):
        return None
    problems = [{"field": p.field or "params", "message": p.message} for p in field_problems(exc)]
    text = "; ".join(f"{p['field']}: {p['message']}" for p in problems)
    return InvalidParams(f"Invalid params: {text}", {"errors": problems})


def _clean(message: Any, fix_surrogates: bool) -> bool:
    """Replace lone surrogates in every string (in place); False if the message nests deeper than MAX_DEPTH."""
    stack: list[tuple[Any, int]] = [(message, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            return False
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in list(items):
            if isinstance(value, dict | list):
                stack.append((value, depth + 1))
            elif fix_surrogates and isinstance(value, str):
                node[key] = _LONE_SURROGATE.sub("\ufffd", value)
        if fix_surrogates and isinstance(node, dict):
            for key in [k for k in node if _LONE_SURROGATE.search(k)]:
                node[_LONE_SURROGATE.sub("\ufffd", key)] = node.pop(key)
    return True


async def _whole_messages(stream: ByteSource) -> AsyncIterator[bytes | FrameTooLarge]:
    """Each message the stream gives, until it ends."""
    while True:
        try:
            yield await stream.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            return


def _valid_id(value: Any) -> bool:
    return value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


class Connection:
    """A JSON-RPC peer: serve the other side's requests and make our own."""

    def __init__(
        self,
        receive: ByteSource,
        send: ByteSink,
        dispatcher: Dispatcher,
        *,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        whole_messages: bool = False,
    ) -> None:
        self._receive = receive
        self._whole_messages = whole_messages
        self._send_stream = send
        self._dispatcher = dispatcher
        self._request_timeout = request_timeout
        self._write_lock = anyio.Lock()
        self._ids = itertools.count(1)
        self._outgoing: dict[int, _Outgoing] = {}
        self._given_up: dict[int, None] = {}  # our requests cancelled or timed out, oldest first (bounded)
        self._incoming: dict[RequestId, anyio.CancelScope] = {}
        self._task_group: TaskGroup | None = None
        self._drained: anyio.Event | None = None  # set when the last running request ends, at shutdown
        self._closed = False

    async def serve(self, on_input_closed: Callable[[], None] | None = None, drain: float = 1.0) -> None:
        """Read and handle frames until the input ends.

        At the end of input, `on_input_closed` runs (to cancel long work), the requests still running get
        `drain` seconds to answer, and whatever is left is cancelled.
        """
        try:
            async with anyio.create_task_group() as task_group:
                self._task_group = task_group
                async for frame in self._frames():
                    if isinstance(frame, FrameTooLarge):
                        await self._send_error(None, ParseError("Parse error: message too large"))
                    else:
                        await self._on_frame(frame)
                log.info("input closed; shutting the connection down")
                if on_input_closed is not None:
                    on_input_closed()
                if self._incoming:
                    self._drained = anyio.Event()
                    with anyio.move_on_after(drain):
                        await self._drained.wait()
                task_group.cancel_scope.cancel()
        finally:
            self._closed = True
            for pending in self._outgoing.values():
                pending.error = {"code": -32603, "message": "The connection closed before the client answered"}
                pending.done.set()

    def _frames(self) -> AsyncIterator[bytes | FrameTooLarge]:
        return _whole_messages(self._receive) if self._whole_messages else read_frames(self._receive)

    # ---- our requests to the peer -------------------------------------------------------------

    async def request(self, method: str, params: Any, *, timeout: float | None = None) -> Any:
        """Send a request and wait for its result; raises ClientError, ClientTimeout, or is cancelled."""
        if self._closed:
            raise ClientError(-32603, "The client connection is closed")
        limit = self._request_timeout if timeout is None else timeout
        request_id = next(self._ids)
        pending = _Outgoing(method)
        self._outgoing[request_id] = pending
        try:
            await self._write({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
            with anyio.fail_after(limit if math.isfinite(limit) else None):
                await pending.done.wait()
        except TimeoutError:
            await self._cancel_outgoing(request_id)
            raise ClientTimeout(method, limit) from None
        except anyio.get_cancelled_exc_class():
            if not pending.done.is_set():  # the peer already answered: there is nothing left to cancel
                with anyio.CancelScope(shield=True):
                    await self._cancel_outgoing(request_id)
            raise
        finally:
            self._outgoing.pop(request_id, None)
        if pending.error is not None:
            error = pending.error
            raise ClientError(int(error.get("code", -32603)), str(error.get("message", "")), error.get("data"))
        return pending.result

    async def notify(self, method: str, params: Any) -> None:
        """Send a notification; silently dropped once the connection is closed."""
        if not self._closed:
            await self._write({"jsonrpc": "2.0", "method": method, "params": params})

    async def _cancel_outgoing(self, request_id: int) -> None:
        self._given_up[request_id] = None
        if len(self._given_up) > CANCELLED_IDS_KEPT:
            del self._given_up[next(iter(self._given_up))]
        if self._outgoing.pop(request_id, None) is not None and not self._closed:
            with anyio.move_on_after(1):
                await self.notify(CANCEL_REQUEST, {"requestId": request_id})

    # ---- frames from the peer -----------------------------------------------------------------

    async def _on_frame(self, frame: bytes) -> None:
        if log.isEnabledFor(logging.DEBUG):
            log.debug("<- %s", frame[:_LOG_FRAME_CHARS].decode("utf-8", "replace"))
        try:
            message = json.loads(frame, parse_constant=_reject_constant)
        except (ValueError, RecursionError):
            await self._send_error(None, ParseError())
            return
        if isinstance(message, list):
            await self._send_error(None, InvalidRequest("Invalid request: batches are not supported"))
            return
        if not _clean(message, fix_surrogates=_SURROGATE_ESCAPE.search(frame) is not None):
            await self._too_deep(message)
            return
        if not isinstance(message, dict):
            await self._send_error(None, InvalidRequest("Invalid request: a message must be a JSON object"))
            return
        if "method" in message:
            await self._on_call(message)
        elif "result" in message or "error" in message:
            self._on_response(message)
        else:
            request_id = message.get("id")
            await self._send_error(request_id if _valid_id(request_id) else None, InvalidRequest())

    async def _too_deep(self, message: Any) -> None:
        """A message nested past MAX_DEPTH: refuse a request, fail our request it answers, drop a notification."""
        problem = f"Invalid params: nested more than {MAX_DEPTH} levels"
        message_id = message.get("id") if isinstance(message, dict) else None
        if not isinstance(message, dict) or not _valid_id(message_id):
            log.warning("dropped a message nested more than %d levels", MAX_DEPTH)
        elif "method" in message and "id" in message:
            await self._send_error(message_id, InvalidParams(problem))
        elif "method" not in message and isinstance(message_id, int) and message_id in self._outgoing:
            self._on_response(
                {"id": message_id, "error": {"code": -32602, "message": f"The client's answer: {problem}"}}
            )
        else:
            log.warning("dropped a message nested more than %d levels", MAX_DEPTH)

    async def _on_call(self, message: dict[str, Any]) -> None:
        method = message["method"]
        is_request = "id" in message
        request_id = message.get("id")
        problem = None
        if message.get("jsonrpc") != "2.0":
            problem = 'Invalid request: "jsonrpc" must be "2.0"'
        elif not isinstance(method, str):
            problem = 'Invalid request: "method" must be a string'
        elif is_request and not _valid_id(request_id):
            problem = 'Invalid request: "id" must be a string, an integer or null'
        elif "params" in message and not isinstance(message["params"], dict | list):
            problem = 'Invalid request: "params" must be an object or an array'
        if problem is not None:
            if is_request:
                await self._send_error(request_id if _valid_id(request_id) else None, InvalidRequest(problem))
            else:
                log.warning("ignoring a malformed notification: %s", problem)
            return
        params = message.get("params")
        if not is_request:
            await self._on_notification(method, params)
        elif request_id in self._incoming:
            await self._send_error(request_id, InvalidRequest(f"Invalid request: id {request_id!r} is already in use"))
        else:
            scope = anyio.CancelScope()
            self._incoming[request_id] = scope
            assert self._task_group is not None
            self._task_group.start_soon(self._run_request, request_id, method, params, scope)

    async def _on_notification(self, method: str, params: Any) -> None:
        if method == CANCEL_REQUEST:
            target = params.get("requestId") if isinstance(params, dict) else None
            scope = self._incoming.get(target) if _valid_id(target) else None
            if scope is not None:
                scope.cancel()
            return
        try:
            await self._dispatcher.handle_notification(method, params)
        except Exception:
            log.exception("notification %s failed", method)

    def _on_response(self, message: dict[str, Any]) -> None:
        request_id = message.get("id")
        pending = self._outgoing.get(request_id) if isinstance(request_id, int) else None
        if pending is None:
            if isinstance(request_id, int) and request_id in self._given_up:
                del self._given_up[request_id]
                # a peer that follows the spec still answers a request we cancelled: expected, not a problem
                log.debug("ignoring the late answer to request %r, which was cancelled", request_id)
            else:
                log.warning("ignoring a response to unknown request id %r", request_id)
            return
        error = message.get("error")
        if error is not None:
            pending.error = error if isinstance(error, dict) else {"code": -32603, "message": str(error)}
        else:
            pending.result = message.get("result")
        pending.done.set()

    async def _run_request(self, request_id: RequestId, method: str, params: Any, scope: anyio.CancelScope) -> None:
        response: dict[str, Any] | None = None
        follow_up: Callable[[], Awaitable[None]] | None = None
        try:
            with scope:
                try:
                    result = await self._dispatcher.handle_request(method, params)
                    if isinstance(result, FollowedBy):
                        result, follow_up = result.result, result.then
                    response = {"jsonrpc": "2.0", "id": request_id, "result": result}
                except RpcError as exc:
                    response = self._error_response(request_id, exc)
                except Exception as exc:
                    invalid = as_invalid_params(exc)
                    if invalid is None:
                        log.exception("request %s (id %r) failed", method, request_id)
                    response = self._error_response(request_id, invalid or InternalError())
            if scope.cancelled_caught:
                response = self._error_response(request_id, RequestCancelled())
        finally:
            self._incoming.pop(request_id, None)
            if not self._incoming and self._drained is not None:
                self._drained.set()
        if response is not None:
            await self._write_quietly(response)
        if follow_up is not None and response is not None and "result" in response:
            try:
                await follow_up()
            except Exception:
                log.exception("the follow-up of %s (id %r) failed", method, request_id)

    # ---- writing ------------------------------------------------------------------------------

    @staticmethod
    def _error_response(request_id: RequestId, error: RpcError) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": request_id, "error": error.to_wire()}

    async def _send_error(self, request_id: RequestId, error: RpcError) -> None:
        await self._write_quietly(self._error_response(request_id, error))

    async def _write_quietly(self, message: dict[str, Any]) -> None:
        """Write a response; if the peer is gone there is no one left to tell."""
        try:
            await self._write(message)
        except ClientError:
            log.info("dropped a response: the client connection is closed")

    async def _write(self, message: dict[str, Any]) -> None:
        try:
            text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
            data = text.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates, e.g. echoed from a malformed id
            text = json.dumps(message, separators=(",", ":"))
            data = text.encode("ascii")
        if log.isEnabledFor(logging.DEBUG):
            log.debug("-> %s", text[:_LOG_FRAME_CHARS])
        async with self._write_lock:
            try:
                await self._send_stream.send(data if self._whole_messages else data + b"\n")
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._closed = True
                raise ClientError(-32603, "The client connection is closed") from None
