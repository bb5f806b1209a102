"""`coder-agent serve`: ACP over WebSocket on one endpoint, `/acp`, for an editor on another machine.

The transport is the WebSocket profile of ACP's remote-transport RFD (Streamable HTTP & WebSocket): a GET of
`/acp` with `Upgrade: websocket`, the `Acp-Connection-Id` header on the 101 response, one JSON-RPC message per
text message (binary messages are ignored). Each WebSocket is one ACP connection with stdio's semantics: its own
`initialize`, its sessions, the same permissions, sandbox and session store (`composition.serve` over
`rpc.Connection` with whole messages). Streamable HTTP (POST plus a long-lived SSE GET) is not served: the RFD
lets a server offer WebSocket alone, its HTTP shape changed three times in a year, and it requires HTTP/2; a GET
without the upgrade is answered 426 naming WebSocket.

What stands in front of the agent, in `process_request`, before any upgrade:
* a bearer token (`Authorization: Bearer …`, compared in constant time): without it, 401 and nothing else;
  the token comes from `CODER_AGENT_SERVE_TOKEN` or is generated and printed once, and is a key variable
  (kept from child processes, redacted from output);
* only `/acp` (404 for any other path), and at most `max_connections` at once (503 past it).

Then, per connection: a message over `max_frame_bytes` closes it (1009, "message too big"); a client that stops
answering pings, or stops reading so that a message cannot be written within `client_timeout`, is dropped. A
dropped connection is stdio's end of input: its turns are cancelled and its sessions closed and saved, so the
client reconnects and `session/load`s (or `session/resume`s) them. A session is open on one connection at a
time: loading it elsewhere first closes it where it was open (`SessionClaims`), so a client back from a broken
network takes its sessions over before the server noticed the old connection was gone.

TLS is left to a reverse proxy (the README has a Caddy and an nginx example). `websockets` is imported here only,
when `serve` starts.
"""

from __future__ import annotations

import argparse
import hmac
import http
import logging
import os
import secrets as token_source
import signal
import sys
import uuid
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from coder_agent.composition import AgentBuilder, cli_agent, serve
from coder_agent.secrets import add_key_variable

if TYPE_CHECKING:
    from websockets.asyncio.server import ServerConnection
    from websockets.http11 import Request, Response

    from coder_agent.acp.front import AgentFront

log = logging.getLogger(__name__)

PATH = "/acp"
TOKEN_ENV = "CODER_AGENT_SERVE_TOKEN"
CONNECTION_ID_HEADER = "Acp-Connection-Id"
MIN_TOKEN_LENGTH = 16
CLOSE_TOO_SLOW = 1008
"""The close code for a client that stopped reading (policy violation)."""


@dataclass(frozen=True)
class ServeSettings:
    """Where and how `serve` listens."""

    token: str
    host: str = "127.0.0.1"
    port: int = 8765
    max_connections: int = 32
    max_frame_bytes: int = 16 * 1024 * 1024
    client_timeout: float = 30.0


class UsageError(Exception):
    """A flag or the token variable is unusable; the message names the fix."""


def main(args: argparse.Namespace) -> int:
    """`coder-agent serve`: listen until SIGTERM or SIGINT; the exit status."""
    try:
        settings, generated = settings_from(args, os.environ)
    except UsageError as problem:
        args.command_parser.error(str(problem))
    add_key_variable(TOKEN_ENV)  # never in a child's environment; redacted wherever it could show

    def ready(port: int) -> None:
        print(listening(settings, port, generated=generated), file=sys.stderr, flush=True)

    try:
        anyio.run(_serve_until_signal, settings, cli_agent(args.config, args.model), ready, backend="asyncio")
    except (OSError, ExceptionGroup) as error:
        failed = _bind_error(error)  # the address is taken, or not ours to bind
        if failed is None:
            raise
        reason = failed.strerror or str(failed)
        print(f"coder-agent serve: cannot listen on {settings.host}:{settings.port}: {reason}", file=sys.stderr)
        return 1
    return 0


