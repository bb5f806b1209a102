"""Keeping a conversation valid for the model: every tool call the model made gets an answer.

Providers refuse a history where an assistant's tool call has no tool message after it (strict
OpenAI-compatible servers answer HTTP 400). A turn that was cancelled, and a session whose agent was
killed mid-call, leave such calls; these helpers answer them and mark them failed in the replay log.
"""

from __future__ import annotations

from typing import Any

INTERRUPTED_RESULT = (
    "This tool call was interrupted (the agent stopped before it finished); it may or may not have taken effect."
)
OPEN_STATUSES = frozenset({"pending", "in_progress"})


def answer_pending_calls(messages: list[dict[str, Any]], result: str) -> int:
    """Insert `result` as the answer of every tool call without one, right after its turn; returns how many."""
    answered = {m.get("tool_call_id") for m in messages if m.get("role") == "tool"}
    added = 0
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        if message.get("role") != "assistant" or not message.get("tool_calls"):
            continue
        missing = [c["id"] for c in message["tool_calls"] if c.get("id") not in answered]
        while index < len(messages) and messages[index].get("role") == "tool":
            index += 1
        for call_id in missing:
            messages.insert(index, {"role": "tool", "tool_call_id": call_id, "content": result})
            answered.add(call_id)
            index += 1
            added += 1
    return added


def fail_open_calls(events: list[dict[str, Any]]) -> int:
    """Mark tool calls the replay log shows as still running as failed, saying why; returns how many."""
    failed = 0
    for event in events:
        if event.get("sessionUpdate") == "tool_call" and event.get("status", "pending") in OPEN_STATUSES:
            event["status"] = "failed"
            note = {"type": "content", "content": {"type": "text", "text": "Interrupted: the agent stopped."}}
            event["content"] = [*(event.get("content") or []), note]
            failed += 1
    return failed
