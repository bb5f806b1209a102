"""Session cursors (RFD "Session Cursors"): points of a session that methods take — `session/fork` and
`_session/rewind` — announced to the client with `cursor_update`.

A `Cursor` is an opaque id and an anchor (before or after a message or a tool call), and what the session was at
that point: how long the model's history was (`messages`), how long the replay log (`events`), and how many undo
checkpoints it had (`checkpoints`). Two are made for every prompt: one before its user message, one after its
turn. The conversation keeps them (`Conversation.cursors`), in the order they were made, and they go with the
history they point into: a compaction or `/clear` drops them, a cut drops those beyond it, an `/undo` lowers the
checkpoint counts beyond what is left. One more kind stands for the session as it was before the last rewind
(`stash`): going back to it undoes that rewind (see `session.rewind`).

`cursor_update`s enter the replay log like any update, whether or not the client shows them, so a later
`session/load` by a client that does replays them (those of cursors dropped since are left out).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any, Literal

Position = Literal["before", "after"]
CAPABILITIES = ("session/fork", "_session/rewind")
"""The methods that take a cursor (the stash only rewinds: it has no history to fork)."""
KIND = "cursor_update"


@dataclass(frozen=True)
class Cursor:
    """A point of the session (see the module doc)."""

    id: str
    position: Position
    message_id: str | None
    tool_call_id: str | None
    messages: int
    events: int
    checkpoints: int
    stash: bool = False
    """The session as it was before the last rewind (its state is `SessionState.stash`)."""

    @property
    def capabilities(self) -> list[str]:
        return ["_session/rewind"] if self.stash else list(CAPABILITIES)

    def update(self) -> dict[str, Any]:
        """Its `cursor_update`, as sent."""
        anchor: dict[str, Any] = {"position": self.position}
        if self.message_id is not None:
            anchor["messageId"] = self.message_id
        if self.tool_call_id is not None:
            anchor["toolCallId"] = self.tool_call_id
        return {"sessionUpdate": KIND, "cursorId": self.id, "anchor": anchor, "capabilities": self.capabilities}

    def stored(self) -> list[Any]:
        anchor = self.message_id if self.message_id is not None else self.tool_call_id
        kind = "m" if self.message_id is not None else "t"
        return [self.position, kind, anchor, self.messages, self.events, self.checkpoints, self.stash]

    @classmethod
    def from_stored(cls, cursor_id: str, value: Any) -> Cursor | None:
        """A stored cursor back, or None if it is malformed."""
        match value:
            case ["before" | "after" as position, "m" | "t" as kind, str() | None as anchor, *counts, bool() as stash]:
                if len(counts) != 3 or not all(_count(n) for n in counts):
                    return None
                message_id, tool_call_id = (anchor, None) if kind == "m" else (None, anchor)
                messages, events, checkpoints = counts
                return cls(cursor_id, position, message_id, tool_call_id, messages, events, checkpoints, stash)
        return None


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def new_cursor_id() -> str:
    return f"cur_{uuid.uuid4().hex}"


def restore_cursors(stored: dict[str, Any], messages: int) -> dict[str, Cursor]:
    """The stored cursors that make sense for a history of `messages` messages (others are left out)."""
    cursors = {key: Cursor.from_stored(key, value) for key, value in stored.items()}
    return {key: c for key, c in cursors.items() if c is not None and (c.stash or c.messages <= messages)}


def clamp(cursors: dict[str, Cursor], checkpoints: int) -> None:
    """Undo checkpoints were taken back (`/undo`): no cursor counts more than are left."""
    for key, cursor in cursors.items():
        if cursor.checkpoints > checkpoints:
            cursors[key] = replace(cursor, checkpoints=checkpoints)


def up_to(cursors: dict[str, Cursor], cursor_id: str) -> dict[str, Cursor]:
    """The cursors made before `cursor_id`, and it (the stash left out)."""
    kept: dict[str, Cursor] = {}
    for key, cursor in cursors.items():
        if not cursor.stash:
            kept[key] = cursor
        if key == cursor_id:
            break
    return kept


def after_last_shown(events: Iterable[dict[str, Any]]) -> tuple[str | None, str | None]:
    """The message id or tool call id of the last event shown (to anchor a cursor after it); (None, None) if none."""
    for event in reversed(list(events)):
        if event.get("sessionUpdate") == KIND or event.get("_sessionId") is not None:
            continue
        if isinstance(event.get("messageId"), str):
            return event["messageId"], None
        if isinstance(event.get("toolCallId"), str):
            return None, event["toolCallId"]
    return None, None
