"""Forking a session: the stored form of a new session that starts from another's history, whole or up to one of
its messages (ACP `session/fork`, and the RFD session-fork-at-message: the message is included).

The cut follows the marks the conversation keeps (`session.conversation.Mark`): the history up to where the
message ends (a tool call it left without an answer is answered "not run"), the replay log up to its last chunk,
the marks up to it, and the undo checkpoints of the turns up to its own (the checkpoints of the turns after it are
left to the session forked from; a checkpoint covers a whole turn, so a fork in the middle of a turn keeps all of
that turn's). Everything is copied: the fork and its source never share a list or a dict, so prompting one leaves
the other as it was. A message the client was never shown, or one from before the conversation was last compacted
or cleared (its place in the history is gone), cannot be forked at: `ForkPointUnknown`.
The session's cost starts at nothing; the rest (mode, model, remembered permissions, its own instructions) goes with
the history. The blobs the checkpoints need are the caller's to copy (`Checkpoints.copy_blobs_from`).
"""

from __future__ import annotations

import copy
from typing import Any

from coder_agent.session.call_repair import answer_pending_calls
from coder_agent.session.conversation import Mark
from coder_agent.store import SessionRecord, utc_now

FORKED_RESULT = "Not run: the session was forked before this tool call ran."
FORK_TITLE = "{title} (fork)"


class ForkPointUnknown(ValueError):
    """The session cannot be forked at that message; the message says why."""


def fork_record(record: SessionRecord, session_id: str, message_id: str | None = None) -> SessionRecord:
    """The record of a new session `session_id` with `record`'s history, up to and including `message_id` if given."""
    messages = copy.deepcopy(record.messages)
    events = copy.deepcopy(record.events)
    marks = copy.deepcopy(record.marks)
    checkpoints = copy.deepcopy(record.checkpoints)
    context_tokens = record.context_tokens
    if message_id is not None:
        messages, events, marks, checkpoints = _cut(record, messages, events, marks, checkpoints, message_id)
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


def _turn(stored: Any) -> str | None:
    return stored[1] if isinstance(stored, list) and len(stored) == 2 and isinstance(stored[1], str) else None
