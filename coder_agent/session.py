"""A session: its working directories, its client, and its turns, at most one running at a time.

A prompt that arrives while a turn runs waits for it (prompts are queued in arrival order, never
rejected): editors such as Zed send `session/cancel` and then the next prompt at once, and the new prompt
must not fail because the old turn is still winding down. `session/cancel` cancels the running turn and
every prompt queued before it; each of those prompts answers `cancelled`, exactly once.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup

from coder_agent.acp.client import AcpClient
from coder_agent.protocol.content import ContentBlock
from coder_agent.protocol.schema import McpServer, StopReason
from coder_agent.store import utc_now
from coder_agent.turn import TurnRunner

if TYPE_CHECKING:
    from coder_agent.checkpoints import Checkpoints
    from coder_agent.config import Config
    from coder_agent.mcp.hub import McpHub
    from coder_agent.mcp.types import McpPromptInfo
    from coder_agent.permissions import PermissionPolicy
    from coder_agent.persistence import Saver

log = logging.getLogger(__name__)

CLOSE_SAVE_TIMEOUT = 5.0


@dataclass
class Conversation:
    """What the model has been told and answered so far (OpenAI-style messages, no system prompt)."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    cost: float = 0.0
    """Money spent on this session's model calls, in USD, where the price is known."""
    context_tokens: int = 0
    """Tokens in the context after the last model call."""


@dataclass(eq=False)
class Session:
    """One ACP session."""

    id: str
    cwd: Path
    client: AcpClient
    runner: TurnRunner
    additional_directories: list[Path] = field(default_factory=list)
    mcp_servers: list[McpServer] = field(default_factory=list)
    config: Config | None = None
    title: str | None = None
    conversation: Conversation = field(default_factory=Conversation)
    permissions: PermissionPolicy | None = None
    """The mode and the allow/deny rules; None until a runner with tools opened the session."""
    file_hashes: dict[str, str] = field(default_factory=dict)
    """Content hash of each file as the model last read or wrote it, to refuse edits of stale text."""
    events: list[dict[str, Any]] = field(default_factory=list)
    """What the client was shown (session/update objects, merged), replayed by session/load."""
    created_at: str = field(default_factory=lambda: utc_now())
    checkpoints: Checkpoints | None = None
    """Snapshots of the files each turn changed, for /undo."""
    mcp_hub: McpHub | None = None
    """The session's MCP servers, when the client gave some."""
    mcp_prompts: list[McpPromptInfo] = field(default_factory=list)
    """Their prompts, offered as slash commands."""
    tasks: TaskGroup | None = None
    """A long-lived task group for what the session runs in the background (MCP connections)."""
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    """What to close with the session (MCP servers)."""
    saver: Saver | None = None
    """Saves the session (set by the agent when it has a store)."""
    _turn_lock: anyio.Lock = field(default_factory=anyio.Lock)
    _turn_scope: anyio.CancelScope | None = None
    _cancels: int = 0
    _closed: bool = False

    def save_soon(self) -> None:
        """Ask for a save of the session's current state, in the background."""
        if self.saver is not None:
            self.saver.soon()

    async def flush(self) -> None:
        """Wait until the session's state is saved."""
        if self.saver is not None:
            await self.saver.flush()

    @property
    def roots(self) -> list[Path]:
        """The directories tools may work in without asking: cwd first."""
        return [self.cwd, *self.additional_directories]

    async def prompt(self, blocks: Sequence[ContentBlock]) -> StopReason:
        """Run one turn after any turn before it; `cancelled` if a cancel came first or during it."""
        cancels_at_arrival = self._cancels
        async with self._turn_lock:
            if self._closed or self._cancels != cancels_at_arrival:
                return "cancelled"
            scope = anyio.CancelScope()
            self._turn_scope = scope
            stop_reason: StopReason = "cancelled"
            try:
                with scope:
                    stop_reason = await self.runner.run_turn(self, blocks)
            finally:
                self._turn_scope = None
            if scope.cancelled_caught or scope.cancel_called:
                return "cancelled"
            return stop_reason

    def cancel(self) -> None:
        """Cancel the running turn and the prompts queued behind it."""
        self._cancels += 1
        if self._turn_scope is not None:
            log.info("session %s: cancelling the running turn", self.id)
            self._turn_scope.cancel()

    async def aclose(self) -> None:
        """Cancel all work and free what the session holds."""
        self._closed = True
        self.cancel()
        async with self._turn_lock:
            pass
        with anyio.move_on_after(CLOSE_SAVE_TIMEOUT):
            await self.flush()
        closers, self.closers = self.closers, []
        for close in closers:
            try:
                await close()
            except Exception:
                log.exception("session %s: closing a resource failed", self.id)
