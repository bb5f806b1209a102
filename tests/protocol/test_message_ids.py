"""Message ids (ACP's `messageId`, stable since 2026-06-05): every message chunk names its message, the same id for
all chunks of one message, a thought apart from its answer, stored, and the same on replay."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from coder_agent.model.scripted import Call, Reply, ScriptedModel
from coder_agent.store import SessionStore
from tests.support.acp_client import FakeClient
from tests.support.scripted_agent import scripted_agent, tool_agent

pytestmark = pytest.mark.anyio

CHUNKS = ("user_message_chunk", "agent_message_chunk", "agent_thought_chunk")


def messages(updates: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(kind, messageId, text) of each message, in order, its chunks joined."""
    found: list[tuple[str, str, str]] = []
    for update in updates:
        kind = update["sessionUpdate"]
        if kind not in CHUNKS:
            continue
        text = update["content"].get("text", "")
        if found and found[-1][:2] == (kind, update["messageId"]):
            found[-1] = (kind, update["messageId"], found[-1][2] + text)
        else:
            found.append((kind, update["messageId"], text))
    return found


def chunks(client: FakeClient, session: str) -> list[dict[str, Any]]:
    return [u for u in client.session_updates(session) if u["sessionUpdate"] in CHUNKS]


async def test_every_chunk_names_its_message_and_a_thought_is_a_message_of_its_own(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            Reply("Let me look.", thought="Where is it?", chunk_size=3, calls=[Call("no_such_tool", id="c1")]),
            Reply("Found it.", thought="There.", chunk_size=2),
        ]
    )
    async with scripted_agent(tmp_path, model) as (client, session, _):
        answer = await client.request(
            "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}
        )
    sent = chunks(client, session)
    assert sent and all(isinstance(u.get("messageId"), str) and u["messageId"] for u in sent)
    shown = [(kind, text) for kind, _, text in messages(sent)]
    assert shown[-4:] == [
        ("agent_thought_chunk", "Where is it?"),
        ("agent_message_chunk", "Let me look."),
        ("agent_thought_chunk", "There."),
        ("agent_message_chunk", "Found it."),
    ]
    ids = [message_id for _, message_id, _ in messages(sent)]
    assert len(ids) == len(set(ids)), "each message has its own id: two answers, and a thought apart from its answer"
    assert isinstance(answer["userMessageId"], str) and answer["userMessageId"] not in ids


async def test_replayed_messages_have_the_ids_they_had_live(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "store")
    model = ScriptedModel(
        [
            Reply("Reading.", thought="hm", chunk_size=2, calls=[Call("read_file", {"path": "a.txt"}, id="r1")]),
            Reply("It says hi.", chunk_size=4),
            Reply("Second answer."),
        ]
    )
    user_ids: list[str] = []
    async with tool_agent(tmp_path, model, store=store) as (client, editor, session, work):
        (work / "a.txt").write_text("hi\n")
        for text in ("what is in a.txt?", "and now?"):
            params = {"sessionId": session, "prompt": [{"type": "text", "text": text}]}
            user_ids.append((await client.request("session/prompt", params))["userMessageId"])
        live = messages(chunks(client, session))
    async with tool_agent(tmp_path, ScriptedModel(), store=store, open_session=False) as (client, _, _, work):
        await client.request("session/load", {"sessionId": session, "cwd": str(work), "mcpServers": []})
        replayed = messages(chunks(client, session))
    assert [m for m in replayed if m[0] != "user_message_chunk"] == live
    users = [(message_id, text) for kind, message_id, text in replayed if kind == "user_message_chunk"]
    assert users == list(zip(user_ids, ["what is in a.txt?", "and now?"], strict=True))


async def test_a_prompt_of_several_blocks_is_one_user_message(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "store")
    async with scripted_agent(tmp_path, ScriptedModel([Reply("ok")]), store=store) as (client, session, _):
        prompt = [
            {"type": "text", "text": "Look at "},
            {"type": "resource_link", "uri": "file:///w/foo.rs", "name": "foo.rs"},
            {"type": "text", "text": " please."},
        ]
        answer = await client.request("session/prompt", {"sessionId": session, "prompt": prompt})
    record = store.load(session)
    users = [e for e in record.events if e["sessionUpdate"] == "user_message_chunk"]
    assert len(users) == 3 and {e["messageId"] for e in users} == {answer["userMessageId"]}


async def test_a_log_stored_without_ids_is_replayed_with_ids(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "store")
    async with scripted_agent(tmp_path, ScriptedModel([Reply("ok")]), store=store) as (client, session, _):
        await client.prompt(session, "hi")
    record = store.load(session)
    for event in record.events:
        event.pop("messageId", None)  # as an older version stored it
    store.save(record)
    async with scripted_agent(tmp_path, ScriptedModel(), store=store, open_session=False) as (client, _, _):
        await client.request("session/load", {"sessionId": session, "cwd": str(tmp_path / "work"), "mcpServers": []})
    replayed = chunks(client, session)
    assert [u["sessionUpdate"] for u in replayed] == ["user_message_chunk", "agent_message_chunk"]
    assert all(u["messageId"] for u in replayed)
    assert replayed[0]["messageId"] != replayed[1]["messageId"]


async def test_two_text_blocks_are_replayed_as_the_model_read_them_two_paragraphs(tmp_path: Path) -> None:
    """CodeCompanion's resumed chat showed "First paragraph.Second paragraph.": a client runs the chunks of one
    message together, so the replay sends the paragraphs the model read."""
    store = SessionStore(tmp_path / "store")
    model = ScriptedModel([Reply("ok")])
    async with scripted_agent(tmp_path, model, store=store) as (client, session, _):
        prompt = [{"type": "text", "text": "First paragraph."}, {"type": "text", "text": "Second paragraph."}]
        await client.request("session/prompt", {"sessionId": session, "prompt": prompt})
    assert model.last_request.messages[-1]["content"] == "First paragraph.\n\nSecond paragraph."
    async with scripted_agent(tmp_path, ScriptedModel(), store=store, open_session=False) as (client, _, _):
        await client.request("session/load", {"sessionId": session, "cwd": str(tmp_path / "work"), "mcpServers": []})
    users = [text for kind, _, text in messages(chunks(client, session)) if kind == "user_message_chunk"]
    assert users == ["First paragraph.\n\nSecond paragraph."]
