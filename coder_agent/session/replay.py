"""The replay log: what a client was shown, kept so `session/load` can redraw the conversation.

The log keeps the updates a client needs (user and agent messages, thoughts, tool calls with their final
status and content, plans, compactions), merged as they arrive: consecutive text chunks of one message (one
kind, one `messageId`) become one chunk, so a replayed message has the id it had live; every
`tool_call_update` is folded into its `tool_call`, and a compaction is one
`compaction_update` entry with its last status and its whole summary (its `compaction_summary_chunk`s
appended). Terminals do not outlive their turn, so a tool call whose terminal is gone is recorded once more
with its output as text (an update recorded but not shown). Notices are live events and never enter the log.
Only what a client was shown is recorded, after redaction: `session.redacting_bridge` feeds the log.

A client that does not show compactions (`session.compaction`) is replayed a short agent message in place of
each entry (`replayed`), whose `messageId` is the compaction's id. A log stored before chunks carried ids gets
them when it is loaded (one per merged chunk), so every replayed chunk names its message.

Cursors (`session.cursors`) are recorded as their `cursor_update`s, whether or not the client shows them; a replay
gives a client that shows them those of the cursors the session still has, and others none. A rewind cuts the log
(`cut`) where its cursor stands.

Sub-agent sessions (RFD "Subagent Sessions") share their parent's log: their `subagent_update`s are the parent's
own events, and each update of a sub-agent's session is recorded with its session id under `SESSION_KEY`
(`for_child`), merged only with its own. They are replayed, with their session ids, to clients that show sub-agent
sessions (in the RFD's shape and the SDK's: `SubagentUpdate`), others see the parent's `task` calls, which summarise
them. A sub-agent announced but never ended (the agent stopped meanwhile) is ended as `disconnected` when the log is
repaired, after all of its own events.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from typing import Any

from coder_agent.protocol.schema import SubagentUpdate, new_message_id
from coder_agent.session.call_repair import fail_open_calls

COMPACTION, SUMMARY_CHUNK = "compaction_update", "compaction_summary_chunk"
SUBAGENT = "subagent_update"
CURSOR = "cursor_update"
SESSION_KEY = "_sessionId"
"""On an event of a sub-agent's session: its session id (the parent's own events carry none)."""
TERMINAL_STATES = frozenset({"completed", "failed", "cancelled", "disconnected"})
REPLAYED = frozenset(
    {
        SUBAGENT,
        "user_message_chunk",
        "agent_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
        COMPACTION,
        SUMMARY_CHUNK,
        CURSOR,
    }
)
CHUNKS = frozenset({"user_message_chunk", "agent_message_chunk", "agent_thought_chunk"})
INTERRUPTED_COMPACTION = "Interrupted: the agent stopped before the summary was finished."


def record_update(events: list[dict[str, Any]], update: dict[str, Any]) -> None:
    """Add one sent update to a replay log, merged."""
    kind = update.get("sessionUpdate")
    if kind not in REPLAYED:
        return
    if kind in (COMPACTION, SUMMARY_CHUNK):
        _record_compaction(events, update)
        return
    if kind in CHUNKS and events:
        last = events[-1]
        content, last_content = update.get("content", {}), last.get("content", {})
        same_message = last.get("sessionUpdate") == kind and last.get("messageId") == update.get("messageId")
        same_session = last.get(SESSION_KEY) == update.get(SESSION_KEY)
        if same_message and same_session and content.get("type") == "text" == last_content.get("type"):
            last["content"] = {**last_content, "text": last_content.get("text", "") + content.get("text", "")}
            return
    if kind == "tool_call_update":
        for event in reversed(events):
            if event.get("sessionUpdate") == "tool_call" and event.get("toolCallId") == update.get("toolCallId"):
                event.update({key: value for key, value in update.items() if key != "sessionUpdate"})
                return
        update = {**update, "sessionUpdate": "tool_call", "title": update.get("title") or "Tool call"}
    events.append(dict(update))


def _record_compaction(events: list[dict[str, Any]], update: dict[str, Any]) -> None:
    key = update.get("compactionId")
    entries = (e for e in reversed(events) if e.get("sessionUpdate") == COMPACTION)
    entry = next((e for e in entries if e.get("compactionId") == key), None)
    if entry is None:
        entry = {"sessionUpdate": COMPACTION, "compactionId": key, "status": "in_progress"}
        events.append(entry)
    if update.get("sessionUpdate") == SUMMARY_CHUNK:
        summary = entry.setdefault("summary", [])
        content = dict(update.get("content", {}))
        last = summary[-1] if summary else None
        if last is not None and last.get("type") == "text" == content.get("type"):
            summary[-1] = {**last, "text": last.get("text", "") + content.get("text", "")}
        else:
            summary.append(content)
        return
    for key in ("status", "summary", "error"):  # patch semantics: absent keeps, null or [] clears
        if key not in update:
            continue
        if update[key] in (None, []):
            entry.pop(key, None)
        else:
            entry[key] = update[key]


def end_orphans(events: list[dict[str, Any]]) -> int:
    """End every sub-agent announced and never ended (the agent stopped meanwhile) as `disconnected`, after all of its
    events; returns how many. The ends are kept, so every later load replays the same."""
    announced: dict[str, bool] = {}
    for event in events:
        if event.get("sessionUpdate") == SUBAGENT:
            child = str(event.get("subagentSessionId"))
            ended = announced.get(child, False) or event.get("state") in TERMINAL_STATES
            announced[child] = ended
    orphans = [child for child, ended in announced.items() if not ended]
    events.extend(SubagentUpdate(subagent_session_id=child, state="disconnected").wire() for child in orphans)
    return len(orphans)


def fail_open_compactions(events: list[dict[str, Any]]) -> int:
    """Mark compactions the log shows as still running (the agent stopped meanwhile) as failed; returns how many."""
    failed = 0
    for event in events:
        if event.get("sessionUpdate") == COMPACTION and event.get("status") == "in_progress":
            event.update(status="failed", error=INTERRUPTED_COMPACTION)
            event.pop("summary", None)
            failed += 1
    return failed


def replayed(
    events: list[dict[str, Any]],
    *,
    compaction: bool,
    subagents: bool = False,
    cursors: Collection[str] | None = None,
) -> Iterator[tuple[str | None, dict[str, Any]]]:
    """The log as a client is replayed it, each event with the sub-agent session it belongs to (None: the session's
    own): compaction entries as they are where the client shows them, otherwise a short agent message (a failed one
    says why; a cancelled one is left out); sub-agent sessions only where the client shows them; the `cursor_update`s
    of `cursors` (the ids the session still has; None: the client shows no cursors)."""
    for event in events:
        if event.get("sessionUpdate") == CURSOR:
            if cursors is not None and event.get("cursorId") in cursors:
                yield None, event
            continue
        child = event.get(SESSION_KEY)
        if event.get("sessionUpdate") == SUBAGENT:
            if subagents:  # in both shapes, a log stored with the RFD's alone too
                yield child, SubagentUpdate.model_validate(event).wire()
            continue
        if child is not None:
            if subagents:
                yield child, {key: value for key, value in event.items() if key != SESSION_KEY}
            continue
        if event.get("sessionUpdate") != COMPACTION or compaction:
            yield None, event
            continue
        status = event.get("status")
        if status == "completed":
            text = "\n\n_Context compacted: the earlier part of the conversation was summarised._\n\n"
        elif status == "failed":
            text = f"\n\n_Compacting the conversation failed: {event.get('error') or 'no reason given'}_\n\n"
        else:
            continue
        message_id = str(event.get("compactionId") or new_message_id())
        yield (
            None,
            {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": text},
                "messageId": message_id,
            },
        )


@dataclass
class ReplayLog:
    """One session's log (as stored: `events`)."""

    events: list[dict[str, Any]] = field(default_factory=list)

    def record(self, update: dict[str, Any]) -> None:
        record_update(self.events, update)

    def load(self, events: list[dict[str, Any]]) -> None:
        """Take back a stored log (in place: the session's bridge records into this same log); chunks stored
        without a `messageId` (by an older version) get one each."""
        self.events[:] = [dict(event) for event in events]
        for event in self.events:
            if event.get("sessionUpdate") in CHUNKS and not isinstance(event.get("messageId"), str):
                event["messageId"] = new_message_id()

    def last_event_of(self, message_id: str) -> int | None:
        """The index of the last event of the message `message_id`, or None if the log has none."""
        for index in range(len(self.events) - 1, -1, -1):
            if self.events[index].get("messageId") == message_id:
                return index
        return None

    def replayed(
        self, *, compaction: bool, subagents: bool = False, cursors: Collection[str] | None = None
    ) -> Iterator[tuple[str | None, dict[str, Any]]]:
        return replayed(self.events, compaction=compaction, subagents=subagents, cursors=cursors)

    def cut(self, length: int) -> None:
        """Drop the events from `length` on (a rewind)."""
        del self.events[length:]

    def for_child(self, child_id: str) -> ChildLog:
        """Where a sub-agent's session records what it shows: this log, each event marked with its session id."""
        return ChildLog(self, child_id)

    def repair(self) -> tuple[int, int]:
        """After the agent stopped mid-call: (tool calls, compactions) still shown running, now failed; sub-agents
        still running, now disconnected."""
        calls, compactions = fail_open_calls(self.events), fail_open_compactions(self.events)
        return calls + end_orphans(self.events), compactions

    def copy(self) -> list[dict[str, Any]]:
        """The events as a save writes them (copied, so a save in a worker thread never sees them change)."""
        return [dict(event) for event in self.events]


@dataclass
class ChildLog:
    """A sub-agent session's view of its parent's log (see `ReplayLog.for_child`)."""

    log: ReplayLog
    child_id: str

    def record(self, update: dict[str, Any]) -> None:
        self.log.record({**update, SESSION_KEY: self.child_id})
