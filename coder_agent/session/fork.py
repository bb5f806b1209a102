"""Forking a session: the stored form of a new session that starts from another's history, whole or up to one of
its messages (ACP `session/fork`, and the RFD session-fork-at-message: the message is included).

The cut follows the marks the conversation keeps (`session.conversation.Mark`): the history up to where the
message ends (a tool call it left without an answer is answered "not run"), the replay log up to its last chunk,
the marks up to it, and the undo checkpoints of the turns up to its own (the checkpoints of the turns after it are
left to the session forked from; a checkpoint covers a whole turn, so a fork in the middle of a turn keeps all of
that turn's). Everything is copied: the fork and its source never share a list or a dict, so prompting one leaves
the other as it was. A message the client was never shown, or one from before the conversation was last compacted
or cleared (its place in the history is gone), cannot be forked at: `ForkPointUnknown`.
A fork at a cursor (RFD "Session Cursors": `cursorId`, whose capabilities name `session/fork`) holds what the session
had at that point (the history, the log, the marks and cursors, the undo checkpoints): before a user message, it
ends with the turn before it, ready for an edited one.
The session's cost starts at nothing; the rest (mode, model, remembered permissions, its own instructions) goes with
the history. The blobs the checkpoints need are the caller's to copy (`Checkpoints.copy_blobs_from`).
"""

from __future__ import annotations

import copy
from typing import Any

from coder_agent.session.call_repair import answer_pending_calls
from coder_agent.session.conversation import Mark
from coder_agent.session.cursors import Cursor, up_to
from coder_agent.store import SessionRecord, utc_now

FORKED_RESULT = "Not run: the session was forked before this tool call ran."
FORK_TITLE = "{title} (fork)"


class ForkPointUnknown(ValueError):
    """The session cannot be forked at that message; the message says why."""


def fork_record(
    record: SessionRecord, session_id: str, message_id: str | None = None, cursor_id: str | None = None
) -> SessionRecord:
    """The record of a new session `session_id` with `record`'s history, up to and including `message_id` if given,
    or up to the cursor `cursor_id`."""
    messages = copy.deepcopy(record.messages)
    events = copy.deepcopy(record.events)
    marks = copy.deepcopy(record.marks)
    checkpoints = copy.deepcopy(record.checkpoints)
    cursors = copy.deepcopy(record.cursors)
    context_tokens = record.context_tokens
    if cursor_id is not None:
        messages, events, marks, checkpoints, cursors = _at_cursor(
            record, messages, events, marks, checkpoints, cursor_id
        )
        context_tokens = 0
    elif message_id is not None:
        messages, events, marks, checkpoints = _cut(record, messages, events, marks, checkpoints, message_id)
        cursors = {key: value for key, value in cursors.items() if _within(key, value, len(events))}
        context_tokens = 0  # measured again by the fork's first call
    system = messages[:1] if messages and messages[0].get("role") == "system" else []
    history = messages[len(system) :]
    answer_pending_calls(history, FORKED_RESULT)
    now = utc_now()
    return record.model_copy(
        update={
            "session_id": session_id,
            "title": FORK_TITLE.format(title=record.title) if record.title else None,
            "created_at": now,
            "updated_at": now,
            "messages": [*system, *history],
            "events": events,
            "marks": marks,
            "cursors": cursors,
            "stash": None,
            "checkpoints": checkpoints,
            "cost": 0.0,
            "context_tokens": context_tokens,
            "allow_rules": list(record.allow_rules),
            "deny_rules": list(record.deny_rules),
            "additional_directories": list(record.additional_directories),
            "system_prompt": copy.deepcopy(record.system_prompt),
        }
    )


def _cut(
    record: SessionRecord,
    messages: list[dict[str, Any]],
    events: list[dict[str, Any]],
    marks: dict[str, list[Any]],
    checkpoints: list[dict[str, Any]],
    message_id: str,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, list[Any]], list[dict[str, Any]]]:
    last_event = next((i for i in range(len(events) - 1, -1, -1) if events[i].get("messageId") == message_id), None)
    if last_event is None:
        raise ForkPointUnknown(f"session {record.session_id} has no message {message_id!r}")
    system = 1 if messages and messages[0].get("role") == "system" else 0
    mark = Mark.from_stored(marks.get(message_id), len(messages) - system)
    if mark is None:
        raise ForkPointUnknown(
            f"message {message_id!r} is from before the conversation was last compacted or cleared (or saved by an "
            "older coder-agent), so its place in the history is gone; fork at a later message, or the whole session"
        )
    order = list(marks)
    after = order[order.index(message_id) + 1 :]
    kept_marks = {key: marks[key] for key in order[: order.index(message_id) + 1]}
    later_turns = {_turn(marks[key]) for key in after} - {mark.turn, None}
    kept_checkpoints = [c for c in checkpoints if c.get("turn_id") not in later_turns]
    return messages[: system + mark.end], events[: last_event + 1], kept_marks, kept_checkpoints


def _at_cursor(
    record: SessionRecord,
    messages: list[dict[str, Any]],
    events: list[dict[str, Any]],
    marks: dict[str, list[Any]],
    checkpoints: list[dict[str, Any]],
    cursor_id: str,
) -> tuple[
    list[dict[str, Any]], list[dict[str, Any]], dict[str, list[Any]], list[dict[str, Any]], dict[str, list[Any]]
]:
    system = 1 if messages and messages[0].get("role") == "system" else 0
    cursor = Cursor.from_stored(cursor_id, record.cursors.get(cursor_id))
    if cursor is None or cursor.stash or cursor.messages > len(messages) - system:
        raise ForkPointUnknown(
            f"session {record.session_id} has no cursor {cursor_id!r} to fork at (rewound past, compacted or cleared "
            "since, or never announced)"
        )
    stored = {key: c for key, value in record.cursors.items() if (c := Cursor.from_stored(key, value)) is not None}
    kept = {key: record.cursors[key] for key in up_to(stored, cursor_id)}
    kept_marks = {key: mark for key, mark in marks.items() if _end(mark) <= cursor.messages}
    return (
        messages[: system + cursor.messages],
        events[: cursor.events],
        kept_marks,
        checkpoints[: cursor.checkpoints],
        kept,
    )


def _within(cursor_id: str, value: Any, events: int) -> bool:
    cursor = Cursor.from_stored(cursor_id, value)
    return cursor is not None and not cursor.stash and cursor.events <= events


def _end(stored: Any) -> int:
    return stored[0] if isinstance(stored, list) and stored and isinstance(stored[0], int) else 1 << 62


def _turn(stored: Any) -> str | None:
    return stored[1] if isinstance(stored, list) and len(stored) == 2 and isinstance(stored[1], str) else None
