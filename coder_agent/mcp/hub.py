"""One ACP session's MCP servers: connecting them, listing their tools for the model, calling them, restarting a
crashed one, their prompts, closing them.

`mcp` (2.x) is imported only inside this package, and lazily: importing this module is cheap (mostly anyio), the
`mcp` import (~0.4 s of CPU) happens on the first `connect`. (`mcp.support` answers `initialize` without even this.)

Lifetimes and cancellation
--------------------------
ACP request handlers run in separate tasks: `session/new` connects, a later `session/prompt` calls tools,
`session/close` closes. So no caller ever enters an MCP connection itself: each connection attempt is one task
(`connection.Connector.run`) started in the hub's task group, which is either the hub's own
(`async with McpHub() as hub:`) or one the owner already runs (`McpHub(task_group=...)`, e.g. the agent's
connection-wide group). So `connect`, `call` and `aclose` may be called from any task, and:
- a cancelled `connect` tells the attempts it started to stop; they close in their own tasks, nothing stays
  half open, and `aclose` waits for them;
- a cancelled `call` cancels only that request (its timeout is the caller's own scope);
- `aclose` asks every connection to stop, waits for them (stdio servers are stopped as `mcp.stdio` says, so no
  orphans), and cancels whatever has not finished after a grace period.

Each attempt has its own deadline (`connect(timeout=...)`), so one hung server never delays the others:
`connect` starts all attempts at once and returns when each has connected or failed.

Crashes: a call that loses its connection fails with an `McpError` naming the server, the exit code and the last
stderr lines. The tools of that server stay listed, and the next call to one of them restarts the server once
(then lists its tools again), up to `MAX_RESTARTS` times per server. A restart that fails, and a server given up
on, are told to the user (`McpClientHooks.notice`).

Servers' own requests (elicitation, sampling) are answered by the `McpClientHooks` the owner gives; `call` names
the tool call it serves (`caller`), so a question a server asks during it is tied to that call.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import logging
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Self, TextIO

import anyio
from anyio.abc import TaskGroup

from coder_agent.mcp.connection import (
    LIST_TIMEOUT,
    Connection,
    Connector,
    Server,
    describe,
    is_connection_error,
    list_all,
)
from coder_agent.mcp.results import MAX_RESULT_CHARS, map_result, model_parts
from coder_agent.mcp.stdio import CLOSE_GRACE
from coder_agent.mcp.types import (
    CommandWrapper,
    McpCallResult,
    McpClientHooks,
    McpError,
    McpPromptArgument,
    McpPromptInfo,
    McpServerSpec,
    McpTool,
    ServerStatus,
)

if TYPE_CHECKING:
    from mcp.client.client import Client

log = logging.getLogger(__name__)

MAX_RESTARTS = 3
"""Restarts of a crashed server, per server and hub, before its calls just fail."""
ACLOSE_TIMEOUT = 6.0
"""How long `aclose` waits for connections to close before cancelling them."""


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
        hooks: McpClientHooks | None = None,
        wrap_command: CommandWrapper | None = None,
    ) -> None:
        """`log_to` receives the stdio servers' stderr (default: our stderr, looked up when written).

        `task_group`: a long-lived group to run the connections in; without one, use `async with McpHub()`.
        `roots`: directories offered to servers that ask for roots (2025-era `roots/list`), e.g. the session cwd.
        `protocol`: "auto" negotiates (2026-07-28 or 2025 handshake); "legacy" forces the 2025 handshake.
        `hooks`: what the session does when a server asks the user, asks for a completion, or must tell the user.
        `wrap_command`: runs stdio servers inside the session's sandbox.
        """
        self._on_tools_changed = on_tools_changed
        self._log_to = log_to
        self._task_group = task_group
        self._own_group: TaskGroup | None = None
        self._connector = Connector(
            protocol=protocol,
            roots=[Path(r) for r in roots],
            log_line=self._log_line,
            tools_changed=self._server_tools_changed,
            hooks=hooks or McpClientHooks(),
            wrap_command=wrap_command,
        )
        self._hooks = hooks or McpClientHooks()
        self._max_chars = max_result_chars
        self._servers: list[Server] = []
        self._index: dict[str, tuple[Server, McpTool]] = {}
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
        added: list[Server] = []
        for spec in servers:
            name, n = spec.name, 1
            while name in taken:
                n += 1
                name = f"{spec.name}-{n}"
            taken.add(name)
            server = Server(spec=spec, name=name)
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

    async def call(
        self, qualified_name: str, arguments: dict[str, Any], *, timeout: float = 120.0, caller: str | None = None
    ) -> McpCallResult:
        """Call a tool by its qualified name. Raises `McpError` when the server cannot answer (a tool's own failure
        is a result with `is_error`). `caller` names our tool call, which the server's requests meanwhile belong to."""
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
        if caller is not None:
            server.callers.append(caller)
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
            if connection.lost.is_set() or is_connection_error(exc):
                raise McpError(await self._lost(server, connection, what)) from None
            raise McpError(f"{what} failed: {describe(exc)}") from None
        finally:
            if caller is not None:
                server.callers.remove(caller)
        return map_result(result.model_dump(by_alias=True, mode="json", exclude_none=True), self._max_chars)

    async def list_prompts(self) -> list[McpPromptInfo]:
        """The prompts of every connected server that has some (a server that fails to list them is skipped)."""
        prompts: list[McpPromptInfo] = []
        for server in self._servers:
            connection = server.connection
            if server.state != "connected" or not server.has_prompts or connection is None or connection.client is None:
                continue
            try:
                with anyio.fail_after(LIST_TIMEOUT):
                    listed = await list_all(connection.client.list_prompts, "prompts")
            except Exception as exc:
                log.warning("MCP server %r: listing prompts failed: %s", server.name, describe(exc))
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
            raise McpError(f"MCP server {server!r}: getting the prompt {name!r} failed: {describe(exc)}") from None
        texts: list[str] = []
        for message in result.messages:
            block = message.content.model_dump(by_alias=True, mode="json", exclude_none=True)
            texts.extend(part["text"] for part in model_parts(block) if part["type"] == "text")
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
    def _stop(server: Server) -> None:
        """Ask the server's connection to close: at once if it is still starting."""
        server.stop.set()
        connection = server.connection
        if connection is not None and not connection.ready.is_set():
            connection.scope.cancel()

    def _start(self, server: Server, timeout: float) -> Connection:
        assert self._task_group is not None
        connection = Connection()
        server.connection = connection
        server.state = "connecting"
        self._task_group.start_soon(self._connector.run, server, connection, timeout)
        return connection

    async def _server_tools_changed(self, server: Server) -> None:
        self._reindex()
        await self._tools_changed()

    async def _tools_changed(self) -> None:
        if self._on_tools_changed is None:
            return
        try:
            await self._on_tools_changed()
        except Exception:
            log.exception("on_tools_changed failed")

    async def _ready(self, server: Server) -> tuple[Client, Connection]:
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
                if not server.given_up:
                    server.given_up = True
                    await self._notice(
                        "error", f"The MCP server {server.name} keeps crashing; it is not restarted again", server.error
                    )
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
                await self._notice(
                    "warning", f"The MCP server {server.name} stopped and could not be restarted", server.error
                )
                raise McpError(f"{crash}; restarting it failed: {server.error}")
            self._reindex()
            if {t.name for t in server.tools} != before:
                await self._tools_changed()
            return connection.client, connection

    async def _lost(self, server: Server, connection: Connection, what: str) -> str:
        """Mark the connection lost; wait (briefly) for it to close, to report the exit code and stderr."""
        connection.lost.set()
        with anyio.move_on_after(CLOSE_GRACE * 3):
            await connection.done.wait()
        details = connection.process.explain() or "the connection dropped"
        again = " It will be restarted on the next call." if server.restarts < MAX_RESTARTS else ""
        return f"{what} failed: the server stopped ({details}).{again}"

    def _reindex(self) -> None:
        index: dict[str, tuple[Server, McpTool]] = {}
        for server in self._servers:
            if server.state not in ("connected", "connecting") and not server.restart_pending:
                continue
            for tool in server.tools:
                if tool.qualified_name in index:  # mcp__a__b__c from (a, b__c) and (a__b, c): hash the later one
                    digest = hashlib.sha256(f"{server.name}\0{tool.name}\0dup".encode()).hexdigest()[:8]
                    tool = dataclasses.replace(tool, qualified_name=f"{tool.qualified_name[:55]}_{digest}")
                index[tool.qualified_name] = (server, tool)
        self._index = index

    async def _notice(self, severity: Literal["info", "warning", "error"], title: str, description: str | None) -> None:
        if self._hooks.notice is None:
            return
        try:
            await self._hooks.notice(severity, title, description)
        except Exception:
            log.exception("telling the user about an MCP server failed")

    def _log_line(self, server: str, line: str) -> None:
        stream = self._log_to or sys.stderr
        with contextlib.suppress(Exception):
            stream.write(f"[mcp {server}] {line}\n")
            stream.flush()
