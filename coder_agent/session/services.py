"""`SessionServices`: what a session runs on while it is open — its bridge to the client, its background tasks
and saves, its MCP servers, its commands' sandbox, its background jobs, its memory of the files the model saw, the
messages waiting for its running turn — none of it stored.

The session manager (`agent.manager`) composes them when the session opens and is the one writer of these
fields; `aclose` ends what they hold when the session closes (its jobs first, then the rest).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from anyio.abc import TaskGroup

from coder_agent.protocol.schema import AvailableCommand
from coder_agent.session.file_memory import FileMemory
from coder_agent.session.hooks import Hooks
from coder_agent.session.jobs import JobTable
from coder_agent.session.redacting_bridge import RedactingBridge
from coder_agent.session.saver import Saver
from coder_agent.session.steering import SteeringInbox
from coder_agent.session.telemetry import Telemetry
from coder_agent.session.turn_context import SwitchMode

if TYPE_CHECKING:
    from coder_agent.lsp.pool import LanguageServers
    from coder_agent.mcp.hub import McpHub
    from coder_agent.mcp.types import McpPromptInfo
    from coder_agent.sandbox.command import CommandSandbox

log = logging.getLogger(__name__)


@dataclass(eq=False)
class SessionServices:
    """One open session's live parts."""

    bridge: RedactingBridge
    """The client, as everything in the agent talks to it (redacted, recorded for replay)."""
    tasks: TaskGroup
    """A long-lived task group for what the session runs in the background (saves, MCP connections)."""
    saver: Saver = field(default_factory=Saver)
    """Saves the session; the manager binds it to the store (a session without a store is never saved)."""
    files: FileMemory = field(default_factory=FileMemory)
    """What the model last saw of each file, to refuse edits of stale text."""
    steering: SteeringInbox = field(default_factory=SteeringInbox)
    """Messages the user sends while a model turn runs, waiting for its next model request."""
    mcp: McpHub | None = None
    """The session's MCP servers; None when the client gave none."""
    mcp_prompts: list[McpPromptInfo] = field(default_factory=list)
    """Their prompts, offered as slash commands."""
    sandbox: CommandSandbox | None = None
    """Where the session's commands run: inside these walls; None when they cannot be sandboxed."""
    lsp: LanguageServers | None = None
    """The project's language servers that check edits (started lazily); None when the config turns them off."""
    sandbox_problem: str | None = None
    """Why the session's commands are not sandboxed (None when they are)."""
    commands_shown: list[AvailableCommand] = field(default_factory=list)
    """The slash commands the client was last told of (the built-in ones, MCP prompts, commands and skills from
    files), to tell it again when they change."""
    notices: list[tuple[str, str]] = field(default_factory=list)
    """What to tell the user once the client knows the session (config problems, MCP servers that failed)."""
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    """What to close with the session (MCP servers)."""
    jobs: JobTable = field(init=False)
    """The session's background jobs (run in `tasks`)."""
    switch_mode: SwitchMode | None = None
    """Change the session's mode as `session/set_mode` does (telling the client, saving); the manager's."""
    hooks: Hooks | None = None
    """The commands run on the session's events (`[hooks]`); None when there are none."""
    telemetry: Telemetry | None = None
    """Where its turns are traced (OpenTelemetry, `[telemetry]`); None when telemetry is off."""

    def __post_init__(self) -> None:
        self.jobs = JobTable(self.tasks)

    async def aclose(self, session_id: str) -> None:
        """Close what the session holds: its jobs, then each closer once (a failing one logged)."""
        try:
            await self.jobs.aclose()
        except Exception:
            log.exception("session %s: ending its jobs failed", session_id)
        closers, self.closers = self.closers, []
        for close in closers:
            try:
                await close()
            except Exception:
                log.exception("session %s: closing a resource failed", session_id)
