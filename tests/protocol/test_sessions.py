"""Sessions that survive: store, load with replay, resume, list, close, delete, /undo, bad store files."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from coder_agent.model.scripted import Call, Reply, ScriptedModel
from coder_agent.store import SessionRecord, SessionStore, utc_now
from tests.support.acp_client import RpcFailure
from tests.support.scripted_agent import tool_agent

pytestmark = pytest.mark.anyio


def kinds(updates: list[dict[str, Any]]) -> list[str]:
    return [u["sessionUpdate"] for u in updates]


async def test_load_replays_the_whole_history_in_a_new_agent(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "store")
    plan = [{"content": "Fix it", "status": "in_progress"}]
    model = ScriptedModel(
        [
            Reply("Planning.", thought="hmm", calls=[Call("update_plan", {"entries": plan})]),
            Reply(calls=[Call("read_file", {"path": "a.txt"})]),
            Reply(calls=[Call("edit_file", {"path": "a.txt", "old_string": "old", "new_string": "new"})]),
            Reply(calls=[Call("run_command", {"command": "echo ran-it"})]),
            Reply("Done with it."),
            Reply("Second session answer."),
        ]
    )
    async with tool_agent(tmp_path, model, store=store) as (client, editor, session, work):
        (work / "a.txt").write_text("old\n")
        await client.prompt(session, "fix a.txt please")
    async with tool_agent(tmp_path, model, store=store, open_session=False) as (client, editor, _, work):
        result = await client.request("session/load", {"sessionId": session, "cwd": str(work), "mcpServers": []})
        replayed = client.session_updates(session)
        assert result["modes"]["currentModeId"] == "default"
        await client.prompt(session, "and now?")
    first_text = next(u for u in replayed if u["sessionUpdate"] == "user_message_chunk")
    assert first_text["content"]["text"] == "fix a.txt please"
    replay_kinds = kinds(replayed)
    assert replay_kinds.index("user_message_chunk") < replay_kinds.index("agent_message_chunk")
    assert "agent_thought_chunk" in replay_kinds and "plan" in replay_kinds
    calls = [u for u in replayed if u["sessionUpdate"] == "tool_call"]
    assert [c["status"] for c in calls] == ["completed", "completed", "completed"]
    assert calls[1]["content"][0]["type"] == "diff"
    assert calls[2]["content"][0]["type"] == "content"
    assert "ran-it" in calls[2]["content"][0]["content"]["text"], "terminal output is replayed as text"
    text = "".join(u["content"]["text"] for u in replayed if u["sessionUpdate"] == "agent_message_chunk")
    assert "Planning." in text and "Done with it." in text
    response_index = next(i for i, f in enumerate(client.frames) if f.get("result") == result)
    assert all(
        i < response_index
        for i, f in enumerate(client.frames)
        if f.get("method") == "session/update" and f["params"]["update"]["sessionUpdate"] == "tool_call"
    ), "the whole history is replayed before the response"
    commands_index = next(
        i
        for i, f in enumerate(client.frames)
        if f.get("method") == "session/update" and f["params"]["update"]["sessionUpdate"] == "available_commands_update"
    )
    assert commands_index > response_index, "commands are announced after the load response, not mid-replay"
    history = model.last_request.messages
    assert history[1]["content"] == "fix a.txt please"
    assert history[-1]["content"] == "and now?"
    assert len([m for m in history if m["role"] == "tool"]) == 4


async def test_resume_keeps_history_without_replay(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "store")
    model = ScriptedModel([Reply("one"), Reply("two")])
    async with tool_agent(tmp_path, model, store=store) as (client, editor, session, work):
        await client.prompt(session, "first")
    async with tool_agent(tmp_path, model, store=store, open_session=False) as (client, editor, _, work):
        await client.request("session/resume", {"sessionId": session, "cwd": str(work)})
        assert client.session_updates(session, "agent_message_chunk") == []
        await client.prompt(session, "second")
    assert [m["content"] for m in model.last_request.messages[1:]] == ["first", "one", "second"]


async def test_list_pages_newest_first_and_filters_by_cwd(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "store")
    work = tmp_path / "work"
    for i in range(120):
        stamp = f"2026-11-{1 + i // 24:02d}T{i % 24:02d}:00:00.000Z"
        cwd = str(work) if i % 2 else str(tmp_path / "elsewhere")
        store.save(
            SessionRecord(session_id=f"sess_{i:03d}", cwd=cwd, title=f"t{i}", created_at=stamp, updated_at=stamp)
        )
    model = ScriptedModel()
    async with tool_agent(tmp_path, model, store=store, open_session=False) as (client, editor, _, work):
        seen: list[str] = []
        cursor = None
        pages = 0
        while True:
            params = {"cwd": str(work), **({"cursor": cursor} if cursor else {})}
            page = await client.request("session/list", params)
            seen += [s["sessionId"] for s in page["sessions"]]
            pages += 1
            cursor = page.get("nextCursor")
            if not cursor:
                break
        everything = await client.request("session/list", {})
        bad = await client.request_raw("session/list", {"cursor": "not-a-cursor"})
        empty = await client.request("session/list", {"cwd": str(tmp_path / "nowhere")})
    assert len(seen) == len(set(seen)) == 60
    assert seen[0] == "sess_119" and seen[-1] == "sess_001"
    assert pages >= 2
    assert everything["sessions"][0]["title"] == "t119"
    assert everything["sessions"][0]["updatedAt"].endswith("Z")
    assert bad["error"]["code"] == -32602
    assert empty == {"sessions": []}


async def test_close_and_delete(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "store")
    model = ScriptedModel([Reply("hi")])
    async with tool_agent(tmp_path, model, store=store) as (client, editor, session, work):
        await client.prompt(session, "hello")
        assert await client.request("session/close", {"sessionId": session}) == {}
        with pytest.raises(RpcFailure) as closed:
            await client.prompt(session, "still there?")
        assert closed.value.code == -32002
        assert await client.request("session/delete", {"sessionId": session}) == {}
        assert await client.request("session/delete", {"sessionId": session}) == {}
        assert await client.request("session/delete", {"sessionId": "sess_never_existed"}) == {}
        with pytest.raises(RpcFailure) as gone:
            await client.request("session/load", {"sessionId": session, "cwd": str(work), "mcpServers": []})
        assert gone.value.code == -32002
        listed = await client.request("session/list", {})
    assert listed == {"sessions": []}


async def test_a_corrupt_or_newer_store_file_fails_only_that_session(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "store")
    work = tmp_path / "work"
    work.mkdir()
    for name in ("sess_good", "sess_corrupt", "sess_future"):
        now = utc_now()
        store.save(SessionRecord(session_id=name, cwd=str(work), created_at=now, updated_at=now))
    store.record_path("sess_corrupt").write_text("{ this is not json")
    future = json.loads(store.record_path("sess_future").read_text())
    future["schema_version"] = 99
    store.record_path("sess_future").write_text(json.dumps(future))
    model = ScriptedModel()
    async with tool_agent(tmp_path, model, store=store, open_session=False) as (client, editor, _, work):
        load = {"cwd": str(work), "mcpServers": []}
        corrupt = await client.request_raw("session/load", {"sessionId": "sess_corrupt", **load})
        newer = await client.request_raw("session/load", {"sessionId": "sess_future", **load})
        good = await client.request("session/load", {"sessionId": "sess_good", **load})
    assert corrupt["error"]["code"] == -32603
    assert "sess_corrupt.json" in corrupt["error"]["message"]
    assert "newer coder-agent" in newer["error"]["message"]
    assert "modes" in good


@pytest.mark.parametrize("in_git", [True, False])
async def test_undo_restores_the_last_turns_files_through_the_editor(tmp_path: Path, in_git: bool) -> None:
    model = ScriptedModel(
        [
            Reply(calls=[Call("read_file", {"path": "keep.txt"})]),
            Reply(calls=[Call("edit_file", {"path": "keep.txt", "old_string": "v1", "new_string": "v2"})]),
            Reply(calls=[Call("write_file", {"path": "created.txt", "content": "new file\n"})]),
            Reply("Changed two files."),
        ]
    )
    work = tmp_path / "work"
    work.mkdir()
    if in_git:
        subprocess.run(["git", "init", "-q", str(work)], check=True)
        subprocess.run(["git", "-C", str(work), "status"], check=True, capture_output=True)
    (work / "keep.txt").write_text("v1\n")
    async with tool_agent(tmp_path, model, mode="accept-edits", store=SessionStore(tmp_path / "store")) as (
        client,
        editor,
        session,
        work,
    ):
        await client.prompt(session, "change things")
        assert (work / "keep.txt").read_text() == "v2\n"
        await client.prompt(session, "/undo")
        report = client.agent_text(session)
        await client.prompt(session, "/undo")
        again = client.agent_text(session)[len(report) :]
    assert (work / "keep.txt").read_text() == "v1\n"
    assert not (work / "created.txt").exists()
    assert editor.writes[-1] == (str(work / "keep.txt"), "v1\n"), "the restore went through fs/write_text_file"
    assert "restored `" in report and "deleted `" in report
    assert "Nothing to undo" in again
    if in_git:
        status = subprocess.run(["git", "-C", str(work), "status", "--porcelain"], capture_output=True, text=True)
        assert "created.txt" not in status.stdout
        branches = subprocess.run(["git", "-C", str(work), "branch", "-a"], capture_output=True, text=True)
        assert branches.stdout.strip() == ""
