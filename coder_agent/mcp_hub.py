"""One ACP session's MCP servers: connecting them, listing their tools for the model, calling them, closing them.

This is the only module that imports `mcp` (2.x), and it does so lazily, inside the hub's methods: importing
this module is cheap (~45 ms, mostly anyio), the `mcp` import (~0.4 s of CPU) happens on the first `connect`.
(`mcp_support.supported_transports()` answers `initialize` without even this module.)

Lifetimes and cancellation
--------------------------
anyio requires a cancel scope (and so a task group, and so an `mcp` client, which holds several) to be exited by
the task that entered it. ACP request handlers run in separate tasks: `session/new` connects, a later
`session/prompt` calls tools, `session/close` closes. So no caller ever enters an MCP connection itself. Every
connection *attempt* is one task, started in the hub's task group, that enters the transport and the client,
lists the tools, then sleeps until it is told to stop (`aclose`) or notices that the connection is gone (the
stdio server's stdout closed, or a call saw the connection drop), and then exits the client in that same task.
The hub's task group is either the hub's own (`async with McpHub() as hub:`) or one the owner already runs
(`McpHub(task_group=...)`, e.g. the agent's connection-wide group), so `connect`, `call` and `aclose` may be
called from any task.

Callers only wait for events and use the connected client to send requests (a client is safe to use from any
task: requests go through memory streams; their timeouts are the caller's own scopes). Hence:
- a cancelled `connect` tells the attempts it started to stop; they close in their own tasks, nothing stays
  half open, and `aclose` waits for them;
- a cancelled `call` cancels only that request;
- `aclose` asks every connection to stop, waits for them (stdio servers get: stdin closed, 1 s, SIGTERM to the
  process group, 1 s, SIGKILL, and the group is checked for leftovers; a server that never finished starting
  gets 0.1 s; so no orphans, even of a server that ignores stdin close or starts children),
  and cancels whatever has not finished after a grace period.

Each attempt has its own deadline (`connect(timeout=...)`), so one hung server never delays the others:
`connect` starts all attempts at once and returns when each has connected or failed.

Crashes: a call that loses its connection fails with an `McpError` naming the server, the exit code and the last
stderr lines. The tools of that server stay listed, and the next call to one of them restarts the server once
(then lists its tools again), up to `MAX_RESTARTS` times per server.

stdio servers are spawned by our own small transport rather than `mcp.client.stdio.stdio_client`, because the
hub needs what that one hides: the process (exit code, pid) and the server's stderr (its last lines explain most
failures). The server's stderr is copied line by line to `log_to` (stderr by default, never stdout: stdout is the
ACP channel), prefixed with the server's name. Its environment is ours with the ACP `env` entries merged over it,
so PATH, HOME and the like work as they do in a shell; model API keys are left out (`secrets.child_environ`).

Protocol: `mcp` 2.x negotiates the version (`mode="auto"`): a `server/discover` probe, falling back to the
`initialize` handshake for 2025-era servers (a server that ignores the unknown request instead of answering
"method not found" costs the SDK's 10 s probe timeout; `protocol="legacy"` skips the probe).
`notifications/tools/list_changed` arrives on its own for 2025-era sessions; on 2026-07-28 sessions it only
comes on a `subscriptions/listen` stream, which the hub opens when the server declares `tools.listChanged`.
Either way the server's tools are listed again and `on_tools_changed` runs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import math
import os
import re
import shlex
import shutil
import signal
import sys
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Self, TextIO

import anyio
from anyio.abc import Process, TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from coder_agent.secrets import child_environ

if TYPE_CHECKING:
    from mcp.client.client import Client

log = logging.getLogger(__name__)

Transport = Literal["stdio", "http", "sse"]
State = Literal["connecting", "connected", "failed", "closed"]

MAX_RESULT_CHARS = 50_000
"""Text of one tool result, in total, beyond which it is cut (with a note saying so)."""
MAX_IMAGE_BASE64 = 7_000_000
"""Base64 characters of one image (~5 MB decoded) beyond which it is replaced by a note."""
MAX_RESTARTS = 3
"""Restarts of a crashed server, per server and hub, before its calls just fail."""
MAX_MESSAGE_BYTES = 128 * 1024 * 1024
"""One JSON-RPC line from a stdio server beyond which the connection is dropped."""
STDERR_TAIL_LINES = 12
CLOSE_GRACE = 1.0
"""After closing a stdio server's stdin, how long it may take to exit before SIGTERM; as long again before SIGKILL."""
ACLOSE_TIMEOUT = 6.0
"""How long `aclose` waits for connections to close before cancelling them."""
LIST_TIMEOUT = 30.0
_NAME_LIMIT = 64
_NAME_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


class McpError(Exception):
    """An MCP server could not be reached or did not answer a call; the message says which and why."""


