"""A session: where it works, what it may do, what it remembers, and its turns — at most one running at a time.

A prompt that arrives while a turn runs waits for it (prompts are queued in arrival order, never
rejected): editors such as Zed send `session/cancel` and then the next prompt at once, and the new prompt
must not fail because the old turn is still winding down. `session/cancel` cancels the running turn and
every prompt queued before it; each of those prompts answers `cancelled`, exactly once.

A session is built whole by `agent.manager.SessionManager` (config, policy, checkpoints, client); it also
knows how to become a `SessionRecord` and to take one back, and it saves itself in the background
(`session.saver`) whenever a step asks it to. The conversation's system prompt, fixed once built, is
stored as the leading system message of the record's messages.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup

from coder_agent import secrets
from coder_agent.checkpoints import Checkpoints, TurnCheckpoint
from coder_agent.config import Config
from coder_agent.permissions import ModeName, PermissionPolicy, is_mode, restore_rules
from coder_agent.protocol.schema import StopReason
from coder_agent.session.bridge import ClientBridge
from coder_agent.session.call_repair import INTERRUPTED_RESULT, answer_pending_calls, fail_open_calls
from coder_agent.session.replay import fail_open_compactions
from coder_agent.session.saver import Saver
from coder_agent.store import SessionRecord, utc_now

if TYPE_CHECKING:
    from coder_agent.mcp.hub import McpHub
    from coder_agent.mcp.types import McpPromptInfo

log = logging.getLogger(__name__)

CLOSE_SAVE_TIMEOUT = 5.0


SYSTEM_ROLE = "system"
ENVIRONMENT_KEY = "environment"


@dataclass
class Conversation:
    """What the model has been told and answered so far (OpenAI-style messages, and the system prompt apart)."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    cost: float = 0.0
    """Money spent on this session's model calls, in USD, where the price is known."""
    context_tokens: int = 0
    """Tokens in the context after the last model call."""
    system: str | None = None
    """The system prompt, fixed for the conversation (None until its first turn builds it)."""
    environment: dict[str, str] = field(default_factory=dict)
    """The facts about the environment the model was last told (date, git state, AGENTS.md files, mode)."""
    calls: int = 0
    """Model calls counted so far (not stored): a usage report counts for the context only if it is the latest."""
    input_tokens: int = 0
    """Input tokens of the calls since the session opened (not stored), and those read from the prompt cache."""
    cached_tokens: int = 0

    def restart_prompt(self) -> None:
        """Have the next turn build the system prompt anew (after /compact or a model switch)."""
        self.system = None
        self.environment = {}


