"""`ClientBridge`: what a session may ask of its environment — show updates, read and write text files, run
commands in a terminal, ask the user's permission.

The editor over ACP is one implementation (`acp.client.AcpClient`); every call is gated on what the
client advertised, and `can_read_files`, `can_write_files` and `has_terminal` say which calls exist, so
callers fall back to the local disk or processes where the editor lacks them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from coder_agent.protocol.schema import (
    NoticeSeverity,
    PermissionOption,
    PermissionOutcome,
    SessionUpdate,
    TerminalExitStatus,
    TerminalOutputResponse,
    ToolCallUpdate,
)


class ClientBridge(Protocol):
    """The client, as one session sees it."""

    observer: Callable[[dict[str, Any]], None] | None
    """Sees every update sent, except live-only ones (the session's replay log)."""

    @property
    def can_read_files(self) -> bool: ...

    @property
    def can_write_files(self) -> bool: ...

    @property
    def has_terminal(self) -> bool: ...

    @property
    def supports_compaction_updates(self) -> bool: ...

    async def update(self, update: SessionUpdate, *, live_only: bool = False) -> None:
        """Show one `session/update`; `live_only` ones are not replayed by `session/load`."""
        ...

    async def notice(self, severity: NoticeSeverity, title: str, description: str | None = None) -> None:
        """Tell the user something live (a retry, a server that failed); never replayed."""
        ...

    async def read_text_file(self, path: str, *, line: int | None = None, limit: int | None = None) -> str: ...

    async def write_text_file(self, path: str, content: str) -> None: ...

    async def request_permission(
        self, tool_call: ToolCallUpdate, options: Sequence[PermissionOption]
    ) -> PermissionOutcome: ...

    async def create_terminal(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        output_byte_limit: int | None = None,
    ) -> str: ...

    async def terminal_output(self, terminal_id: str) -> TerminalOutputResponse: ...

    async def wait_for_terminal_exit(self, terminal_id: str, timeout: float) -> TerminalExitStatus: ...

    async def kill_terminal(self, terminal_id: str) -> None: ...

    async def release_terminal(self, terminal_id: str) -> None: ...