# ---- what the hub shows ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class McpServerSpec:
    """One MCP server to connect, as ACP's `McpServer` describes it (see `from_acp`)."""

    name: str
    transport: Transport
    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    """Merged over the agent's own environment."""
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    """Working directory of a stdio server; the session's cwd is the sensible choice. None: the agent's."""

    @classmethod
    def from_acp(cls, server: Any, *, cwd: str | Path | None = None) -> McpServerSpec:
        """From an ACP `McpServer` (a pydantic model or its wire dict): stdio has no `type`, http/sse have one."""

        def get(key: str, default: Any = None) -> Any:
            if isinstance(server, dict):
                return server.get(key, default)
            return getattr(server, key, default)

        def pairs(items: Any) -> dict[str, str]:
            result: dict[str, str] = {}
            for item in items or []:
                key = item.get("name") if isinstance(item, dict) else item.name
                value = item.get("value") if isinstance(item, dict) else item.value
                result[str(key)] = str(value)
            return result

        kind = get("type") or "stdio"
        if kind not in ("stdio", "http", "sse"):
            raise ValueError(f"MCP server {get('name')!r}: unsupported transport {kind!r}")
        if kind == "stdio":
            return cls(
                name=str(get("name")),
                transport="stdio",
                command=str(get("command")),
                args=[str(a) for a in get("args") or []],
                env=pairs(get("env")),
                cwd=str(cwd) if cwd is not None else None,
            )
        transport: Transport = "http" if kind == "http" else "sse"
        return cls(name=str(get("name")), transport=transport, url=str(get("url")), headers=pairs(get("headers")))

    def describe(self) -> str:
        """`stdio: npx -y server` or `http: https://…`, for messages."""
        if self.transport == "stdio":
            command = shlex.join([self.command or "", *self.args])
            return f"stdio: {command if len(command) <= 120 else command[:117] + '...'}"
        return f"{self.transport}: {self.url}"


@dataclass(frozen=True)
class McpTool:
    """A tool of a connected server, under the name the model sees."""

    server: str
    name: str
    qualified_name: str
    """`mcp__<server>__<tool>`, valid for every provider (^[a-zA-Z0-9_-]{1,64}$), unique in the hub, stable."""
    description: str
    input_schema: dict[str, Any]
    title: str | None = None
    read_only: bool | None = None
    destructive: bool | None = None


@dataclass(frozen=True)
class ServerStatus:
    name: str
    transport: str
    state: Literal["connected", "failed", "closed"]
    error: str | None
    tool_count: int
    protocol_version: str | None = None
    pid: int | None = None
    """The stdio server's process id while it runs."""


@dataclass(frozen=True)
class McpCallResult:
    content: list[dict[str, Any]]
    """OpenAI-style parts for the model: `text` and `image_url` (data: URLs)."""
    display: list[dict[str, Any]]
    """ACP ContentBlock JSON for the editor: text, image, audio, resource, resource_link."""
    is_error: bool
    structured: Any | None = None
    truncated: bool = False


@dataclass(frozen=True)
class McpPromptArgument:
    name: str
    description: str | None
    required: bool


@dataclass(frozen=True)
class McpPromptInfo:
    server: str
    name: str
    description: str | None
    arguments: list[McpPromptArgument]
    title: str | None = None


@cache
def qualified_name(server: str, tool: str) -> str:
    """The model-facing name of `tool` on `server`: `mcp__<server>__<tool>`.

    Names that are already safe and short enough are kept as they are; others are sanitized, shortened and given
    an 8-hex hash of the exact (server, tool) pair, so they stay unique and never change between sessions.
    """
    safe_server = _NAME_UNSAFE.sub("_", server) or "_"
    safe_tool = _NAME_UNSAFE.sub("_", tool) or "_"
    plain = f"mcp__{safe_server}__{safe_tool}"
    if len(plain) <= _NAME_LIMIT and safe_server == server and safe_tool == tool:
        return plain
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]
    room = _NAME_LIMIT - len("mcp____") - 1 - len(digest)
    server_part = safe_server[: max(16, room - len(safe_tool))]
    tool_part = safe_tool[: room - len(server_part)]
    return f"mcp__{server_part}__{tool_part}_{digest}"


# ---- the hub ---------------------------------------------------------------------------------------------------


@dataclass(eq=False)
class _Process:
    """What the hub knows of a stdio server's process."""

    pid: int | None = None
    returncode: int | None = None
    stderr: deque[str] = field(default_factory=lambda: deque(maxlen=STDERR_TAIL_LINES))
    closing: bool = False

    def explain(self) -> str:
        """`exited with code 3; last stderr lines: …`, or '' when there is nothing to say."""
        parts = []
        if self.returncode is not None:
            if self.returncode < 0:
                with contextlib.suppress(ValueError):
                    parts.append(f"the process was killed by {signal.Signals(-self.returncode).name}")
            else:
                parts.append(f"the process exited with code {self.returncode}")
        text = ", ".join(parts)
        if self.stderr:
            text += ("; " if text else "") + "last stderr lines:\n  " + "\n  ".join(self.stderr)
        return text


