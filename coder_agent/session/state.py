"""`SessionState`: what a session is, as stored — where it works, its settings, its conversation, what the
client was shown, its undo history — and its stored form (`to_record`, `restore`).

This part of a session changes only through the methods here and those of the objects it holds (the
conversation, the permission policy, the undo checkpoints, the replay log), never by assignment from other
packages. The conversation's system prompt, fixed once built, is stored as the leading system message of the
record's messages.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coder_agent import secrets
from coder_agent.checkpoints import Checkpoints, TurnCheckpoint
from coder_agent.config import Config, ReasoningEffort
from coder_agent.model.base import Message
from coder_agent.permissions import DEFAULT_MODE, SANDBOXED_MODES, ModeName, PermissionPolicy, is_mode, restore_rules
from coder_agent.session.call_repair import INTERRUPTED_RESULT
from coder_agent.session.conversation import Conversation, Mark, Spending, SystemPromptAddition
from coder_agent.session.replay import ReplayLog
from coder_agent.store import SessionRecord, utc_now

log = logging.getLogger(__name__)

SYSTEM_ROLE = "system"
ENVIRONMENT_KEY = "environment"


@dataclass(eq=False)
class SessionState:
    """One session's saved state."""

    id: str
    cwd: Path
    additional_directories: list[Path]
    config: Config
    policy: PermissionPolicy
    """The mode and the allow/deny rules (the config's and those remembered in this session)."""
    checkpoints: Checkpoints
    """Snapshots of the files each turn changed, for /undo."""
    title: str | None = None
    created_at: str = field(default_factory=utc_now)
    conversation: Conversation = field(default_factory=Conversation)
    spending: Spending = field(default_factory=Spending)
    replay: ReplayLog = field(default_factory=ReplayLog)
    """What the client was shown (session/update objects, merged), replayed by session/load."""
    stored_mode: ModeName | None = None
    """The mode saved instead of the one in force (`coder-agent run --mode` holds for the run only: a session
    saved mid-run, then reopened after a crash, must not come back in the run's mode)."""
    stored_model: str | None = None
    """The model saved instead of the one in force (`coder-agent run --resume ID --model M`: M is for the run)."""
    mcp_servers: list[dict[str, Any]] = field(default_factory=list)
    """The MCP servers it was opened with (ACP's wire shape), stored so that a run continuing it starts them too;
    an entry whose value holds a model key is left out (keys never reach the store). Not restored: whoever
    reopens a session says which servers it has."""
    unattended: bool = False
    """No one watches this run (`coder-agent run`): the model is told to finish the task on its own, as in an
    autonomous mode. Not stored: it holds for the run."""
    system_prompt_addition: SystemPromptAddition | None = None
    """The session's own instructions, built into its system prompt (stored with it)."""
    auto_compact: bool = True
    """Compact near the context window (`compact_threshold`); off, only when the conversation no longer fits."""

    @property
    def roots(self) -> list[Path]:
        """The directories tools may work in without asking: cwd first."""
        return [self.cwd, *self.additional_directories]

    # ---- settings -------------------------------------------------------------------------------

    def set_title(self, title: str) -> None:
        self.title = title

    def set_mode(self, mode: ModeName) -> None:
        self.policy.mode = mode

    def set_sandboxed(self, sandboxed: bool) -> bool:
        """Whether the session's commands run inside a sandbox; without one, a mode that needs it falls back to
        the default mode (True when it did)."""
        self.policy.sandboxed = sandboxed
        if not sandboxed and self.policy.mode in SANDBOXED_MODES:
            self.policy.mode = DEFAULT_MODE
            return True
        return False

    def set_model(self, model: str) -> None:
        """Switch the model; a new model starts its own prompt cache, so the prompt is built afresh (it costs
        nothing more)."""
        self.config = self.config.model_copy(update={"model": model})
        self.conversation.restart_prompt()

    def set_auto_compact(self, on: bool) -> None:
        self.auto_compact = on

    def set_reasoning_effort(self, effort: ReasoningEffort | None) -> None:
        self.config = self.config.model_copy(update={"reasoning_effort": effort})

    def set_config(self, config: Config) -> None:
        """A config of this session's own (a run's model and request limit); checked by the caller."""
        self.config = config

    def run_unattended(self) -> None:
        """This run has no one watching (see `unattended`)."""
        self.unattended = True

    def restart_prompt(self) -> None:
        """Have the next turn build the system prompt anew (the environment it describes is not the one it was
        built in: a fork that works elsewhere)."""
        self.conversation.restart_prompt()

    def set_system_prompt_addition(self, addition: SystemPromptAddition | None) -> None:
        """Give the session its own instructions (None: none); a change rebuilds the system prompt at the next turn
        (a prompt already built said otherwise), the same one keeps it, so the prompt cache holds."""
        if addition == self.system_prompt_addition:
            return
        self.system_prompt_addition = addition
        self.conversation.restart_prompt()

    def store_instead(self, *, mode: ModeName | None, model: str | None) -> None:
        """Save this mode and model instead of those in force (None: save what is in force)."""
        self.stored_mode = mode
        self.stored_model = model

    def take_stored_mode(self) -> None:
        """Go back to the mode that was being saved (the end of a run whose mode was its own)."""
        if self.stored_mode is not None:
            self.policy.mode = self.stored_mode
        self.stored_mode = None

    def mark_message(self, message_id: str) -> None:
        """A message was shown: the conversation notes where it ends (a fork can start there)."""
        self.conversation.mark(message_id, self.checkpoints.current_turn)

    # ---- stored form ----------------------------------------------------------------------------

    def to_record(self) -> SessionRecord:
        """The session as stored; lists are copied so a save in a worker thread never sees them change. The
        messages are redacted here (the store is a boundary); the replay log holds only redacted updates."""
        policy = self.policy
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
            events=self.replay.copy(),
            cost=self.spending.cost,
            tokens=self.spending.stored(),
            context_tokens=self.conversation.context_tokens,
            allow_rules=[str(r) for r in policy.session_allow],
            deny_rules=[str(r) for r in policy.session_deny],
            checkpoints=[c.to_dict() for c in self.checkpoints.history],
            mcp_servers=[_without_keys(server) for server in self.mcp_servers],
            marks={key: mark.stored() for key, mark in self.conversation.marks.items()},
            system_prompt=_redacted(self.system_prompt_addition),
            auto_compact=self.auto_compact,
        )

    def conversation_record(self) -> list[Message]:
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
        system = messages.pop(0) if messages and messages[0].get("role") == SYSTEM_ROLE else None
        self.conversation = Conversation(messages, record.context_tokens, marks=_marks(record.marks, len(messages)))
        if system is not None:
            environment = system.get(ENVIRONMENT_KEY) or {}
            prompt = str(system.get("content") or "")
            if prompt:
                self.conversation.fix_prompt(prompt, {str(k): str(v) for k, v in environment.items()})
        self.spending = Spending.restored(record.cost, record.tokens)
        self.system_prompt_addition = SystemPromptAddition.from_dict(record.system_prompt)
        self.auto_compact = record.auto_compact
        self.replay.load(record.events)
        calls, compactions = self.replay.repair()
        if self.conversation.answer_pending(INTERRUPTED_RESULT) + calls:
            log.info("session %s: repaired tool calls interrupted when it was last saved", self.id)
        if compactions:
            log.info("session %s: a compaction was interrupted when it was last saved", self.id)
        self.config = self.config.model_copy(
            update={"reasoning_effort": record.reasoning_effort, **({"model": record.model} if record.model else {})}
        )
        if is_mode(record.mode):
            self.policy.mode = record.mode
        self.policy.restore_remembered(
            restore_rules(record.allow_rules, allow=True), restore_rules(record.deny_rules, allow=False)
        )
        if record.checkpoints:
            try:
                self.checkpoints.restore([TurnCheckpoint.from_dict(c) for c in record.checkpoints])
            except ValueError:
                log.warning("session %s: ignoring malformed undo checkpoints", self.id)


def _without_keys(server: dict[str, Any]) -> dict[str, Any]:
    """An MCP server as stored: its env and header entries whose value holds a model key left out."""
    kept = dict(server)
    for part in ("env", "headers"):
        if part in kept:
            kept[part] = [
                entry for entry in kept[part] if secrets.redact(str(entry.get("value", ""))) == entry.get("value")
            ]
    return kept


def _marks(stored: dict[str, list[Any]], length: int) -> dict[str, Mark]:
    """The stored marks that make sense for a history of `length` messages (others are left out)."""
    marks = {message_id: Mark.from_stored(value, length) for message_id, value in stored.items()}
    return {message_id: mark for message_id, mark in marks.items() if mark is not None}


def _redacted(addition: SystemPromptAddition | None) -> dict[str, Any] | None:
    if addition is None:
        return None
    return {**addition.to_dict(), "text": secrets.redact(addition.text)}
