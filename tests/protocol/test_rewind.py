"""Rewind end to end on the scripted model and a fake editor: three prompts create, edit and delete files; going
back to before the second (files and conversation) leaves one turn and the files as they were, `session/load`
replays that; a dry run changes nothing; the rewind can itself be rewound; a file the user changed meanwhile is
reported, not overwritten; cursors are announced around every prompt, replayed, and taken by `session/fork`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from coder_agent.model.scripted import Call, Reply, ScriptedModel
from coder_agent.store import SessionStore
from tests.support.scripted_agent import scripted_agent

pytestmark = pytest.mark.anyio

CAPABILITIES = {
    "fs": {"readTextFile": True, "writeTextFile": True},
    "terminal": False,
    "session": {"cursors": {}, "notices": {}},
}


def write(path: str, content: str) -> Call:
    return Call("write_file", {"path": path, "content": content})


def patch(*body: str) -> Call:
    return Call("apply_patch", {"input": "\n".join(["*** Begin Patch", *body, "*** End Patch"])})


def three_turns() -> ScriptedModel:
    """Turn 1 creates a.txt; turn 2 edits it and creates b.txt; turn 3 edits a.txt again and deletes gone.txt."""
    return ScriptedModel(
        [
            Reply(calls=[write("a.txt", "one\n")]),
            Reply("Created a."),
            Reply(calls=[Call("read_file", {"path": "a.txt"})]),
            Reply(calls=[write("a.txt", "two\n"), write("b.txt", "bee\n")]),
            Reply("Edited a, created b."),
            Reply(calls=[Call("read_file", {"path": "a.txt"}), Call("read_file", {"path": "gone.txt"})]),
            Reply(calls=[write("a.txt", "three\n"), patch("*** Delete File: gone.txt")]),
            Reply("Edited a, deleted gone."),
            Reply("After the rewind."),
        ]
    )


def editing_agent(tmp_path: Path, model: ScriptedModel, store: SessionStore | None = None) -> Any:
    """An agent in full-auto whose scripted edits go unchecked (its check before finishing off), with an editor."""
    return scripted_agent(
        tmp_path,
        model,
        capabilities=CAPABILITIES,
        editor=True,
        store=store,
        default_mode="full-auto",
        check_before_finishing=False,
    )


def files(work: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(work.iterdir()) if p.is_file()}


def said(model: ScriptedModel) -> list[tuple[str, str]]:
    return [
        (m["role"], m["content"])
        for m in model.last_request.messages
        if m["role"] in ("user", "assistant") and m.get("content") and not str(m["content"]).startswith("[Environment")
    ]


async def prompts(client: Any, session: str, *texts: str) -> list[str]:
    ids = []
    for text in texts:
        params = {"sessionId": session, "prompt": [{"type": "text", "text": text}]}
        answer = await client.request("session/prompt", params)
        assert answer["stopReason"] == "end_turn"
        ids.append(answer["userMessageId"])
    return ids


def rewind(session: str, message_id: str, **more: Any) -> dict[str, Any]:
    return {"sessionId": session, "messageId": message_id, **more}


async def test_rewinding_to_before_the_second_prompt_restores_files_and_conversation(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "gone.txt").write_text("bye\n")
    (work / "keep.txt").write_text("untouched\n")
    model = three_turns()
    store = SessionStore(tmp_path / "store")
    async with editing_agent(tmp_path, model, store) as (client, session, _):
        first, second, third = await prompts(client, session, "create a", "edit a, create b", "edit a, delete gone")
        before_second = {"a.txt": "one\n", "gone.txt": "bye\n", "keep.txt": "untouched\n"}
        after_third = files(work)
        assert after_third == {"a.txt": "three\n", "b.txt": "bee\n", "keep.txt": "untouched\n"}

        points = (await client.request("_session/rewind_points", {"sessionId": session}))["points"]
        assert [p["messageId"] for p in points] == [first, second, third]
        assert points[1]["text"] == "edit a, create b"

        dry = await client.request("_session/rewind", rewind(session, second, mode="both", dryRun=True))
        assert dry["rewound"] is False and dry["conversation"]["rewound"] is False
        assert dry["conversation"]["messagesDropped"] > 0
        actions = {Path(c["path"]).name: c["action"] for c in dry["files"]["changes"]}
        assert actions == {"a.txt": "restore", "b.txt": "delete", "gone.txt": "recreate"}
        assert files(work) == after_third, "a dry run changes nothing"

        done = await client.request("_session/rewind", rewind(session, second, mode="both"))
        assert done["rewound"] is True and done["files"]["conflicts"] == []
        assert files(work) == before_second, "byte-identical to before turn 2"
        writes = [r for r in client.agent_requests if r["method"] == "fs/write_text_file"]
        assert {Path(r["params"]["path"]).name for r in writes[-2:]} == {"a.txt", "gone.txt"}, "through the editor"
        undo_cursor = done["cursorId"]

        await prompts(client, session, "again")
        assert said(model) == [
            ("user", "create a"),
            ("assistant", "Created a."),
            ("user", "again"),
        ], "one turn in the history, then the new prompt"

        back = {"sessionId": session, "cursorId": undo_cursor, "mode": "both"}
        undone = await client.request("_session/rewind", back)
        assert undone["rewound"] is True
        assert files(work) == after_third, "rewinding the rewind restores the state after turn 3"
        points = (await client.request("_session/rewind_points", {"sessionId": session}))["points"]
        assert [p["messageId"] for p in points] == [first, second, third]

    async with scripted_agent(tmp_path, model, capabilities=CAPABILITIES, store=store, open_session=False) as (
        client,
        _,
        _editor,
    ):
        await client.request("session/load", {"sessionId": session, "cwd": str(work), "mcpServers": []})
        users = [text for _, text in client.messages(session, "user_message_chunk")]
        assert users == ["create a", "edit a, create b", "edit a, delete gone"]
        replayed = client.session_updates(session, "cursor_update")
        assert replayed and all(u["capabilities"] for u in replayed)


async def test_session_load_after_a_rewind_replays_one_turn(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "gone.txt").write_text("bye\n")
    model = three_turns()
    store = SessionStore(tmp_path / "store")
    async with editing_agent(tmp_path, model, store) as (client, session, _):
        _, second, _ = await prompts(client, session, "create a", "edit a, create b", "edit a, delete gone")
        await client.request("_session/rewind", rewind(session, second, mode="both"))
    async with scripted_agent(tmp_path, model, capabilities=CAPABILITIES, store=store, open_session=False) as (
        client,
        _,
        _editor,
    ):
        await client.request("session/load", {"sessionId": session, "cwd": str(work), "mcpServers": []})
        assert [text for _, text in client.messages(session, "user_message_chunk")] == ["create a"]
        assert client.agent_messages(session) == ["Created a."]


async def test_a_file_the_user_changed_is_reported_not_overwritten(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "gone.txt").write_text("bye\n")
    model = three_turns()
    async with editing_agent(tmp_path, model) as (client, session, _):
        _, second, _ = await prompts(client, session, "create a", "edit a, create b", "edit a, delete gone")
        (work / "a.txt").write_text("the user's own\n")
        asked = await client.request("_session/rewind", rewind(session, second, mode="both"))
        assert asked["rewound"] is False and "question" in asked
        assert [Path(p).name for p in asked["files"]["conflicts"]] == ["a.txt"]
        assert (work / "a.txt").read_text() == "the user's own\n" and (work / "b.txt").exists(), "nothing changed"

        kept = await client.request("_session/rewind", rewind(session, second, mode="both", onConflict="keep"))
        assert kept["rewound"] is True
        assert (work / "a.txt").read_text() == "the user's own\n", "not overwritten"
        assert not (work / "b.txt").exists() and (work / "gone.txt").read_text() == "bye\n", "the rest restored"


async def test_cursors_are_announced_around_each_prompt_and_fork_takes_them(tmp_path: Path) -> None:
    model = ScriptedModel([Reply("One."), Reply("Two."), Reply("From one.")])
    store = SessionStore(tmp_path / "store")
    async with scripted_agent(tmp_path, model, capabilities=CAPABILITIES, store=store) as (client, session, _):
        first, second = await prompts(client, session, "first", "second")
        cursors = client.session_updates(session, "cursor_update")
        anchors = [(c["anchor"]["position"], c["anchor"].get("messageId")) for c in cursors]
        assert anchors[0] == ("before", first) and anchors[2] == ("before", second)
        assert [a[0] for a in anchors] == ["before", "after", "before", "after"]
        assert all(c["capabilities"] == ["session/fork", "_session/rewind"] for c in cursors)
        forked = await client.request(
            "session/fork",
            {"sessionId": session, "cursorId": cursors[2]["cursorId"], "cwd": str(tmp_path / "work"), "mcpServers": []},
        )
        await client.prompt(forked["sessionId"], "edited second")
        assert said(model) == [("user", "first"), ("assistant", "One."), ("user", "edited second")]
        with pytest.raises(Exception, match="cursorId"):
            await client.request("_session/rewind", {"sessionId": session, "cursorId": "cur_nope", "mode": "both"})


async def test_cursors_are_not_sent_to_a_client_that_does_not_show_them(tmp_path: Path) -> None:
    model = ScriptedModel([Reply("One.")])
    plain = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
    async with scripted_agent(tmp_path, model, capabilities=plain) as (client, session, _):
        await prompts(client, session, "first")
        assert client.session_updates(session, "cursor_update") == []
        points = (await client.request("_session/rewind_points", {"sessionId": session}))["points"]
        assert len(points) == 1, "the rewind points are there all the same"
