"""The replay log: what a client was shown, kept so `session/load` can redraw the conversation.

The log keeps the updates a client needs (user and agent messages, thoughts, tool calls with their final
status and content, plans), merged as they arrive: consecutive text chunks of one kind become one chunk,
and every `tool_call_update` is folded into its `tool_call`. Terminals do not outlive their turn, so a
terminal in a tool call is replaced by its output as text (`replace_content`).
"""

from __future__ import annotations

from typing import Any

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