@dataclass(eq=False)
class _Connection:
    """One connection attempt, owned by one task."""

    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    ready: anyio.Event = field(default_factory=anyio.Event)
    """Set when the attempt connected or failed."""
    lost: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)
    process: _Process = field(default_factory=_Process)
    client: Client | None = None


@dataclass(eq=False)
class _Server:
    spec: McpServerSpec
    name: str
    """Unique in the hub (a repeated ACP name gets a suffix)."""
    state: State = "connecting"
    error: str | None = None
    tools: list[McpTool] = field(default_factory=list)
    protocol_version: str | None = None
    has_prompts: bool = False
    connection: _Connection | None = None
    stop: anyio.Event = field(default_factory=anyio.Event)
    restart_pending: bool = False
    restarts: int = 0
    lock: anyio.Lock = field(default_factory=anyio.Lock)

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


class McpHub:
    """The MCP servers of one session. See the module docstring for lifetimes."""

    def __init__(
        self,
        on_tools_changed: Callable[[], Awaitable[None]] | None = None,
        *,
        log_to: TextIO | None = None,
        task_group: TaskGroup | None = None,
        roots: Sequence[str | Path] = (),
        protocol: Literal["auto", "legacy"] = "auto",
        max_result_chars: int = MAX_RESULT_CHARS,
    ) -> None:
        """`log_to` receives the stdio servers' stderr (default: our stderr, looked up when written).

        `task_group`: a long-lived group to run the connections in; without one, use `async with McpHub()`.
        `roots`: directories offered to servers that ask for roots (2025-era `roots/list`), e.g. the session cwd.
        `protocol`: "auto" negotiates (2026-07-28 or 2025 handshake); "legacy" forces the 2025 handshake.
        """
        self._on_tools_changed = on_tools_changed
        self._log_to = log_to
        self._task_group = task_group
        self._own_group: TaskGroup | None = None
        self._roots = [Path(r) for r in roots]
        self._protocol = protocol
        self._max_chars = max_result_chars
        self._servers: list[_Server] = []
        self._index: dict[str, tuple[_Server, McpTool]] = {}
        self._connect_timeout = 30.0
        self._closed = False

    async def __aenter__(self) -> Self:
        if self._task_group is None:
            self._own_group = anyio.create_task_group()
            self._task_group = await self._own_group.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        try:
            with anyio.CancelScope(shield=True):
                await self.aclose()
        finally:
            if self._own_group is not None:
                group, self._own_group = self._own_group, None
                await group.__aexit__(exc_type, exc, tb)
        return None

    # ---- the public face ----------------------------------------------------------------------------------------

    async def connect(self, servers: Sequence[McpServerSpec], *, timeout: float = 30.0) -> list[ServerStatus]:
        """Connect `servers` at once, each within `timeout` seconds; a failing server does not fail the others.

        Returns their statuses, in order; a failed one's `error` says which server failed and why.
        """
        if self._closed:
            raise McpError("the MCP hub is closed")
        if self._task_group is None:
            raise RuntimeError("McpHub needs a task group: use `async with McpHub()` or pass task_group=")
        self._connect_timeout = timeout
        taken = {s.name for s in self._servers}
        added: list[_Server] = []
        for spec in servers:
            name, n = spec.name, 1
            while name in taken:
                n += 1
                name = f"{spec.name}-{n}"
            taken.add(name)
            server = _Server(spec=spec, name=name)
            self._servers.append(server)
            added.append(server)
        connections = [self._start(server, timeout) for server in added]
        try:
            for connection in connections:
                await connection.ready.wait()
        except BaseException:
            for server in added:  # the caller will never hear of these: do not leave them running
                self._stop(server)
            raise
        self._reindex()
        for server in added:
            if server.state == "failed":
                log.warning("%s", server.error)
            else:
                log.info("MCP server %r connected: %d tools", server.name, len(server.tools))
        return [server.status() for server in added]

    def tools(self) -> list[McpTool]:
        """The tools the model may call: those of connected servers and of crashed ones (restarted on use)."""
        return [tool for server, tool in self._index.values()]

    def statuses(self) -> list[ServerStatus]:
        return [server.status() for server in self._servers]

    async def call(self, qualified_name: str, arguments: dict[str, Any], *, timeout: float = 120.0) -> McpCallResult:
        """Call a tool by its qualified name. Raises `McpError` when the server cannot answer (a tool's own failure
        is a result with `is_error`)."""
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED

        entry = self._index.get(qualified_name)
        if entry is None:
            raise McpError(f"unknown MCP tool {qualified_name!r}")
        server, tool = entry
        client, connection = await self._ready(server)
        if tool.name not in {t.name for t in server.tools}:
            raise McpError(f"MCP server {server.name!r} no longer offers the tool {tool.name!r}")
        what = f"the call to {tool.name!r} on MCP server {server.name!r}"
        try:
            with anyio.fail_after(timeout):
                result = await client.call_tool(tool.name, arguments)
        except TimeoutError:
            raise McpError(f"{what} did not finish within {timeout:g} s") from None
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED or connection.lost.is_set():
                raise McpError(await self._lost(server, connection, what)) from None
            raise McpError(f"{what} failed: {exc.error.message} (MCP error {exc.code})") from None
        except Exception as exc:
            if connection.lost.is_set() or _is_connection_error(exc):
                raise McpError(await self._lost(server, connection, what)) from None
            raise McpError(f"{what} failed: {_describe(exc)}") from None
        return _map_result(result.model_dump(by_alias=True, mode="json", exclude_none=True), self._max_chars)

    async def list_prompts(self) -> list[McpPromptInfo]:
        """The prompts of every connected server that has some (a server that fails to list them is skipped)."""
        prompts: list[McpPromptInfo] = []
        for server in self._servers:
            connection = server.connection
            if server.state != "connected" or not server.has_prompts or connection is None or connection.client is None:
                continue
            try:
                with anyio.fail_after(LIST_TIMEOUT):
                    listed = await _list_all(connection.client.list_prompts, "prompts")
            except Exception as exc:
                log.warning("MCP server %r: listing prompts failed: %s", server.name, _describe(exc))
                continue
            for prompt in listed:
                arguments = [
                    McpPromptArgument(name=a.name, description=a.description, required=bool(a.required))
                    for a in prompt.arguments or []
                ]
                prompts.append(
                    McpPromptInfo(
                        server=server.name,
                        name=prompt.name,
                        description=prompt.description,
                        arguments=arguments,
                        title=prompt.title,
                    )
                )
        return prompts

    async def get_prompt(self, server: str, name: str, arguments: dict[str, str] | None = None) -> str:
        """The text of prompt `name` of `server`, its messages joined by blank lines."""
        found = next((s for s in self._servers if s.name == server), None)
        if found is None:
            raise McpError(f"unknown MCP server {server!r}")
        client, _ = await self._ready(found)
        try:
            with anyio.fail_after(LIST_TIMEOUT):
                result = await client.get_prompt(name, arguments or {})
        except Exception as exc:
            raise McpError(f"MCP server {server!r}: getting the prompt {name!r} failed: {_describe(exc)}") from None
        texts: list[str] = []
        for message in result.messages:
            block = message.content.model_dump(by_alias=True, mode="json", exclude_none=True)
            texts.extend(part["text"] for part in _model_parts(block) if part["type"] == "text")
        return "\n\n".join(texts)

    async def aclose(self) -> None:
        """Close every server (stdio processes end, within a few seconds at most). Idempotent."""
        self._closed = True
        for server in self._servers:
            self._stop(server)
        pending = [s.connection for s in self._servers if s.connection is not None and not s.connection.done.is_set()]
        with anyio.move_on_after(ACLOSE_TIMEOUT):
            for connection in pending:
                await connection.done.wait()
        for connection in pending:
            if not connection.done.is_set():
                connection.scope.cancel()
        with anyio.move_on_after(ACLOSE_TIMEOUT):  # stdio shutdown is shielded and bounded
            for connection in pending:
                await connection.done.wait()
        for server in self._servers:
            if server.state != "failed":
                server.state = "closed"
        self._index.clear()

    # ---- connections ------------------------------------------------------------------------------------------

    @staticmethod
    def _stop(server: _Server) -> None:
        """Ask the server's connection to close: at once if it is still starting."""
        server.stop.set()
        connection = server.connection
        if connection is not None and not connection.ready.is_set():
            connection.scope.cancel()

    def _start(self, server: _Server, timeout: float) -> _Connection:
        assert self._task_group is not None
        connection = _Connection()
        server.connection = connection
        server.state = "connecting"
        self._task_group.start_soon(self._run_connection, server, connection, timeout)
        return connection

    async def _run_connection(self, server: _Server, connection: _Connection, timeout: float) -> None:
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

    async def _connect_and_serve(self, server: _Server, connection: _Connection, timeout: float) -> None:
        from mcp_types import ToolListChangedNotification

        signals_in, signals_out = anyio.create_memory_object_stream[None](1)

        async def on_message(message: Any) -> None:
            if isinstance(message, ToolListChangedNotification):
                with contextlib.suppress(anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    signals_in.send_nowait(None)  # a refresh is already due: this one coalesces into it
            elif isinstance(message, Exception):
                log.debug("MCP server %r: transport error: %s", server.name, message)

        connected = False
        failure: BaseException | None = None
        deadline = anyio.CancelScope(deadline=anyio.current_time() + timeout)
        try:
            with deadline, signals_in, signals_out:
                async with AsyncExitStack() as stack:
                    client = await self._open_client(server, connection, stack, on_message)
                    tools = await _list_all(client.list_tools, "tools")
                    await self._listen_for_changes(server, client, stack)
                    deadline.deadline = math.inf
                    connected = True
                    server.restart_pending = False
                    server.protocol_version = client.protocol_version
                    server.has_prompts = client.server_capabilities.prompts is not None
                    server.tools = _to_tools(server.name, tools)
                    server.state, server.error = "connected", None
                    connection.client = client
                    connection.ready.set()
                    async with anyio.create_task_group() as group:
                        group.start_soon(self._refresh_tools, server, client, signals_out)
                        await _first_of(server.stop, connection.lost)
                        group.cancel_scope.cancel()
                    connection.client = None
        except Exception as exc:
            failure = exc
        finally:
            connection.client = None
        prefix = f"MCP server {server.name!r} ({server.spec.describe()})"
        if not connected:
            if failure is not None:
                reason = _describe(failure)
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
            details = connection.process.explain() or (_describe(failure) if failure else "the connection dropped")
            server.state = "failed"
            server.restart_pending = True
            server.error = f"{prefix} stopped: {details}"
            log.warning("%s", server.error)

    async def _open_client(
        self, server: _Server, connection: _Connection, stack: AsyncExitStack, on_message: Any
    ) -> Client:
        from mcp.client.client import Client
        from mcp_types import Implementation

        from coder_agent import __version__

        spec = server.spec
        transport: Any
        if spec.transport == "stdio":
            transport = _stdio_transport(spec, connection, server.name, self._log_line)
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
            mode=self._protocol,
            cache=None,
            message_handler=on_message,
            list_roots_callback=self._list_roots if self._roots else None,
            client_info=Implementation(name="coder-agent", version=__version__),
        )
        return await stack.enter_async_context(client)

    async def _listen_for_changes(self, server: _Server, client: Client, stack: AsyncExitStack) -> None:
        """On 2026-07-28 sessions, list_changed comes only to clients that listen for it (it then also reaches
        the message handler). 2025-era sessions get it unasked."""
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        tools = client.server_capabilities.tools
        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS or tools is None or not tools.list_changed:
            return
        try:
            await stack.enter_async_context(client.listen(tools_list_changed=True))
        except Exception as exc:
            log.info("MCP server %r: not listening for tool changes: %s", server.name, _describe(exc))

    async def _refresh_tools(self, server: _Server, client: Client, signals: MemoryObjectReceiveStream[None]) -> None:
        async for _ in signals:
            try:
                with anyio.fail_after(LIST_TIMEOUT):
                    listed = await _list_all(client.list_tools, "tools")
            except Exception as exc:
                log.warning("MCP server %r: listing tools again failed: %s", server.name, _describe(exc))
                continue
            tools = _to_tools(server.name, listed)
            if tools == server.tools:
                continue
            server.tools = tools
            self._reindex()
            log.info("MCP server %r: tools changed, %d now", server.name, len(tools))
            await self._tools_changed()

    async def _tools_changed(self) -> None:
        if self._on_tools_changed is None:
            return
        try:
            await self._on_tools_changed()
        except Exception:
            log.exception("on_tools_changed failed")

    async def _ready(self, server: _Server) -> tuple[Client, _Connection]:
        """The server's client, restarting a crashed server once if it has to."""
        connection = server.connection
        if server.state == "connected" and connection is not None and connection.client is not None:
            return connection.client, connection
        async with server.lock:
            connection = server.connection
            if server.state == "connected" and connection is not None and connection.client is not None:
                return connection.client, connection
            if self._closed:
                raise McpError(f"MCP server {server.name!r} is closed")
            if not server.restart_pending:
                raise McpError(server.error or f"MCP server {server.name!r} is not connected")
            if server.restarts >= MAX_RESTARTS:
                raise McpError(f"{server.error} (it crashed {server.restarts + 1} times; not restarting it again)")
            if connection is not None:
                await connection.done.wait()
            before = {t.name for t in server.tools}
            crash = server.error
            server.restart_pending = False
            server.restarts += 1
            log.info("MCP server %r: restarting it", server.name)
            connection = self._start(server, self._connect_timeout)
            await connection.ready.wait()
            if server.state != "connected" or connection.client is None:
                self._reindex()
                await self._tools_changed()
                raise McpError(f"{crash}; restarting it failed: {server.error}")
            self._reindex()
            if {t.name for t in server.tools} != before:
                await self._tools_changed()
            return connection.client, connection

    async def _lost(self, server: _Server, connection: _Connection, what: str) -> str:
        """Mark the connection lost; wait (briefly) for it to close, to report the exit code and stderr."""
        connection.lost.set()
        with anyio.move_on_after(CLOSE_GRACE * 3):
            await connection.done.wait()
        details = connection.process.explain() or "the connection dropped"
        again = " It will be restarted on the next call." if server.restarts < MAX_RESTARTS else ""
        return f"{what} failed: the server stopped ({details}).{again}"

    async def _list_roots(self, context: Any) -> Any:
        from mcp_types import ListRootsResult, Root

        roots = [Root.model_validate({"uri": root.as_uri(), "name": root.name or str(root)}) for root in self._roots]
        return ListRootsResult(roots=roots)

    def _reindex(self) -> None:
        index: dict[str, tuple[_Server, McpTool]] = {}
        for server in self._servers:
            if server.state not in ("connected", "connecting") and not server.restart_pending:
                continue
            for tool in server.tools:
                if tool.qualified_name in index:  # mcp__a__b__c from (a, b__c) and (a__b, c): hash the later one
                    digest = hashlib.sha256(f"{server.name}\0{tool.name}\0dup".encode()).hexdigest()[:8]
                    tool = dataclasses.replace(tool, qualified_name=f"{tool.qualified_name[:55]}_{digest}")
                index[tool.qualified_name] = (server, tool)
        self._index = index

    def _log_line(self, server: str, line: str) -> None:
        stream = self._log_to or sys.stderr
        with contextlib.suppress(Exception):
            stream.write(f"[mcp {server}] {line}\n")
            stream.flush()


