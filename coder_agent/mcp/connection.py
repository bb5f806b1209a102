"""One MCP connection attempt, start to end, in the one task that owns it: open the transport and the client, list
the tools, listen for `list_changed`, wait until told to stop or until the connection is gone, close.

anyio requires a cancel scope (and so a task group, and so an `mcp` client, which holds several) to be exited by the
task that entered it, so the hub never enters a client itself: each attempt is `Connector.run`, started in the hub's
task group. Others only wait for its events (`ready`, `lost`, `done`) and send requests through its client (safe
from any task: requests go through memory streams).

Protocol: `mcp` 2.x negotiates the version (`mode="auto"`): a `server/discover` probe, falling back to the
`initialize` handshake for 2025-era servers (a server that ignores the unknown request instead of answering
"method not found" costs the SDK's 10 s probe timeout; `protocol="legacy"` skips the probe).
`notifications/tools/list_changed` arrives on its own for 2025-era sessions; on 2026-07-28 sessions it only comes
on a `subscriptions/listen` stream, opened when the server declares `tools.listChanged`. Either way the server's
tools are listed again and the hub is told.

What the server asks of us while connected (elicitation, sampling, `notifications/elicitation/complete`) goes to
the hub's `McpClientHooks` through `mcp.client_callbacks`; sampling is offered to servers only when there is a
hook for it.

Also here: the short human reason for a failure (`describe`), which the hub's messages share.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream

from coder_agent.mcp.client_callbacks import elicitation_callback, sampling_callback
from coder_agent.mcp.results import to_tools
from coder_agent.mcp.stdio import ServerProcess, stdio_transport
from coder_agent.mcp.types import CommandWrapper, McpClientHooks, McpError, McpServerSpec, McpTool, ServerStatus

if TYPE_CHECKING:
    from mcp.client.client import Client

log = logging.getLogger(__name__)

State = Literal["connecting", "connected", "failed", "closed"]
LIST_TIMEOUT = 30.0


@dataclass(eq=False)
class Connection:
    """One connection attempt, owned by one task."""

    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    ready: anyio.Event = field(default_factory=anyio.Event)
    """Set when the attempt connected or failed."""
    lost: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)
    process: ServerProcess = field(default_factory=ServerProcess)
    client: Client | None = None


@dataclass(eq=False)
class Server:
    """One server of the hub across its connections (restarts included)."""

    spec: McpServerSpec
    name: str
    """Unique in the hub (a repeated ACP name gets a suffix)."""
    state: State = "connecting"
    error: str | None = None
    tools: list[McpTool] = field(default_factory=list)
    protocol_version: str | None = None
    has_prompts: bool = False
    connection: Connection | None = None
    stop: anyio.Event = field(default_factory=anyio.Event)
    restart_pending: bool = False
    restarts: int = 0
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    given_up: bool = False
    """Crashed more than `MAX_RESTARTS` times (and the user was told)."""
    callers: list[str] = field(default_factory=list)
    """The tool calls (ours) running on the server now, so what it asks meanwhile can be tied to one."""

    def status(self) -> ServerStatus:
        state: Literal["connected", "failed", "closed"] = "failed" if self.state == "connecting" else self.state
        pid = self.connection.process.pid if self.connection and self.state == "connected" else None
        return ServerStatus(
            name=self.name,
            transport=self.spec.transport,
            state=state,
            error=self.error if state != "connected" else None,
            tool_count=len(self.tools),
            protocol_version=self.protocol_version,
            pid=pid,
        )


@dataclass(frozen=True)
class Connector:
    """What every connection attempt of one hub shares."""

    protocol: Literal["auto", "legacy"]
    roots: Sequence[Path]
    """Directories offered to servers that ask for roots."""
    log_line: Callable[[str, str], None]
    """Receives (server name, line) for each line a stdio server writes to stderr."""
    tools_changed: Callable[[Server], Awaitable[None]]
    """Called after a connected server's tools were listed again and changed."""
    hooks: McpClientHooks = field(default_factory=McpClientHooks)
    """What the session does when a server asks something of it."""
    wrap_command: CommandWrapper | None = None
    """Runs stdio servers inside the session's sandbox (`sandbox.mcp_servers`); None: as they are."""

    async def run(self, server: Server, connection: Connection, timeout: float) -> None:
        """The attempt's task: connect within `timeout`, serve until stopped or lost, close; never raises."""
        try:
            with connection.scope:
                await self._connect_and_serve(server, connection, timeout)
        except Exception:  # a bug here must not take down the owner's task group
            log.exception("MCP server %r: connection task failed", server.name)
            server.state, server.error = "failed", f"MCP server {server.name!r}: internal error"
        finally:
            if server.state == "connecting":
                server.state = "failed"
                server.error = (
                    f"MCP server {server.name!r} ({server.spec.describe()}): closed before it finished starting"
                )
            connection.client = None
            connection.ready.set()
            connection.done.set()

    async def _connect_and_serve(self, server: Server, connection: Connection, timeout: float) -> None:
        from mcp_types import ElicitCompleteNotification, ToolListChangedNotification

        signals_in, signals_out = anyio.create_memory_object_stream[None](1)

        async def on_message(message: Any) -> None:
            if isinstance(message, ToolListChangedNotification):
                with contextlib.suppress(anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    signals_in.send_nowait(None)  # a refresh is already due: this one coalesces into it
            elif isinstance(message, ElicitCompleteNotification) and self.hooks.elicitation_done is not None:
                try:
                    await self.hooks.elicitation_done(server.name, message.params.elicitation_id)
                except Exception:
                    log.exception("MCP server %r: relaying a finished elicitation failed", server.name)
            elif isinstance(message, Exception):
                log.debug("MCP server %r: transport error: %s", server.name, message)

        connected = False
        failure: BaseException | None = None
        deadline = anyio.CancelScope(deadline=anyio.current_time() + timeout)
        try:
            with deadline, signals_in, signals_out:
                async with AsyncExitStack() as stack:
                    client = await self._open_client(server, connection, stack, on_message)
                    tools = await list_all(client.list_tools, "tools")
                    await self._listen_for_changes(server, client, stack)
                    deadline.deadline = math.inf
                    connected = True
                    server.restart_pending = False
                    server.protocol_version = client.protocol_version
                    server.has_prompts = client.server_capabilities.prompts is not None
                    server.tools = to_tools(server.name, tools)
                    server.state, server.error = "connected", None
                    connection.client = client
                    connection.ready.set()
                    async with anyio.create_task_group() as group:
                        group.start_soon(self._refresh_tools, server, client, signals_out)
                        await first_of(server.stop, connection.lost)
                        group.cancel_scope.cancel()
                    connection.client = None
        except Exception as exc:
            failure = exc
        finally:
            connection.client = None
        prefix = f"MCP server {server.name!r} ({server.spec.describe()})"
        if not connected:
            if failure is not None:
                reason = describe(failure)
            elif deadline.cancelled_caught:
                reason = f"did not finish starting within {timeout:g} s"
            else:
                reason = "stopped before it finished starting"
            details = connection.process.explain()
            server.state = "failed"
            server.error = f"{prefix} failed to start: {reason}" + (f"; {details}" if details else "")
        elif server.stop.is_set():
            server.state = "closed"
        else:
            details = connection.process.explain() or (describe(failure) if failure else "the connection dropped")
            server.state = "failed"
            server.restart_pending = True
            server.error = f"{prefix} stopped: {details}"
            log.warning("%s", server.error)

    async def _open_client(
        self, server: Server, connection: Connection, stack: AsyncExitStack, on_message: Any
    ) -> Client:
        from mcp.client.client import Client
        from mcp_types import Implementation

        from coder_agent import __version__

        spec = server.spec
        transport: Any
        if spec.transport == "stdio":
            transport = stdio_transport(
                spec,
                connection.process,
                name=server.name,
                log_line=self.log_line,
                started=connection.ready,
                lost=connection.lost,
                wrap=self.wrap_command,
                folders=self.roots,
            )
        elif spec.transport == "http":
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            if not spec.url:
                raise McpError("no url given")
            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers=spec.headers or None, timeout=httpx2.Timeout(30.0, read=300.0))
            )
            transport = streamable_http_client(spec.url, http_client=http)
        else:
            from mcp.client.sse import sse_client

            if not spec.url:
                raise McpError("no url given")
            transport = sse_client(spec.url, headers=spec.headers or None, timeout=30.0, sse_read_timeout=300.0)
        client = Client(
            transport,
            mode=self.protocol,
            cache=None,
            message_handler=on_message,
            list_roots_callback=self._list_roots if self.roots else None,
            elicitation_callback=elicitation_callback(server, self.hooks),
            sampling_callback=sampling_callback(server, self.hooks) if self.hooks.sample is not None else None,
            client_info=Implementation(name="coder-agent", version=__version__),
        )
        return await stack.enter_async_context(client)

    async def _listen_for_changes(self, server: Server, client: Client, stack: AsyncExitStack) -> None:
        """On 2026-07-28 sessions, list_changed comes only to clients that listen for it (it then also reaches
        the message handler). 2025-era sessions get it unasked."""
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        tools = client.server_capabilities.tools
        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS or tools is None or not tools.list_changed:
            return
        try:
            await stack.enter_async_context(client.listen(tools_list_changed=True))
        except Exception as exc:
            log.info("MCP server %r: not listening for tool changes: %s", server.name, describe(exc))

    async def _refresh_tools(self, server: Server, client: Client, signals: MemoryObjectReceiveStream[None]) -> None:
        async for _ in signals:
            try:
                with anyio.fail_after(LIST_TIMEOUT):
                    listed = await list_all(client.list_tools, "tools")
            except Exception as exc:
                log.warning("MCP server %r: listing tools again failed: %s", server.name, describe(exc))
                continue
            tools = to_tools(server.name, listed)
            if tools == server.tools:
                continue
            server.tools = tools
            log.info("MCP server %r: tools changed, %d now", server.name, len(tools))
            await self.tools_changed(server)

    async def _list_roots(self, context: Any) -> Any:
        from mcp_types import ListRootsResult, Root

        roots = [Root.model_validate({"uri": root.as_uri(), "name": root.name or str(root)}) for root in self.roots]
        return ListRootsResult(roots=roots)