def _bind_error(error: BaseException) -> OSError | None:
    """The OSError that stopped the server from listening (raised alone, or from inside its task group)."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error if isinstance(error, OSError) else None


def settings_from(args: argparse.Namespace, environ: MutableMapping[str, str]) -> tuple[ServeSettings, bool]:
    """The settings the flags and the environment give, and whether the token was generated (then it is put in
    `environ`, where the agent's redaction finds it); UsageError naming the fix."""
    if not 0 <= args.port <= 65535:
        raise UsageError("--port must be between 0 and 65535")
    if args.max_connections < 1:
        raise UsageError("--max-connections must be at least 1")
    if not args.max_frame_mb > 0:
        raise UsageError("--max-frame-mb must be more than 0")
    if not args.client_timeout > 0:
        raise UsageError("--client-timeout must be more than 0")
    token = environ.get(TOKEN_ENV, "").strip()
    generated = not token
    if generated:
        token = environ[TOKEN_ENV] = token_source.token_urlsafe(32)
    elif len(token) < MIN_TOKEN_LENGTH:
        raise UsageError(f"{TOKEN_ENV} must be at least {MIN_TOKEN_LENGTH} characters")
    settings = ServeSettings(
        token=token,
        host=args.host,
        port=args.port,
        max_connections=args.max_connections,
        max_frame_bytes=int(args.max_frame_mb * 1024 * 1024),
        client_timeout=args.client_timeout,
    )
    return settings, generated


def listening(settings: ServeSettings, port: int, *, generated: bool) -> str:
    """What `serve` prints once it listens: the address, and a generated token (this once only)."""
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    lines = [f"coder-agent serve: ACP over WebSocket at ws://{host}:{port}{PATH}"]
    if generated:
        lines.append(f"  token (shown once; set {TOKEN_ENV} to choose it): {settings.token}")
    lines.append("  clients send it as `Authorization: Bearer <token>`; Ctrl-C stops")
    return "\n".join(lines)


async def _serve_until_signal(settings: ServeSettings, build: AgentBuilder, ready: Callable[[int], None]) -> None:
    stop = anyio.Event()
    async with anyio.create_task_group() as tasks:

        async def on_signal() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for signum in signals:
                    log.info("received %s; closing every connection", signal.Signals(signum).name)
                    stop.set()
                    return

        tasks.start_soon(on_signal)
        await run(AcpWebSocketServer(settings, build), stop, ready)
        tasks.cancel_scope.cancel()


async def run(server: AcpWebSocketServer, stop: anyio.Event, ready: Callable[[int], None]) -> None:
    """Serve until `stop` is set, then close every connection (each closes and saves its sessions)."""
    from websockets.asyncio.server import serve as websocket_server

    settings = server.settings
    async with websocket_server(
        server.handle,
        settings.host,
        settings.port,
        process_request=server.admit,
        process_response=server.answered,
        max_size=settings.max_frame_bytes,
        ping_interval=settings.client_timeout,
        ping_timeout=settings.client_timeout,
        close_timeout=settings.client_timeout / 3,
        server_header=None,
    ) as listening:
        ready(listening.sockets[0].getsockname()[1])
        await stop.wait()
        listening.close(close_connections=True)
        await listening.wait_closed()


class AcpWebSocketServer:
    """The admission rules and the handler of each WebSocket."""

    def __init__(self, settings: ServeSettings, build: AgentBuilder) -> None:
        self.settings = settings
        self.build = build
        self.claims = SessionClaims()
        self.admitted: set[uuid.UUID] = set()
        """The connections let in, from the moment their upgrade is accepted until they end."""
        self._token = settings.token.encode()
        self._ended = anyio.Condition()

    def admit(self, connection: ServerConnection, request: Request) -> Response | None:
        """Before any upgrade: the token, then the path, the upgrade and the limit; None lets it through."""
        if not self._authorized(request.headers.get("Authorization")):
            log.warning("refused a connection from %s: missing or wrong token", _peer(connection))
            response = connection.respond(http.HTTPStatus.UNAUTHORIZED, "A bearer token is required.\n")
            response.headers["WWW-Authenticate"] = 'Bearer realm="coder-agent"'
            return response
        if request.path.split("?", 1)[0] != PATH:
            return connection.respond(http.HTTPStatus.NOT_FOUND, f"ACP is served at {PATH}.\n")
        if "websocket" not in request.headers.get("Upgrade", "").lower():
            response = connection.respond(
                http.HTTPStatus.UPGRADE_REQUIRED,
                f"This server speaks ACP over WebSocket only: GET {PATH} with Upgrade: websocket.\n",
            )
            response.headers["Upgrade"] = "websocket"
            return response
        if len(self.admitted) >= self.settings.max_connections:
            log.warning("refused a connection: %d are open (--max-connections)", len(self.admitted))
            response = connection.respond(
                http.HTTPStatus.SERVICE_UNAVAILABLE,
                f"Too many connections ({self.settings.max_connections}); try again later.\n",
            )
            response.headers["Retry-After"] = "5"
            return response
        self.admitted.add(connection.id)
        return None

    def answered(self, connection: ServerConnection, request: Request, response: Response) -> None:
        """After the upgrade's answer is decided: name the connection, or give back a place not taken."""
        if response.status_code == http.HTTPStatus.SWITCHING_PROTOCOLS:
            response.headers[CONNECTION_ID_HEADER] = str(connection.id)
        else:  # refused here, or admitted and then refused by the handshake itself (a malformed upgrade)
            self.admitted.discard(connection.id)

    def _authorized(self, header: str | None) -> bool:
        scheme, _, given = (header or "").strip().partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), self._token)

    async def handle(self, connection: ServerConnection) -> None:
        """One ACP connection for as long as the WebSocket lasts."""
        connection_id = str(connection.id)
        log.info("connection %s opened from %s", connection_id, _peer(connection))
        holder = ClaimHolder(connection_id, self.claims)
        try:
            await serve(
                MessageSource(connection, holder.closing.set),
                MessageSink(connection, self.settings.client_timeout),
                self.build,
                whole_messages=True,
                dispatcher=holder.wrap,
            )
        finally:
            holder.ended.set()
            self.admitted.discard(connection.id)
            self.claims.drop_all(holder)
            log.info("connection %s closed (%s)", connection_id, connection.close_reason or connection.close_code)
            with anyio.CancelScope(shield=True):
                async with self._ended:
                    self._ended.notify_all()

    async def idle(self) -> None:
        """Wait until no connection is open (each one's sessions closed and saved)."""
        async with self._ended:
            while self.admitted:
                await self._ended.wait()