# ---- stdio transport -----------------------------------------------------------------------------------------


def _resolve_command(command: str | None, env: dict[str, str]) -> str:
    if not command:
        raise McpError("no command given")
    if os.sep in command or (os.altsep and os.altsep in command):
        if not Path(command).exists():
            raise McpError(f"command not found: {command} (no such file)")
        return command
    found = shutil.which(command, path=env.get("PATH", os.defpath))
    if found is None:
        raise McpError(f"command not found: {command!r} is not on PATH")
    return found


@asynccontextmanager
async def _stdio_transport(
    spec: McpServerSpec, connection: _Connection, name: str, log_line: Callable[[str, str], None]
) -> AsyncIterator[tuple[Any, Any]]:
    """Spawn the server in its own process group; bridge its stdout/stdin to the session's streams."""
    from mcp.shared.message import SessionMessage

    env = {**child_environ(), **spec.env}
    executable = _resolve_command(spec.command, env)
    info = connection.process
    pipe_stderr = os.name == "posix"
    read_fd, write_fd = os.pipe() if pipe_stderr else (-1, -1)
    try:
        process = await anyio.open_process(
            [executable, *spec.args],
            env=env,
            cwd=spec.cwd,
            stderr=write_fd if pipe_stderr else None,
            start_new_session=True,
        )
    except OSError as exc:
        if pipe_stderr:
            os.close(read_fd)
        raise McpError(f"could not start {spec.command!r}: {exc.strerror or exc}") from None
    finally:
        if pipe_stderr:
            os.close(write_fd)
    # Spawned: no await until the task group is entered, or a cancellation here would leak the process.
    info.pid = process.pid
    read_in, read_out = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_in, write_out = anyio.create_memory_object_stream[SessionMessage](0)
    writer_done = anyio.Event()
    stderr_done = anyio.Event()

    def on_stdout_closed() -> None:
        if not info.closing:
            connection.lost.set()

    async with anyio.create_task_group() as group:
        if pipe_stderr:
            group.start_soon(_pump_stderr, read_fd, info, lambda line: log_line(name, line), stderr_done)
        else:
            stderr_done.set()
        group.start_soon(_pump_stdout, process, read_in, name, on_stdout_closed)
        group.start_soon(_pump_stdin, process, write_out, read_in, writer_done)
        try:
            yield read_out, write_in
        finally:
            info.closing = True
            # A server that never finished starting (timed out, or the connect was cancelled) gets no grace.
            grace = CLOSE_GRACE if connection.ready.is_set() else 0.1
            with anyio.CancelScope(shield=True):
                write_in.close()
                with anyio.move_on_after(0.5):
                    await writer_done.wait()
                await _stop_process(process, grace)
                info.returncode = process.returncode
                with anyio.move_on_after(0.5):  # the last lines often say why it died
                    await stderr_done.wait()
                for stream in (read_in, read_out, write_out):
                    stream.close()
            group.cancel_scope.cancel()


