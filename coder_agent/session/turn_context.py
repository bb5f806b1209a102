"""`TurnContext`: what one turn works with, fixed when it starts — handed to the turn, the tool executor and
each tool call's context instead of the whole session.

The references are fixed; some of what they lead to is live on purpose: the permission policy (a mode switch or
an "always" answer in the middle of a turn holds for the next call), the conversation the turn writes, and the
session's spending. The config is the one the turn started with (a `/model` switch takes effect from the next
turn). A child context (a sub-agent's) is the same shape with its own parts.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anyio.abc import TaskGroup

from coder_agent.checkpoints import Checkpoints
from coder_agent.config import Config
from coder_agent.permissions import Action, ModeName, PermissionPolicy, resolve
from coder_agent.session.conversation import Conversation, Spending, SystemPromptAddition
from coder_agent.session.delegation import Delegate
from coder_agent.session.file_memory import FileMemory
from coder_agent.session.jobs import JobTable
from coder_agent.session.redacting_bridge import RedactingBridge
from coder_agent.session.steering import SteeringInbox

if TYPE_CHECKING:
    from coder_agent.lsp.pool import LanguageServers
    from coder_agent.mcp.hub import McpHub
    from coder_agent.sandbox.command import CommandSandbox
    from coder_agent.session.hooks import Hooks
    from coder_agent.session.telemetry import Telemetry

Job = Callable[[], Coroutine[Any, Any, None]]
SwitchMode = Callable[[ModeName], Awaitable[None]]
"""Change the session's mode, telling the client and saving it (as `session/set_mode` does)."""


@dataclass(frozen=True, eq=False)
class TurnContext:
    """One turn's view of its session."""

    session_id: str
    cwd: Path
    roots: tuple[Path, ...]
    """Where tools may work without asking: cwd first, then the additional directories."""
    config: Config
    policy: PermissionPolicy
    bridge: RedactingBridge
    files: FileMemory
    checkpoints: Checkpoints
    conversation: Conversation
    spending: Spending
    system_prompt_addition: SystemPromptAddition | None
    """The session's own instructions, for the system prompt when it is built."""
    mcp: McpHub | None
    sandbox: CommandSandbox | None
    """The walls the session's commands run in (not in full-auto); None when they cannot be sandboxed."""
    jobs: JobTable
    """The session's background jobs."""
    lsp: LanguageServers | None
    """The project's language servers that check edits; None when there are none to ask."""
    tasks: TaskGroup
    """For what runs beside the turn (a usage report on its way)."""
    steering: SteeringInbox
    """Messages the user sends while the turn runs (the turn opens it, takes them, and closes it)."""
    auto_compact: bool
    """Compact the conversation when it nears the context window (off: only when it no longer fits)."""
    save_soon: Callable[[], None]
    """Ask for a save of the session, in the background."""
    after_response: Callable[[Job], None]
    """Run a job once the prompt's response is written (a turn's bill, its last save)."""
    unattended: bool = False
    """No one watches the run (`coder-agent run`): the model works on its own, as in an autonomous mode."""
    parent_id: str | None = None
    """For a sub-agent's context: the session it works for (`session_id` is then the sub-agent's own)."""
    switch_mode: SwitchMode | None = None
    """Change the session's mode (an approved plan goes on in the mode the user picked); None for a sub-agent."""
    hooks: Hooks | None = None
    """The commands run on the session's events (a tool call, the turn's end); None when there are none."""
    telemetry: Telemetry | None = None
    """Where the session's turns are traced (OpenTelemetry); None when telemetry is off."""
    instructions: str | None = None
    """A sub-agent's own system prompt, used instead of the session's (also after a compaction restarts it)."""
    delegate: Delegate | None = None
    """Runs `task` calls as sub-agents (set by the runner for a model turn); None where there are none to run (a
    sub-agent's own turn: sub-agents cannot start sub-agents)."""

    @property
    def additional_directories(self) -> tuple[Path, ...]:
        return self.roots[1:]

    @functools.cached_property
    def _kept_out(self) -> tuple[Path, ...]:
        """The paths the sandbox keeps out: the session's walls', or the same list from the config without walls."""
        from coder_agent.sandbox.walls import agent_paths, kept_out_paths

        if self.sandbox is not None:
            return self.sandbox.walls.denied
        return kept_out_paths(self.config.sandbox, agent_paths())

    def reading_refused(self, real: Path) -> str | None:
        """Why the agent must not read the file at `real` (resolved) on its own — AGENTS.md, a project's command or
        skill (`nofollow.read_confined`) — as a file tool would be refused: a path the sandbox keeps out (the
        session's walls', or the same list from the config where it has none), or one a `read:` deny rule names.
        None when it may."""
        for path in self._kept_out:
            if real.is_relative_to(path):
                return f"it leads to {path}, which is kept out of reach"
        verdict = self.policy.decide(Action("read", places=(resolve(real, self.roots),)))
        return f"reading it is {verdict.reason}" if verdict.decision == "deny" else None