async def list_all(fetch: Callable[..., Awaitable[Any]], key: str) -> list[Any]:
    """Every page of a `tools/list` or `prompts/list`."""
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(100):
        page = await fetch(cursor=cursor)
        items.extend(getattr(page, key))
        cursor = page.next_cursor
        if not cursor:
            break
    return items


def _leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = next((e for e in exc.exceptions if not isinstance(e, anyio.get_cancelled_exc_class())), exc.exceptions[0])
    return exc


def describe(exc: BaseException) -> str:
    """A short, human reason for a failure: `connection refused to …`, `HTTP 401 Unauthorized`."""
    exc = _leaf(exc)
    if isinstance(exc, McpError):
        return str(exc)
    try:
        import httpx2
    except ImportError:  # pragma: no cover
        httpx2 = None  # type: ignore[assignment]
    if httpx2 is not None:
        if isinstance(exc, httpx2.HTTPStatusError):
            return f"HTTP {exc.response.status_code} {exc.response.reason_phrase} from {exc.request.url}"
        if isinstance(exc, httpx2.ConnectError):
            return f"cannot connect to {exc.request.url}: {exc}" if _has_request(exc) else f"cannot connect: {exc}"
        if isinstance(exc, httpx2.TimeoutException):
            return f"HTTP timeout: {exc}"
    from mcp.shared.exceptions import MCPError

    if isinstance(exc, MCPError):
        message = exc.error.message
        if message.lower() == "connection closed":
            return "the connection closed before the server answered"
        return f"{message} (MCP error {exc.code})"
    if isinstance(exc, TimeoutError):
        return "timed out"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _has_request(exc: Any) -> bool:
    try:
        exc.request  # noqa: B018 - httpx raises RuntimeError when the error has no request
    except RuntimeError:
        return False
    return True


def is_connection_error(exc: BaseException) -> bool:
    exc = _leaf(exc)
    if isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError | anyio.EndOfStream | ConnectionError):
        return True
    try:
        import httpx2
    except ImportError:  # pragma: no cover
        return False
    return isinstance(exc, httpx2.TransportError)


async def first_of(*events: anyio.Event) -> None:
    """Return when any of the events is set."""
    async with anyio.create_task_group() as group:

        async def wait(event: anyio.Event) -> None:
            await event.wait()
            group.cancel_scope.cancel()

        for event in events:
            group.start_soon(wait, event)
