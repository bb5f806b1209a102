"""Compaction as the editor shows it: `compaction_update` in progress → completed / failed / cancelled, the summary
streamed as `compaction_summary_chunk`, a compaction entry replayed on load; a plain agent message elsewhere."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from coder_agent.model.base import ModelError, Usage
from coder_agent.model.scripted import Reply, ScriptedModel
from coder_agent.store import SessionStore
from tests.support.scripted_agent import scripted_agent

pytestmark = pytest.mark.anyio

PLAIN = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
SHOWS = {**PLAIN, "session": {"compaction": {}}}
SUMMARY = "The user asked one thing and got an answer."


async def reload(tmp_path: Path, store: SessionStore, session: str, capabilities: dict[str, Any]) -> list[Any]:
    """The updates a new agent replays when a client with these capabilities loads the session."""
    async with scripted_agent(
        tmp_path, ScriptedModel(), store=store, capabilities=capabilities, open_session=False
    ) as (client, _, _):
        await client.request("session/load", {"sessionId": session, "cwd": str(tmp_path / "work"), "mcpServers": []})
        return client.session_updates(session)


async def test_the_summary_streams_into_a_compaction_entry_that_is_replayed(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "store")
    model = ScriptedModel(
        [Reply("Answer one.", usage=Usage(10, 5), cost=0.01), Reply(SUMMARY, chunk_size=7, cost=0.02), Reply("Two.")]
    )
    async with scripted_agent(tmp_path, model, store=store, capabilities=SHOWS) as (client, session, _):
        await client.prompt(session, "one")
        assert await client.prompt(session, "/compact") == "end_turn"
        live = [u for u in client.session_updates(session) if u["sessionUpdate"].startswith("compaction")]
        await client.prompt(session, "two")
        assert client.session_updates(session, "usage_update")[-1]["cost"]["amount"] == 0.03, (
            "the summary's cost counts"
        )
    assert live[0] == {
        "sessionUpdate": "compaction_update",
        "compactionId": live[0]["compactionId"],
        "status": "in_progress",
    }
    chunks = [u for u in live if u["sessionUpdate"] == "compaction_summary_chunk"]
    assert len(chunks) > 1 and "".join(c["content"]["text"] for c in chunks) == SUMMARY
    assert live[-1]["status"] == "completed" and live[-1]["summary"] == [{"type": "text", "text": SUMMARY}]
    assert {u["compactionId"] for u in live} == {live[0]["compactionId"]}
    assert "compacted" not in client.agent_text(session).lower(), "the entry says it; no extra message"
    assert SUMMARY in model.last_request.messages[1]["content"]

    replayed = await reload(tmp_path, store, session, SHOWS)
    entries = [u for u in replayed if u["sessionUpdate"].startswith("compaction")]
    assert entries == [
        {
            "sessionUpdate": "compaction_update",
            "compactionId": live[0]["compactionId"],
            "status": "completed",
            "summary": [{"type": "text", "text": SUMMARY}],
        }
    ]
    plain = await reload(tmp_path, store, session, PLAIN)
    assert not [u for u in plain if u["sessionUpdate"].startswith("compaction")]
    text = "".join(u["content"]["text"] for u in plain if u["sessionUpdate"] == "agent_message_chunk")
    assert "Context compacted" in text


async def test_a_failed_summary_is_a_failed_entry_and_the_history_is_kept(tmp_path: Path) -> None:
    model = ScriptedModel([Reply("Answer one."), ModelError("provider down"), Reply("Answer two.")])
    async with scripted_agent(tmp_path, model, capabilities=SHOWS) as (client, session, _):
        await client.prompt(session, "one")
        await client.prompt(session, "/compact")
        await client.prompt(session, "two")
    [start, end] = client.session_updates(session, "compaction_update")
    assert start["status"] == "in_progress"
    assert end["status"] == "failed" and "provider down" in end["error"] and end["summary"] == []
    assert [m.get("content") for m in model.last_request.messages[1:]] == ["one", "Answer one.", "two"]


async def test_a_cancel_while_summarising_cancels_the_entry(tmp_path: Path) -> None:
    hold = anyio.Event()
    model = ScriptedModel([Reply("Answer one."), Reply(SUMMARY, chunk_size=5, hold=hold, hold_after=2)])
    async with scripted_agent(tmp_path, model, capabilities=SHOWS) as (client, session, _):
        await client.prompt(session, "one")
        answers: list[str] = []

        async def compact() -> None:
            answers.append(await client.prompt(session, "/compact"))

        async with anyio.create_task_group() as task_group:
            task_group.start_soon(compact)
            await client.wait_for(lambda: len(client.session_updates(session, "compaction_summary_chunk")) == 2)
            await client.notify("session/cancel", {"sessionId": session})
        statuses = [u["status"] for u in client.session_updates(session, "compaction_update")]
    assert answers == ["cancelled"]
    assert statuses == ["in_progress", "cancelled"]
    assert client.session_updates(session, "compaction_update")[-1]["summary"] == []


async def test_without_the_capability_a_short_message_says_it(tmp_path: Path) -> None:
    model = ScriptedModel([Reply("Answer one."), Reply(SUMMARY, chunk_size=3), Reply("one"), ModelError("down")])
    async with scripted_agent(tmp_path, model, capabilities=PLAIN) as (client, session, _):
        await client.prompt(session, "one")
        await client.prompt(session, "/compact")
        assert "Context compacted: 1 earlier messages were summarised." in client.agent_text(session)
        assert SUMMARY not in client.agent_text(session), "the summary is not streamed as the agent's text"
        await client.prompt(session, "again")
        await client.prompt(session, "/compact")
        assert "Compacting the conversation failed: down" in client.agent_text(session)
