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
from coder_agent.session.cursors import Cursor, Position, new_cursor_id, restore_cursors, up_to
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
    auto_continue: bool | None = None
    """Start a turn when a background job ends while none runs (None: the config's `[wake] auto_continue`)."""
    stash: Stash | None = None
    """The session as it was before its last rewind (the stash cursor goes back to it)."""

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

    def set_auto_continue(self, on: bool) -> None:
        self.auto_continue = on

    @property
    def continues_alone(self) -> bool:
        return self.config.wake.auto_continue if self.auto_continue is None else self.auto_continue

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

    # ---- cursors and rewinds ---------------------------------------------------------------------

    def cursor_here(
        self,
        position: Position,
        message_id: str | None,
        tool_call_id: str | None = None,
        *,
        stash: bool = False,
        checkpoints: int | None = None,
    ) -> Cursor:
        """A new cursor at the session's present point, anchored as given, kept by the conversation; `stash`: the
        one that undoes the rewind just made (replacing the one before), whose files are those before the
        checkpoint `checkpoints`."""
        if stash:
            for key in [k for k, c in self.conversation.cursors.items() if c.stash]:
                del self.conversation.cursors[key]
        cursor = Cursor(
            new_cursor_id(),
            position,
            message_id,
            tool_call_id,
            messages=len(self.conversation.messages),
            events=len(self.replay.events),
            checkpoints=len(self.checkpoints.history) if checkpoints is None else checkpoints,
            stash=stash,
        )
        self.conversation.add_cursor(cursor)
        return cursor

    def checkpoints_undone(self) -> None:
        """`/undo` took the newest checkpoint back: no cursor counts it any more."""
        self.conversation.checkpoints_left(len(self.checkpoints.history))

    def stash_present(self) -> Stash:
        """The session as it is now, kept for undoing the rewind about to happen (its checkpoints' blobs are the
        caller's to keep)."""
        conversation = self.conversation
        self.stash = Stash(
            messages=[dict(m) for m in conversation.messages],
            events=self.replay.copy(),
            marks=dict(conversation.marks),
            cursors={k: c for k, c in conversation.cursors.items() if not c.stash},
            checkpoints=list(self.checkpoints.history),
        )
        return self.stash

    def go_back_to(self, cursor: Cursor, previous: Stash | None) -> int:
        """Cut the conversation and the replay log at `cursor` (or, for the stash cursor, take back `previous`,
        the session before the last rewind); the number of history messages dropped."""
        conversation = self.conversation
        before = len(conversation.messages)
        if cursor.stash:
            if previous is None:
                return 0
            conversation.take_back(previous.messages, previous.marks, previous.cursors)
            self.replay.load(previous.events)
        else:
            end = min(cursor.messages, before)
            marks = {key: mark for key, mark in conversation.marks.items() if mark.end <= end}
            conversation.take_back(conversation.messages[:end], marks, up_to(conversation.cursors, cursor.id))
            self.replay.cut(cursor.events)
        return max(before - len(conversation.messages), 0)

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
            mcp_servers=[secrets.without_secret_entries(server) for server in self.mcp_servers],
            marks={key: mark.stored() for key, mark in self.conversation.marks.items()},
            system_prompt=_redacted(self.system_prompt_addition),
            auto_compact=self.auto_compact,
            cursors={key: cursor.stored() for key, cursor in self.conversation.cursors.items()},
            stash=self.stash.stored() if self.stash is not None else None,
            auto_continue=self.auto_continue,
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
        self.conversation = Conversation(
            messages,
            record.context_tokens,
            marks=_marks(record.marks, len(messages)),
            cursors=restore_cursors(record.cursors, len(messages)),
        )
        if system is not None:
            environment = system.get(ENVIRONMENT_KEY) or {}
            prompt = str(system.get("content") or "")
            if prompt:
                self.conversation.fix_prompt(prompt, {str(k): str(v) for k, v in environment.items()})
        self.spending = Spending.restored(record.cost, record.tokens)
        self.system_prompt_addition = SystemPromptAddition.from_dict(record.system_prompt)
        self.auto_compact = record.auto_compact
        self.auto_continue = record.auto_continue
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
        self.stash = Stash.from_stored(record.stash)
        if self.stash is not None:
            self.checkpoints.kept = list(self.stash.checkpoints)


@dataclass
class Stash:
    """A session as it was before a rewind: its history, replay log, marks, cursors and undo checkpoints."""

    messages: list[Message]
    events: list[dict[str, Any]]
    marks: dict[str, Mark]
    cursors: dict[str, Cursor]
    checkpoints: list[TurnCheckpoint]

    def stored(self) -> dict[str, Any]:
        return {
            "messages": secrets.redact_data(self.messages),
            "events": [dict(event) for event in self.events],
            "marks": {key: mark.stored() for key, mark in self.marks.items()},
            "cursors": {key: cursor.stored() for key, cursor in self.cursors.items()},
            "checkpoints": [c.to_dict() for c in self.checkpoints],
        }

    @classmethod
    def from_stored(cls, data: Any) -> Stash | None:
        """The stored form back; None for none or a malformed one (a rewind that cannot be undone any more)."""
        if not isinstance(data, dict):
            return None
        try:
            messages, events = list(data["messages"]), list(data["events"])
            return cls(
                messages=messages,
                events=[dict(event) for event in events],
                marks=_marks(dict(data["marks"]), len(messages)),
                cursors=restore_cursors(dict(data["cursors"]), len(messages)),
                checkpoints=[TurnCheckpoint.from_dict(c) for c in data["checkpoints"]],
            )
        except (KeyError, TypeError, ValueError):
            log.warning("ignoring a malformed stored rewind")
            return None


def _marks(stored: dict[str, list[Any]], length: int) -> dict[str, Mark]:
    """The stored marks that make sense for a history of `length` messages (others are left out)."""
    marks = {message_id: Mark.from_stored(value, length) for message_id, value in stored.items()}
    return {message_id: mark for message_id, mark in marks.items() if mark is not None}


def _redacted(addition: SystemPromptAddition | None) -> dict[str, Any] | None:
    if addition is None:
        return None
    return {**addition.to_dict(), "text": secrets.redact(addition.text)}
