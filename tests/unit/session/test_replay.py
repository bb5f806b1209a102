"""The replay log: compactions folded into one entry, interrupted ones failed, notices never kept, and what a
client that does not show compactions is replayed instead."""

from __future__ import annotations

from typing import Any

from coder_agent.session.replay import ReplayLog, fail_open_compactions, record_update, replayed


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def test_a_compaction_is_one_entry_with_its_last_status_and_whole_summary() -> None:
    events: list[dict[str, Any]] = []
    record_update(events, {"sessionUpdate": "compaction_update", "compactionId": "c1", "status": "in_progress"})
    for piece in ("The user ", "wants ", "tests."):
        record_update(
            events, {"sessionUpdate": "compaction_summary_chunk", "compactionId": "c1", "content": text(piece)}
        )
    assert events == [
        {
            "sessionUpdate": "compaction_update",
            "compactionId": "c1",
            "status": "in_progress",
            "summary": [text("The user wants tests.")],
        }
    ]
    record_update(
        events,
        {
            "sessionUpdate": "compaction_update",
            "compactionId": "c1",
            "status": "completed",
            "summary": [text("Final.")],
        },
    )
    assert events[0]["status"] == "completed" and events[0]["summary"] == [text("Final.")]
    record_update(events, {"sessionUpdate": "compaction_update", "compactionId": "c2", "status": "in_progress"})
    record_update(events, {"sessionUpdate": "compaction_summary_chunk", "compactionId": "c2", "content": text("part")})
    record_update(
        events,
        {
            "sessionUpdate": "compaction_update",
            "compactionId": "c2",
            "status": "failed",
            "summary": [],
            "error": "down",
        },
    )
    assert events[1] == {
        "sessionUpdate": "compaction_update",
        "compactionId": "c2",
        "status": "failed",
        "error": "down",
    }


def test_notices_never_enter_the_log() -> None:
    events: list[dict[str, Any]] = []
    record_update(events, {"sessionUpdate": "notice", "severity": "warning", "title": "Retrying"})
    assert events == []


def test_an_interrupted_compaction_is_replayed_as_failed() -> None:
    events = [
        {"sessionUpdate": "compaction_update", "compactionId": "c1", "status": "in_progress", "summary": [text("half")]}
    ]
    assert fail_open_compactions(events) == 1
    assert events[0]["status"] == "failed" and "summary" not in events[0] and "Interrupted" in events[0]["error"]


def test_clients_without_compaction_get_a_message_in_its_place() -> None:
    events = [
        {"sessionUpdate": "user_message_chunk", "content": text("hi")},
        {"sessionUpdate": "compaction_update", "compactionId": "c1", "status": "completed", "summary": [text("s")]},
        {"sessionUpdate": "compaction_update", "compactionId": "c2", "status": "failed", "error": "down"},
        {"sessionUpdate": "compaction_update", "compactionId": "c3", "status": "cancelled"},
    ]
    assert [event for _, event in replayed(events, compaction=True)] == events
    plain = [event for _, event in replayed(events, compaction=False)]
    assert [e["sessionUpdate"] for e in plain] == ["user_message_chunk", "agent_message_chunk", "agent_message_chunk"]
    assert "Context compacted" in plain[1]["content"]["text"] and "down" in plain[2]["content"]["text"]


def test_chunks_merge_within_a_message_only() -> None:
    events: list[dict[str, Any]] = []
    for message_id, piece in (("m1", "Hello "), ("m1", "there."), ("m2", "Stopped.")):
        record_update(events, {"sessionUpdate": "agent_message_chunk", "content": text(piece), "messageId": message_id})
    assert [(e["messageId"], e["content"]["text"]) for e in events] == [("m1", "Hello there."), ("m2", "Stopped.")]


def test_a_compaction_replayed_as_a_message_has_a_stable_id() -> None:
    events = [{"sessionUpdate": "compaction_update", "compactionId": "c1", "status": "completed"}]
    first, again = list(replayed(events, compaction=False)), list(replayed(events, compaction=False))
    assert first[0][1]["messageId"] == again[0][1]["messageId"] == "c1"


def test_a_sub_agents_session_is_recorded_apart_and_replayed_to_clients_that_show_it() -> None:
    log = ReplayLog()
    log.record({"sessionUpdate": "agent_message_chunk", "content": text("Let me ")})
    log.record({"sessionUpdate": "subagent_update", "subagentSessionId": "child", "name": "explore-1"})
    child = log.for_child("child")
    child.record({"sessionUpdate": "agent_message_chunk", "content": text("child ")})
    log.record({"sessionUpdate": "agent_message_chunk", "content": text("look.")})
    child.record({"sessionUpdate": "agent_message_chunk", "content": text("text")})
    child.record({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Read a.py", "status": "pending"})
    child.record({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed"})
    log.record({"sessionUpdate": "subagent_update", "subagentSessionId": "child", "state": "completed"})
    shown = list(log.replayed(compaction=True, subagents=True))
    assert [(session, event["sessionUpdate"]) for session, event in shown] == [
        (None, "agent_message_chunk"),
        (None, "subagent_update"),
        ("child", "agent_message_chunk"),
        (None, "agent_message_chunk"),
        ("child", "agent_message_chunk"),
        ("child", "tool_call"),
        (None, "subagent_update"),
    ]
    assert shown[5][1]["status"] == "completed" and "_sessionId" not in shown[5][1]
    plain = list(log.replayed(compaction=True, subagents=False))
    assert [(s, e["content"]["text"]) for s, e in plain] == [(None, "Let me "), (None, "look.")]


def test_a_sub_agent_never_ended_is_ended_as_disconnected_once() -> None:
    log = ReplayLog()
    log.record({"sessionUpdate": "subagent_update", "subagentSessionId": "done", "name": "explore-1"})
    log.record({"sessionUpdate": "subagent_update", "subagentSessionId": "done", "state": "completed"})
    log.record({"sessionUpdate": "subagent_update", "subagentSessionId": "lost", "name": "explore-2"})
    orphan = log.for_child("lost")
    orphan.record({"sessionUpdate": "tool_call", "toolCallId": "c9", "title": "grep", "status": "pending"})
    assert log.repair() == (2, 0)  # the child's call, failed, and the orphan, disconnected
    assert log.events[-1] == {
        "sessionUpdate": "subagent_update",
        "subagentSessionId": "lost",
        "sessionId": "lost",
        "state": "disconnected",
    }
    assert log.events[-2]["status"] == "failed"
    assert log.repair() == (0, 0), "a second load ends nothing again"