async def _pump_stdout(
    process: Process, sink: MemoryObjectSendStream[Any], name: str, on_closed: Callable[[], None]
) -> None:
    from mcp.shared.message import SessionMessage
    from mcp_types import jsonrpc_message_adapter

    assert process.stdout is not None
    buffer = bytearray()
    try:
        async with sink:
            async for chunk in process.stdout:
                scan = len(buffer)  # the bytes before hold no newline: do not search them again
                buffer += chunk
                start = 0
                while (end := buffer.find(b"\n", scan)) >= 0:
                    line = bytes(buffer[start:end]).strip()
                    start = scan = end + 1
                    if not line:
                        continue
                    try:
                        message = jsonrpc_message_adapter.validate_json(line, by_name=False)
                    except ValueError:
                        log.warning("MCP server %r wrote a non-protocol line to stdout: %.200r", name, line)
                        continue
                    await sink.send(SessionMessage(message))
                del buffer[:start]
                if len(buffer) > MAX_MESSAGE_BYTES:
                    log.error("MCP server %r sent a message over %d bytes; dropping the connection", name, len(buffer))
                    break
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        pass
    finally:
        on_closed()


async def _pump_stdin(
    process: Process,
    source: MemoryObjectReceiveStream[Any],
    sink: MemoryObjectSendStream[Any],
    done: anyio.Event,
) -> None:
    assert process.stdin is not None
    try:
        async with source:
            async for message in source:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                await process.stdin.send(data.encode())
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        sink.close()  # the server stopped reading: let the session see the end instead of waiting forever
    finally:
        done.set()