@dataclass(eq=False)
class Session:
    """One ACP session."""

    id: str
    cwd: Path
    additional_directories: list[Path]
    client: ClientBridge
    config: Config
    permissions: PermissionPolicy
    """The mode and the allow/deny rules."""
    checkpoints: Checkpoints
    """Snapshots of the files each turn changed, for /undo."""
    tasks: TaskGroup
    """A long-lived task group for what the session runs in the background (saves, MCP connections)."""
    saver: Saver = field(default_factory=Saver)
    """Saves the session; the manager binds it to the store (a session without a store is never saved)."""
    title: str | None = None
    created_at: str = field(default_factory=utc_now)
    conversation: Conversation = field(default_factory=Conversation)
    file_hashes: dict[str, str] = field(default_factory=dict)
    """Content hash of each file as the model last read or wrote it, to refuse edits of stale text."""
    events: list[dict[str, Any]] = field(default_factory=list)
    """What the client was shown (session/update objects, merged), replayed by session/load."""
    mcp_hub: McpHub | None = None
    """The session's MCP servers; None when the client gave none."""
    mcp_prompts: list[McpPromptInfo] = field(default_factory=list)
    """Their prompts, offered as slash commands."""
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    """What to close with the session (MCP servers)."""
    notices: list[tuple[str, str]] = field(default_factory=list)
    """What to tell the user once the client knows the session (config problems, MCP servers that failed)."""
    side_requests: set[anyio.CancelScope] = field(default_factory=set)
    """What MCP servers are asking of the user or the model right now; `cancel` cancels them with the turn."""
    _after_response: list[Callable[[], Coroutine[Any, Any, None]]] = field(default_factory=list)
    stored_mode: ModeName | None = None
    """The mode saved instead of the one in force (`coder-agent run --mode` holds for the run only: a session
    saved mid-run, then reopened after a crash, must not come back in the run's mode)."""
    stored_model: str | None = None
    """The model saved instead of the one in force (`coder-agent run --resume ID --model M`: M is for the run)."""
    _turn_lock: anyio.Lock = field(default_factory=anyio.Lock)
    _turn_scope: anyio.CancelScope | None = None
    _cancels: int = 0
    _closed: bool = False

    @property
    def roots(self) -> list[Path]:
        """The directories tools may work in without asking: cwd first."""
        return [self.cwd, *self.additional_directories]

    def save_soon(self) -> None:
        """Ask for a save of the session's current state, in the background."""
        self.saver.soon()

    async def flush(self) -> None:
        """Wait until the session's state is saved."""
        await self.saver.flush()

    def after_response(self, job: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run `job` in the background once the prompt's response is written (a turn's bill, its last save)."""
        self._after_response.append(job)

    def response_sent(self) -> None:
        """The prompt's response is out: start what waited for it."""
        jobs, self._after_response = self._after_response, []
        for job in jobs:
            self.tasks.start_soon(job)

    async def run_turn(self, turn: Callable[[], Awaitable[StopReason]]) -> StopReason:
        """Run one turn after any turn before it; `cancelled` if a cancel came first or during it."""
        self.response_sent()  # anything a response that was never written left behind
        cancels_at_arrival = self._cancels
        async with self._turn_lock:
            if self._closed or self._cancels != cancels_at_arrival:
                return "cancelled"
            scope = anyio.CancelScope()
            self._turn_scope = scope
            stop_reason: StopReason = "cancelled"
            try:
                with scope:
                    stop_reason = await turn()
            finally:
                self._turn_scope = None
            if scope.cancelled_caught or scope.cancel_called:
                return "cancelled"
            return stop_reason

    def cancel(self) -> None:
        """Cancel the running turn, the prompts queued behind it, and what MCP servers are asking meanwhile."""
        self._cancels += 1
        for scope in list(self.side_requests):
            scope.cancel()
        if self._turn_scope is not None:
            log.info("session %s: cancelling the running turn", self.id)
            self._turn_scope.cancel()

    async def aclose(self) -> None:
        """Cancel all work, save, and free what the session holds."""
        self._closed = True
        self.cancel()
        async with self._turn_lock:
            pass
        self.response_sent()
        with anyio.move_on_after(CLOSE_SAVE_TIMEOUT):
            await self.flush()
        closers, self.closers = self.closers, []
        for close in closers:
            try:
                await close()
            except Exception:
                log.exception("session %s: closing a resource failed", self.id)

    # ---- stored form --------------------------------------------------------------------------

    def to_record(self) -> SessionRecord:
        """The session as stored; lists are copied so a save in a worker thread never sees them change."""
        policy = self.permissions
        return SessionRecord(
            session_id=self.id,
            cwd=str(self.cwd),
            additional_directories=[str(p) for p in self.additional_directories],
            title=self.title,
            created_at=self.created_at,
            updated_at=utc_now(),
            mode=self.stored_mode or policy.mode,
            model=self.stored_model or self.config.model,
            reasoning_effort=self.config.reasoning_effort,
            messages=secrets.redact_data(self.conversation_record()),
            events=secrets.redact_data([dict(e) for e in self.events]),
            cost=self.conversation.cost,
            context_tokens=self.conversation.context_tokens,
            allow_rules=[str(r) for r in policy.session_allow],
            deny_rules=[str(r) for r in policy.session_deny],
            checkpoints=[c.to_dict() for c in self.checkpoints.history],
        )

    def conversation_record(self) -> list[dict[str, Any]]:
        """The stored messages: the system prompt first (with what the model knows of the environment), if built."""
        conversation = self.conversation
        if conversation.system is None:
            return list(conversation.messages)
        system = {"role": SYSTEM_ROLE, "content": conversation.system, ENVIRONMENT_KEY: dict(conversation.environment)}
        return [system, *conversation.messages]

    def restore(self, record: SessionRecord) -> None:
        """Take back a stored conversation and its settings (into a freshly opened session).

        A session saved mid-call (its agent was killed) comes back valid: the interrupted calls get a
        result saying so, and are replayed as failed. The system prompt comes back as it was stored (the
        leading system message), so the reopened conversation starts with the same bytes as before.
        """
        self.title = record.title
        self.created_at = record.created_at
        messages = list(record.messages)
        self.conversation = Conversation(messages, record.cost, record.context_tokens)
        if messages and messages[0].get("role") == SYSTEM_ROLE:
            stored = messages.pop(0)
            environment = stored.get(ENVIRONMENT_KEY)
            self.conversation.system = str(stored.get("content") or "") or None
            self.conversation.environment = {str(k): str(v) for k, v in (environment or {}).items()}
        self.events = list(record.events)
        if answer_pending_calls(self.conversation.messages, INTERRUPTED_RESULT) + fail_open_calls(self.events):
            log.info("session %s: repaired tool calls interrupted when it was last saved", self.id)
        if fail_open_compactions(self.events):
            log.info("session %s: a compaction was interrupted when it was last saved", self.id)
        updates: dict[str, Any] = {"reasoning_effort": record.reasoning_effort}
        if record.model:
            updates["model"] = record.model
        self.config = self.config.model_copy(update=updates)
        policy = self.permissions
        if is_mode(record.mode):
            policy.mode = record.mode
        policy.session_allow = restore_rules(record.allow_rules, allow=True)
        policy.session_deny = restore_rules(record.deny_rules, allow=False)
        if record.checkpoints:
            try:
                self.checkpoints.history = [TurnCheckpoint.from_dict(c) for c in record.checkpoints]
            except ValueError:
                log.warning("session %s: ignoring malformed undo checkpoints", self.id)
