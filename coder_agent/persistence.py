"""Sessions on disk: the replay log of what the client saw, and the session ↔ `SessionRecord` mapping.

The replay log keeps the updates a client needs to redraw a conversation (user and agent messages,
thoughts, tool calls with their final status and content, plans), merged as they arrive: consecutive
text chunks of one kind become one chunk, and every `tool_call_update` is folded into its `tool_call`.
Terminals do not outlive their turn, so a terminal in a tool call is replaced by its output as text.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio

from coder_agent import secrets
from coder_agent.session import Session
from coder_agent.store import SessionRecord, SessionStore, utc_now

log = logging.getLogger(__name__)

REPLAYED = frozenset(
    {"user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan"}
)
CHUNKS = frozenset({"user_message_chunk", "agent_message_chunk", "agent_thought_chunk"})


def record_update(events: list[dict[str, Any]], update: dict[str, Any]) -> None:
    """Add one sent update to a replay log, merged."""
    kind = update.get("sessionUpdate")
    if kind not in REPLAYED:
        return
    if kind in CHUNKS and events:
        last = events[-1]
        content, last_content = update.get("content", {}), last.get("content", {})
        if last.get("sessionUpdate") == kind and content.get("type") == "text" == last_content.get("type"):
            last["content"] = {**last_content, "text": last_content.get("text", "") + content.get("text", "")}
            return
    if kind == "tool_call_update":
        for event in reversed(events):
            if event.get("sessionUpdate") == "tool_call" and event.get("toolCallId") == update.get("toolCallId"):
                event.update({key: value for key, value in update.items() if key != "sessionUpdate"})
                return
        update = {**update, "sessionUpdate": "tool_call", "title": update.get("title") or "Tool call"}
    events.append(dict(update))


def replace_content(events: list[dict[str, Any]], tool_call_id: str, content: list[dict[str, Any]]) -> None:
    """What a tool call shows on replay (a terminal's output instead of the dead terminal)."""
    for event in reversed(events):
        if event.get("sessionUpdate") == "tool_call" and event.get("toolCallId") == tool_call_id:
            event["content"] = content
            return


def to_record(session: Session) -> SessionRecord:
    """The session as stored; lists are copied so a save in a worker thread never sees them change."""
    policy = session.permissions
    config = session.config
    return SessionRecord(
        session_id=session.id,
        cwd=str(session.cwd),
        additional_directories=[str(p) for p in session.additional_directories],
        title=session.title,
        created_at=session.created_at,
        updated_at=utc_now(),
        mode=policy.mode if policy else "default",
        model=config.model if config else None,
        reasoning_effort=config.reasoning_effort if config else None,
        messages=secrets.redact_data(list(session.conversation.messages)),
        events=secrets.redact_data([dict(e) for e in session.events]),
        cost=session.conversation.cost,
        context_tokens=session.conversation.context_tokens,
        allow_rules=[str(r) for r in policy.session_allow] if policy else [],
        deny_rules=[str(r) for r in policy.session_deny] if policy else [],
        checkpoints=[c.to_dict() for c in session.checkpoints.history] if session.checkpoints else [],
    )


def restore(session: Session, record: SessionRecord) -> None:
    """Put a stored conversation back into a freshly opened session (config and policy already set)."""
    from coder_agent.permissions import is_mode, restore_rules

    session.title = record.title
    session.created_at = record.created_at
    session.conversation.messages = list(record.messages)
    session.conversation.cost = record.cost
    session.conversation.context_tokens = record.context_tokens
    session.events = list(record.events)
    if session.config is not None:
        updates: dict[str, Any] = {"reasoning_effort": record.reasoning_effort}
        if record.model:
            updates["model"] = record.model
        session.config = session.config.model_copy(update=updates)
    policy = session.permissions
    if policy is not None:
        if is_mode(record.mode):
            policy.mode = record.mode
        policy.session_allow = restore_rules(record.allow_rules, allow=True)
        policy.session_deny = restore_rules(record.deny_rules, allow=False)
    if session.checkpoints is not None and record.checkpoints:
        from coder_agent.checkpoints import TurnCheckpoint

        try:
            session.checkpoints.history = [TurnCheckpoint.from_dict(c) for c in record.checkpoints]
        except ValueError:
            log.warning("session %s: ignoring malformed undo checkpoints", session.id)


class Saver:
    """Saves one session in the background, coalescing requests, so a turn never waits on the disk mid-stream.

    `soon()` asks for a save of the current state; saves run one at a time in a worker thread, and requests
    made during a save lead to one more save after it. `flush()` waits until what was asked is on disk. A
    failed save is logged, never fatal to the turn.
    """

    def __init__(self, session: Session, store: SessionStore) -> None:
        self.session = session
        self.store = store
        self._dirty = False
        self._running = False
        self._idle = anyio.Event()
        self._idle.set()

    def soon(self) -> None:
        self._dirty = True
        if self._running:
            return
        tasks = self.session.tasks
        if tasks is None:
            return  # no background: flush() saves
        self._running = True
        self._idle = anyio.Event()
        tasks.start_soon(self._run)

    async def flush(self) -> None:
        """Wait for a save of everything asked so far (saving now if nothing runs in the background)."""
        if self._running:
            await self._idle.wait()
        if self._dirty:
            await self._save_dirty()

    async def _run(self) -> None:
        try:
            with anyio.CancelScope(shield=True):
                while self._dirty:
                    await self._save_dirty()
        finally:
            self._running = False
            self._idle.set()

    async def _save_dirty(self) -> None:
        self._dirty = False
        record = to_record(self.session)
        try:
            await anyio.to_thread.run_sync(self.store.save, record)
        except Exception:
            log.exception("session %s: could not be saved", self.session.id)