async def _pump_stderr(fd: int, info: _Process, emit: Callable[[str], None], done: anyio.Event) -> None:
    """Copy the server's stderr line by line to the log, keeping the last lines for error messages."""

    def line(raw: bytes) -> None:
        text = raw.decode(errors="replace").rstrip()
        if text:
            info.stderr.append(text if len(text) <= 400 else text[:397] + "...")
            emit(text)

    os.set_blocking(fd, False)
    buffer = b""
    try:
        while True:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                await anyio.wait_readable(fd)
                continue
            if not chunk:
                break
            *lines, buffer = (buffer + chunk).split(b"\n")
            for raw in lines:
                line(raw)
            if len(buffer) > 65536:
                line(buffer)
                buffer = b""
    finally:
        if buffer:
            line(buffer)
        os.close(fd)
        done.set()


async def _stop_process(process: Process, grace: float) -> None:
    """Close stdin, wait `grace`; SIGTERM the process group, wait; SIGKILL it. Then end what is left in the group."""
    pid = process.pid
    assert process.stdin is not None
    with contextlib.suppress(Exception):
        await process.stdin.aclose()
    if not await _exited(process, grace):
        _signal_group(process, signal.SIGTERM)
        if not await _exited(process, CLOSE_GRACE):
            _signal_group(process, getattr(signal, "SIGKILL", signal.SIGTERM))
            await _exited(process, 2.0)
    if hasattr(os, "killpg") and _group_alive(pid):  # children it left behind (npx → node, shells)
        _signal_group(process, signal.SIGTERM)
        with anyio.move_on_after(CLOSE_GRACE):
            while _group_alive(pid):  # noqa: ASYNC110 - nothing to wait on but the kernel's process table
                await anyio.sleep(0.02)
        if _group_alive(pid):
            _signal_group(process, signal.SIGKILL)
    with anyio.move_on_after(1.0):
        await process.aclose()


