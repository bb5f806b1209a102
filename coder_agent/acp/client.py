"""`AcpClient`: the editor's methods (session/update, fs/*, terminal/*, permission) as typed calls for one session.

Every call is gated on the capabilities the client advertised in `initialize`: calling a method the client
did not advertise raises `CapabilityMissing` before anything is sent, so the agent never breaks that rule.
Callers check `can_read_files`, `can_write_files` and `has_terminal` and fall back to local disk or processes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from coder_agent.protocol.content import TextContent
from coder_agent.protocol.schema import (
    AgentMessageChunk,
    ClientCapabilities,
    CreateTerminalResponse,
    NoticeSeverity,
    NoticeUpdate,
    PermissionOption,
    PermissionOutcome,
    ReadTextFileResponse,
    RequestPermissionResponse,
    SessionUpdate,
    TerminalExitStatus,
    TerminalOutputResponse,
    ToolCallUpdate,
)

FS_TIMEOUT = 30.0
TERMINAL_TIMEOUT = 30.0
PERMISSION_TIMEOUT = 3600.0


class Peer(Protocol):
    """The part of `rpc.Connection` a client needs."""

    async def request(self, method: str, params: Any, *, timeout: float | None = None) -> Any: ...

    async def notify(self, method: str, params: Any) -> None: ...


class CapabilityMissing(Exception):
    """The client did not advertise the capability a call needs."""


class AcpClient:
    """The client, as seen from one session."""

    def __init__(self, peer: Peer, capabilities: ClientCapabilities, session_id: str) -> None:
        self._peer = peer
        self.capabilities = capabilities
        self.session_id = session_id
        self.observer: Callable[[dict[str, Any]], None] | None = None
        """Sees every update sent (the session's replay log)."""

    @property
    def can_read_files(self) -> bool:
        return self.capabilities.fs.read_text_file

    @property
    def can_write_files(self) -> bool:
        return self.capabilities.fs.write_text_file

    @property
    def has_terminal(self) -> bool:
        return self.capabilities.terminal

    @property
    def supports_compaction_updates(self) -> bool:
        session = self.capabilities.session
        return session is not None and session.compaction is not None

    @property
    def supports_notices(self) -> bool:
        session = self.capabilities.session
        return session is not None and session.notices is not None

    async def notice(self, severity: NoticeSeverity, title: str, description: str | None = None) -> None:
        """Tell the user something live (a retry, a server that failed): a `notice` where the client shows
        them, otherwise a short agent message. Neither is replayed by `session/load`."""
        if self.supports_notices:
            await self.update(NoticeUpdate(severity=severity, title=title, description=description), live_only=True)
            return
        text = f"\n\n_{title}_" + (f"\n\n{description}" if description else "") + "\n\n"
        await self.update(AgentMessageChunk(content=TextContent(text=text)), live_only=True)

    async def update(self, update: SessionUpdate, *, live_only: bool = False) -> None:
        """Send one `session/update` notification; `live_only` ones stay out of the session's replay log."""
        wire = update.wire()
        if self.observer is not None and not live_only:
            self.observer(wire)
        await self._peer.notify("session/update", {"sessionId": self.session_id, "update": wire})

    async def _call(self, method: str, params: dict[str, Any], timeout: float) -> Any:
        return await self._peer.request(method, {"sessionId": self.session_id, **params}, timeout=timeout)

    async def read_text_file(self, path: str, *, line: int | None = None, limit: int | None = None) -> str:
        if not self.can_read_files:
            raise CapabilityMissing("fs.readTextFile")
        params: dict[str, Any] = {"path": path}
        if line is not None:
            params["line"] = line
        if limit is not None:
            params["limit"] = limit
        result = await self._call("fs/read_text_file", params, FS_TIMEOUT)
        return ReadTextFileResponse.model_validate(result).content

    async def write_text_file(self, path: str, content: str) -> None:
        if not self.can_write_files:
            raise CapabilityMissing("fs.writeTextFile")
        await self._call("fs/write_text_file", {"path": path, "content": content}, FS_TIMEOUT)

    async def request_permission(
        self, tool_call: ToolCallUpdate, options: Sequence[PermissionOption]
    ) -> PermissionOutcome:
        """Ask the user; the answer may take as long as the user needs (bounded at an hour)."""
        call = tool_call.wire()
        call.pop("sessionUpdate", None)
        result = await self._call(
            "session/request_permission",
            {"toolCall": call, "options": [option.wire() for option in options]},
            PERMISSION_TIMEOUT,
        )
        return RequestPermissionResponse.model_validate(result).outcome

    async def create_terminal(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        output_byte_limit: int | None = None,
    ) -> str:
        if not self.has_terminal:
            raise CapabilityMissing("terminal")
        params: dict[str, Any] = {"command": command, "args": list(args)}
        if env:
            params["env"] = [{"name": key, "value": value} for key, value in env.items()]
        if cwd is not None:
            params["cwd"] = cwd
        if output_byte_limit is not None:
            params["outputByteLimit"] = output_byte_limit
        result = await self._call("terminal/create", params, TERMINAL_TIMEOUT)
        return CreateTerminalResponse.model_validate(result).terminal_id

    async def terminal_output(self, terminal_id: str) -> TerminalOutputResponse:
        result = await self._call("terminal/output", {"terminalId": terminal_id}, TERMINAL_TIMEOUT)
        return TerminalOutputResponse.model_validate(result)

    async def wait_for_terminal_exit(self, terminal_id: str, timeout: float) -> TerminalExitStatus:
        result = await self._call("terminal/wait_for_exit", {"terminalId": terminal_id}, timeout)
        return TerminalExitStatus.model_validate(result)

    async def kill_terminal(self, terminal_id: str) -> None:
        await self._call("terminal/kill", {"terminalId": terminal_id}, TERMINAL_TIMEOUT)

    async def release_terminal(self, terminal_id: str) -> None:
        await self._call("terminal/release", {"terminalId": terminal_id}, TERMINAL_TIMEOUT)
