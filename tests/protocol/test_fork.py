"""`session/fork` (unstable; checked against the unstable schema) and forking at a message (RFD
session-fork-at-message: inclusive): a new session with the history, and the undo checkpoints, up to that point;
the session forked from is left as it was."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from coder_agent.model.scripted import Call, Reply, ScriptedModel
from coder_agent.store import SessionStore
from tests.support.acp_client import FakeClient, RpcFailure
from tests.support.scripted_agent import scripted_agent, tool_agent

pytestmark = pytest.mark.anyio

NOTICES = {"session": {"notices": {}}}


def fork_params(session: str, work: Path, message_id: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"sessionId": session, "cwd": str(work), "mcpServers": []}
    if message_id is not None:
        params["messageId"] = message_id
    return params


async def fork(client: FakeClient, session: str, work: Path, message_id: str | None = None) -> str:
    return str((await client.request("session/fork", fork_params(session, work, message_id)))["sessionId"])


def edit(path: str, old: str, new: str) -> Call:
    return Call("edit_file", {"path": path, "old_string": old, "new_string": new})


def said(model: ScriptedModel) -> list[Any]:
    """The conversation of the last request, the system prompt left out."""
    return [(m["role"], m.get("content")) for m in model.last_request.messages[1:]]


def reply_ids(client: FakeClient, session: str) -> list[str]:
    return [message_id for message_id, _ in client.messages(session)]


async def test_it_is_advertised_with_forking_at_a_message(tmp_path: Path) -> None:
    async with scripted_agent(tmp_path, ScriptedModel(), open_session=False) as (client, _, _):
        capabilities = (await client.initialize())["agentCapabilities"]["sessionCapabilities"]
    assert capabilities["fork"] == {"atMessageId": True}


async def test_a_prompted_fork_leaves_its_parent_unchanged(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "store")
    work = tmp_path / "work"
    model = ScriptedModel([Reply("One."), Reply("Summary of it all."), Reply("Two.")])
    async with scripted_agent(tmp_path, model, store=store, capabilities=NOTICES) as (client, parent, _):
        await client.prompt(parent, "first")
        await client.request("session/close", {"sessionId": parent})
        stored = store.load(parent)
        forked = await fork(client, parent, work)
        assert await client.prompt(forked, "summarise this conversation") == "end_turn"
        assert said(model) == [("user", "first"), ("assistant", "One."), ("user", "summarise this conversation")]
        assert store.load(parent).model_dump() == stored.model_dump(), "the parent's record is untouched"
        await client.request("session/resume", {"sessionId": parent, "cwd": str(work)})
        await client.prompt(parent, "second")
        listed = await client.request("session/list", {})
    assert said(model) == [("user", "first"), ("assistant", "One."), ("user", "second")]
    titles = {s["sessionId"]: s.get("title") for s in listed["sessions"]}
    assert titles[forked] == "first (fork)" and titles[parent] == "first"


async def test_forking_at_a_message_keeps_the_history_up_to_it(tmp_path: Path) -> None:
    work = tmp_path / "work"
    model = ScriptedModel(
        [Reply("One.", thought="thinking one"), Reply("Two."), Reply("From one."), Reply("From two's question.")]
    )
    store = SessionStore(tmp_path / "store")
    async with scripted_agent(tmp_path, model, store=store, capabilities=NOTICES) as (client, parent, _):
        await client.prompt(parent, "first")
        second = await client.request(
            "session/prompt", {"sessionId": parent, "prompt": [{"type": "text", "text": "second"}]}
        )
        one, two = reply_ids(client, parent)
        [thought_one] = [message_id for message_id, _ in client.messages(parent, "agent_thought_chunk")]
        at_one = await fork(client, parent, work, one)
        await client.prompt(at_one, "edited second")
        assert said(model) == [("user", "first"), ("assistant", "One."), ("user", "edited second")]
        at_question = await fork(client, parent, work, second["userMessageId"])
        await client.prompt(at_question, "more")
        assert said(model) == [
            ("user", "first"),
            ("assistant", "One."),
            ("user", "second"),
            ("user", "more"),
        ], "inclusive: the question is kept, its answer is not"
        at_thought = await fork(client, parent, work, thought_one)
        replayed = await client.request("session/load", fork_params(at_thought, work) | {"mcpServers": []})
    assert replayed is not None
    kinds = [(u["sessionUpdate"], u.get("messageId")) for u in client.session_updates(at_thought)]
    assert ("agent_message_chunk", two) not in kinds
    assert ("agent_thought_chunk", thought_one) in kinds


async def test_a_tool_call_after_the_fork_point_is_answered_not_run(tmp_path: Path) -> None:
    model = ScriptedModel(
        [Reply("Let me run it.", calls=[Call("no_such_tool", id="c1")]), Reply("Done."), Reply("Forked answer.")]
    )
    async with scripted_agent(tmp_path, model, capabilities=NOTICES) as (client, parent, _):
        await client.prompt(parent, "go")
        let_me, _ = reply_ids(client, parent)
        forked = await fork(client, parent, tmp_path / "work", let_me)
        await client.prompt(forked, "go on")
    tool = next(m for m in model.last_request.messages if m["role"] == "tool")
    assert tool == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "Not run: the session was forked before this tool call ran.",
    }


async def test_what_cannot_be_forked_at_is_refused(tmp_path: Path) -> None:
    model = ScriptedModel([Reply("Before."), Reply("After.")])
    async with scripted_agent(tmp_path, model, capabilities=NOTICES) as (client, parent, _):
        await client.prompt(parent, "first")
        [before] = reply_ids(client, parent)
        await client.prompt(parent, "/clear")
        await client.prompt(parent, "second")
        with pytest.raises(RpcFailure) as unknown:
            await fork(client, parent, tmp_path / "work", "no-such-message")
        with pytest.raises(RpcFailure) as cleared:
            await fork(client, parent, tmp_path / "work", before)
        with pytest.raises(RpcFailure) as missing:
            await fork(client, "sess_nowhere", tmp_path / "work")
    assert unknown.value.code == cleared.value.code == -32602
    assert "messageId" in unknown.value.message
    assert "compacted or cleared" in cleared.value.message
    assert missing.value.code == -32002


@pytest.mark.parametrize("in_git", [True, False])
async def test_undo_in_a_fork_uses_its_own_checkpoints(tmp_path: Path, in_git: bool) -> None:
    work = tmp_path / "work"
    work.mkdir()
    if in_git:
        subprocess.run(["git", "init", "-q", str(work)], check=True)
    (work / "a.txt").write_text("a0\n")
    (work / "b.txt").write_text("b0\n")
    model = ScriptedModel(
        [
            Reply(calls=[Call("read_file", {"path": "a.txt"}), edit("a.txt", "a0", "a1")]),
            Reply("Changed a."),
            Reply(calls=[Call("read_file", {"path": "b.txt"}), edit("b.txt", "b0", "b1")]),
            Reply("Changed b."),
        ]
    )
    store = SessionStore(tmp_path / "store")
    async with tool_agent(tmp_path, model, mode="accept-edits", store=store) as (client, editor, parent, work):
        await client.prompt(parent, "change a")
        await client.prompt(parent, "change b")
        changed_a = next(message_id for message_id, text in client.messages(parent) if text == "Changed a.")
        forked = await fork(client, parent, work, changed_a)
        await client.request("session/delete", {"sessionId": parent})  # its snapshots go: the fork has its own
        await client.prompt(forked, "/undo")
        undone = client.agent_messages(forked)
    assert (work / "a.txt").read_text() == "a0\n", undone
    assert (work / "b.txt").read_text() == "b1\n", "the turn after the fork point is not the fork's to undo"
    if in_git:
        refs = subprocess.run(
            ["git", "-C", str(work), "for-each-ref", "--format=%(refname)", "refs/coder-agent/"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        assert all(parent not in ref for ref in refs)


async def test_undo_in_a_fork_leaves_the_parents_checkpoints(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text("a0\n")
    model = ScriptedModel(
        [
            Reply(calls=[Call("read_file", {"path": "a.txt"}), edit("a.txt", "a0", "a1")]),
            Reply("Changed a."),
            Reply(calls=[Call("write_file", {"path": "c.txt", "content": "fork\n"})]),
            Reply("Wrote c."),
        ]
    )
    store = SessionStore(tmp_path / "store")
    async with tool_agent(tmp_path, model, mode="accept-edits", store=store) as (client, editor, parent, work):
        await client.prompt(parent, "change a")
        forked = await fork(client, parent, work)
        await client.prompt(forked, "write c")
        await client.prompt(forked, "/undo")
        assert not (work / "c.txt").exists()
        await client.request("session/close", {"sessionId": parent})
        before = store.load(parent).checkpoints
        await client.request("session/resume", {"sessionId": parent, "cwd": str(work)})
        await client.prompt(parent, "/undo")
    assert len(before) == 1
    assert (work / "a.txt").read_text() == "a0\n", "the parent's own undo still works"


async def test_a_fork_that_works_elsewhere_is_told_where(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    model = ScriptedModel([Reply("One."), Reply("Two."), Reply("Three.")])
    async with scripted_agent(tmp_path, model, capabilities=NOTICES) as (client, parent, _):
        await client.prompt(parent, "first")
        await client.prompt(parent, "second")
        same = await fork(client, parent, tmp_path / "work")
        await client.prompt(same, "third")
        kept = model.last_request.messages[0]["content"]
        moved = await fork(client, parent, elsewhere)
        model.add(Reply("Four."))
        await client.prompt(moved, "fourth")
    assert kept == model.requests[0].messages[0]["content"], "the same place: the same system prompt (cached)"
    assert f"Working directory: {elsewhere}" in model.last_request.messages[0]["content"]