async def _exited(process: Process, timeout: float) -> bool:
    """Poll the return code: `wait()` would also wait for pipes a grandchild may hold open."""
    with anyio.move_on_after(timeout):
        while process.returncode is None:  # noqa: ASYNC110 - see above
            await anyio.sleep(0.01)
    return process.returncode is not None


def _signal_group(process: Process, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        if hasattr(os, "killpg"):
            os.killpg(process.pid, sig)  # start_new_session: the pgid is the server's pid
        else:  # pragma: no cover - Windows
            process.kill()


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# ---- mapping -------------------------------------------------------------------------------------------------


async def _list_all(fetch: Callable[..., Awaitable[Any]], key: str) -> list[Any]:
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


def _to_tools(server: str, listed: list[Any]) -> list[McpTool]:
    tools = []
    for tool in listed:
        schema = dict(tool.input_schema or {})
        schema.setdefault("type", "object")
        annotations = tool.annotations
        tools.append(
            McpTool(
                server=server,
                name=tool.name,
                qualified_name=qualified_name(server, tool.name),
                description=tool.description or tool.title or (annotations.title if annotations else None) or "",
                input_schema=schema,
                title=tool.title or (annotations.title if annotations else None),
                read_only=annotations.read_only_hint if annotations else None,
                destructive=annotations.destructive_hint if annotations else None,
            )
        )
    return tools


def _model_parts(block: dict[str, Any]) -> list[dict[str, Any]]:
    """One MCP content block (wire JSON) as OpenAI-style parts for the model."""
    kind = block.get("type")
    if kind == "text":
        return [{"type": "text", "text": block.get("text", "")}]
    if kind == "image":
        data, mime = block.get("data", ""), block.get("mimeType", "image/png")
        if len(data) > MAX_IMAGE_BASE64:
            return [{"type": "text", "text": f"[image ({mime}, {len(data) * 3 // 4:,} bytes) too large to show]"}]
        return [{"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}}]
    if kind == "audio":
        size = len(block.get("data", "")) * 3 // 4
        return [{"type": "text", "text": f"[audio ({block.get('mimeType', '?')}, {size:,} bytes) not shown]"}]
    if kind == "resource_link":
        name = block.get("title") or block.get("name") or block.get("uri")
        extra = f", {block['mimeType']}" if block.get("mimeType") else ""
        about = f": {block['description']}" if block.get("description") else ""
        return [{"type": "text", "text": f"[resource link: {name} <{block.get('uri')}>{extra}{about}]"}]
    if kind == "resource":
        resource = block.get("resource") or {}
        uri, mime = resource.get("uri", "?"), resource.get("mimeType")
        if "text" in resource:
            return [{"type": "text", "text": f"[resource <{uri}>]\n{resource['text']}"}]
        blob = resource.get("blob", "")
        if mime and mime.startswith("image/") and len(blob) <= MAX_IMAGE_BASE64:
            return [{"type": "image_url", "image_url": {"url": f"data:{mime};base64,{blob}"}}]
        return [{"type": "text", "text": f"[resource <{uri}> ({mime or 'binary'}, {len(blob) * 3 // 4:,} bytes)]"}]
    return [{"type": "text", "text": json.dumps(block)[:2000]}]


def _display_block(block: dict[str, Any]) -> dict[str, Any]:
    """MCP content blocks and ACP content blocks share their shapes; drop what ACP does not know."""
    kind = block.get("type")
    keep = {
        "text": ("type", "text", "annotations"),
        "image": ("type", "data", "mimeType", "uri", "annotations"),
        "audio": ("type", "data", "mimeType", "annotations"),
        "resource": ("type", "resource", "annotations"),
        "resource_link": ("type", "uri", "name", "title", "description", "mimeType", "size", "annotations"),
    }.get(str(kind))
    if keep is None:
        return {"type": "text", "text": json.dumps(block)[:2000]}
    shown = {key: block[key] for key in keep if key in block}
    if kind == "resource" and isinstance(shown.get("resource"), dict):
        shown["resource"] = {k: v for k, v in shown["resource"].items() if k in ("uri", "mimeType", "text", "blob")}
    return shown


def _map_result(raw: dict[str, Any], max_chars: int) -> McpCallResult:
    blocks: list[dict[str, Any]] = list(raw.get("content") or [])
    structured = raw.get("structuredContent")
    content: list[dict[str, Any]] = []
    display: list[dict[str, Any]] = []
    for block in blocks:
        content.extend(_model_parts(block))
        display.append(_display_block(block))
    if structured is not None and not any(part["type"] == "text" for part in content):
        text = json.dumps(structured, ensure_ascii=False, indent=1)
        content.insert(0, {"type": "text", "text": text})
        display.insert(0, {"type": "text", "text": f"```json\n{text}\n```"})
    content, cut = _truncate(content, max_chars)
    display, _ = _truncate(display, max_chars)
    if not content:
        content = [{"type": "text", "text": "(no output)"}]
    return McpCallResult(
        content=content, display=display, is_error=bool(raw.get("isError")), structured=structured, truncated=cut
    )


def _truncate(parts: list[dict[str, Any]], limit: int) -> tuple[list[dict[str, Any]], bool]:
    """Cut the text parts to `limit` characters in total, saying so in a last text part."""
    total = sum(len(p["text"]) for p in parts if p.get("type") == "text" and isinstance(p.get("text"), str))
    if total <= limit:
        return parts, False
    room = limit
    kept: list[dict[str, Any]] = []
    for part in parts:
        if part.get("type") != "text":
            kept.append(part)
            continue
        text = str(part.get("text", ""))
        if room <= 0:
            continue
        kept.append({**part, "text": text[:room]})
        room -= min(len(text), room)
    note = f"[output truncated: the tool returned {total:,} characters of text; only the first {limit:,} are shown]"
    kept.append({"type": "text", "text": note})
    return kept, True


# ---- errors --------------------------------------------------------------------------------------------------


def _leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = next((e for e in exc.exceptions if not isinstance(e, anyio.get_cancelled_exc_class())), exc.exceptions[0])
    return exc


def _describe(exc: BaseException) -> str:
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


def _is_connection_error(exc: BaseException) -> bool:
    exc = _leaf(exc)
    if isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError | anyio.EndOfStream | ConnectionError):
        return True
    try:
        import httpx2
    except ImportError:  # pragma: no cover
        return False
    return isinstance(exc, httpx2.TransportError)


async def _first_of(*events: anyio.Event) -> None:
    """Return when any of the events is set."""
    async with anyio.create_task_group() as group:

        async def wait(event: anyio.Event) -> None:
            await event.wait()
            group.cancel_scope.cancel()

        for event in events:
            group.start_soon(wait, event)
