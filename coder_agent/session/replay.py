"""The replay log: what a client was shown, kept so `session/load` can redraw the conversation.

The log keeps the updates a client needs (user and agent messages, thoughts, tool calls with their final
status and content, plans, compactions), merged as they arrive: consecutive text chunks of one kind become
one chunk, every `tool_call_update` is folded into its `tool_call`, and a compaction is one
`compaction_update` entry with its last status and its whole summary (its `compaction_summary_chunk`s
appended). Terminals do not outlive their turn, so a terminal in a tool call is replaced by its output as
text (`replace_content`). Notices are live events and never enter the log.

A client that does not show compactions (`session.compaction`) is replayed a short agent message in place of
each entry (`replayed`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

COMPACTION, SUMMARY_CHUNK = "compaction_update", "compaction_summary_chunk"
REPLAYED = frozenset(
    {
        "user_message_chunk",
        "agent_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
        COMPACTION,
        SUMMARY_CHUNK,
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


def fail_open_compactions(events: list[dict[str, Any]]) -> int:
    """Mark compactions the log shows as still running (the agent stopped meanwhile) as failed; returns how many."""
    failed = 0
    for event in events:
        if event.get("sessionUpdate") == COMPACTION and event.get("status") == "in_progress":
            event.update(status="failed", error=INTERRUPTED_COMPACTION)
            event.pop("summary", None)
            failed += 1
    return failed


def replayed(events: list[dict[str, Any]], *, compaction: bool) -> Iterator[dict[str, Any]]:
    """The log as a client is replayed it: compaction entries as they are where the client shows them, otherwise
    a short agent message (a failed one says why; a cancelled one is left out)."""
    for event in events:
        if event.get("sessionUpdate") != COMPACTION or compaction:
            yield event
            continue
        status = event.get("status")
        if status == "completed":
            text = "\n\n_Context compacted: the earlier part of the conversation was summarised._\n\n"
        elif status == "failed":
            text = f"\n\n_Compacting the conversation failed: {event.get('error') or 'no reason given'}_\n\n"
        else:
            continue
        yield {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