def _peer(connection: ServerConnection) -> str:
    address = connection.remote_address
    return f"{address[0]}:{address[1]}" if isinstance(address, tuple) else str(address)


class MessageSource:
    """The text messages of a WebSocket as bytes, one per `receive()`; the end of the socket is the end of input."""

    def __init__(self, connection: ServerConnection, on_end: Callable[[], None]) -> None:
        self.connection = connection
        self.on_end = on_end

    async def receive(self) -> bytes:
        from websockets.exceptions import ConnectionClosed

        while True:
            try:
                message = await self.connection.recv()
            except ConnectionClosed:
                self.on_end()
                raise anyio.EndOfStream from None
            if isinstance(message, str):
                return message.encode("utf-8")
            log.debug("ignored a binary message (ACP is carried in text messages)")


class MessageSink:
    """Messages to a WebSocket as text; a client that does not take one within `timeout` is dropped."""

    def __init__(self, connection: ServerConnection, timeout: float) -> None:
        self.connection = connection
        self.timeout = timeout

    async def send(self, item: bytes, /) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            with anyio.fail_after(self.timeout):
                await self.connection.send(item, text=True)
        except TimeoutError:
            log.warning("dropping connection %s: it read nothing for %.0f s", self.connection.id, self.timeout)
            self.connection.transport.abort()  # a peer that does not read would not read a close frame either
            raise anyio.BrokenResourceError from None
        except ConnectionClosed:
            raise anyio.BrokenResourceError from None


@dataclass(eq=False)
class ClaimHolder:
    """One connection's side of `SessionClaims`: the dispatcher it puts in front of its agent."""

    connection_id: str
    claims: SessionClaims
    front: AgentFront | None = None
    closing: anyio.Event = field(default_factory=anyio.Event)
    """The client has gone: the connection is closing its sessions."""
    ended: anyio.Event = field(default_factory=anyio.Event)
    """Every session of the connection is closed and saved."""

    def wrap(self, front: AgentFront) -> ClaimingDispatcher:
        self.front = front
        return ClaimingDispatcher(front, self)

    async def release(self, session_id: str) -> None:
        """Close this connection's copy of the session (its turn cancelled, the session saved)."""
        if self.front is None:
            return
        manager = (await self.front.agent()).manager
        if session_id in manager.sessions:
            log.info("session %s moves from connection %s to another", session_id, self.connection_id)
            await manager.close(session_id)
        elif self.closing.is_set():  # its sessions are being closed: the load must read the last save
            await self.ended.wait()


@dataclass
class SessionClaims:
    """Which connection has each session open, so that a session is open on one connection at a time."""

    holders: dict[str, ClaimHolder] = field(default_factory=dict)

    async def take(self, session_id: str, holder: ClaimHolder) -> None:
        """`holder` is about to open the session: close it where else it is open first."""
        previous = self.holders.get(session_id)
        self.holders[session_id] = holder
        if previous is not None and previous is not holder:
            await previous.release(session_id)

    def hold(self, session_id: str, holder: ClaimHolder) -> None:
        self.holders[session_id] = holder

    def drop(self, session_id: str, holder: ClaimHolder) -> None:
        if self.holders.get(session_id) is holder:
            del self.holders[session_id]

    def drop_all(self, holder: ClaimHolder) -> None:
        for session_id in [s for s, h in self.holders.items() if h is holder]:
            del self.holders[session_id]


class ClaimingDispatcher:
    """The agent's dispatcher, with the sessions it opens and closes told to `SessionClaims`."""

    OPENING = frozenset({"session/load", "session/resume"})

    def __init__(self, front: AgentFront, holder: ClaimHolder) -> None:
        self.front = front
        self.holder = holder

    async def handle_request(self, method: str, params: Any) -> Any:
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        if method in self.OPENING and isinstance(session_id, str):
            await self.holder.claims.take(session_id, self.holder)
        result = await self.front.handle_request(method, params)
        body = getattr(result, "result", result)
        if method == "session/new" and isinstance(body, dict) and isinstance(body.get("sessionId"), str):
            self.holder.claims.hold(body["sessionId"], self.holder)
        elif method in ("session/close", "session/delete") and isinstance(session_id, str):
            self.holder.claims.drop(session_id, self.holder)
        return result

    async def handle_notification(self, method: str, params: Any) -> None:
        await self.front.handle_notification(method, params)
