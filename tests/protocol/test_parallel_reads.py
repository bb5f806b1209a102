"""Read-only calls of one reply run side by side (`agent.call_groups`), on the scripted model with a fake editor that
serves fs for real: all of them are in flight at once, each is reported as it finishes, the model reads the results
in its own order; a read after a write waits for it; a read that needs a question asks in its turn, one question at
a time; a cancel from a question ends its group."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from coder_agent.model.scripted import Call, Reply, ScriptedModel
from tests.support.acp_client import FakeClient
from tests.support.editor import FakeEditor
from tests.support.scripted_agent import tool_agent

pytestmark = pytest.mark.anyio


def results(model: ScriptedModel) -> list[str]:
    return [m["content"] for m in model.last_request.messages if m["role"] == "tool"]


def statuses(client: FakeClient, session: str) -> dict[str, list[str]]:
    """Each call's statuses, in the order they were shown."""
    found: dict[str, list[str]] = {}
    for update in client.session_updates(session):
        if update["sessionUpdate"] in ("tool_call", "tool_call_update") and "status" in update:
            found.setdefault(update["toolCallId"], []).append(update["status"])
    return found


def read(path: str) -> Call:
    return Call("read_file", {"path": path})


class HeldReads:
    """The editor's fs/read_text_file, answered only once `count` reads are in flight (or, per path, when released)."""

    def __init__(self, editor: FakeEditor, count: int) -> None:
        self.editor = editor
        self.count = count
        self.in_flight: list[str] = []
        self.all_in = anyio.Event()
        editor.client.handlers["fs/read_text_file"] = self.read

    async def read(self, params: dict[str, Any]) -> dict[str, Any]:
        self.in_flight.append(Path(params["path"]).name)
        if len(self.in_flight) >= self.count:
            self.all_in.set()
        await self.all_in.wait()
        return await self.editor.read_text_file(params)


async def test_five_reads_in_one_reply_are_in_flight_at_once_and_answered_in_the_models_order(tmp_path: Path) -> None:
    names = [f"f{n}.txt" for n in range(5)]
    model = ScriptedModel([Reply(calls=[read(name) for name in names]), Reply("Read them.")])
    async with tool_agent(tmp_path, model) as (client, editor, session, work):
        for name in names:
            (work / name).write_text(f"contents of {name}\n")
        held = HeldReads(editor, count=5)  # one read at a time would wait here for ever
        assert await client.prompt(session, "read them") == "end_turn"
    assert sorted(held.in_flight) == names
    assert [f"contents of {name}" in result for name, result in zip(names, results(model), strict=True)] == [True] * 5
    assert all(shown[-1] == "completed" for shown in statuses(client, session).values())


async def test_a_read_after_a_write_in_the_same_reply_waits_for_it(tmp_path: Path) -> None:
    write = Call("write_file", {"path": "b.txt", "content": "new\n"})
    model = ScriptedModel([Reply(calls=[read("a.txt"), write, read("b.txt"), read("a.txt")]), Reply("ok")])
    async with tool_agent(tmp_path, model, mode="accept-edits") as (client, editor, session, work):
        (work / "a.txt").write_text("a\n")
        assert await client.prompt(session, "go") == "end_turn"
    first, written, after, again = results(model)
    assert "a" in first and "a" in again, written
    assert "new" in after, f"the read of the file written before it finds it: {written}"


async def test_reads_that_need_a_question_ask_in_turn_one_at_a_time(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "o1.txt").write_text("o1\n")
    (outside / "o2.txt").write_text("o2\n")
    paths = ["in1.txt", str(outside / "o1.txt"), "in2.txt", str(outside / "o2.txt")]
    calls = [Call("read_file", {"path": path}, id=f"c{n}") for n, path in enumerate(paths)]
    model = ScriptedModel([Reply(calls=calls), Reply("ok")])
    async with tool_agent(tmp_path, model) as (client, editor, session, work):
        (work / "in1.txt").write_text("in1\n")
        (work / "in2.txt").write_text("in2\n")
        editor.hold_permissions = True
        async with anyio.create_task_group() as group:
            group.start_soon(client.prompt, session, "go")
            first = await editor.wait_for_permission_request(1)
            assert first.params["toolCall"]["toolCallId"] == "c1"
            assert statuses(client, session)["c0"][-1] == "completed", "asked once the read before it finished"
            assert len(editor.pending_permissions) == 1, "one question at a time"
            editor.release_permissions("allow_once")
            await client.wait_for(
                lambda: [p.params["toolCall"]["toolCallId"] for p in editor.pending_permissions] == ["c3"]
            )
            assert statuses(client, session)["c1"][-1] == "completed", "and once the one asked before it finished"
            editor.release_permissions("allow_once")
    found = results(model)
    assert [name in result for name, result in zip(("in1", "o1", "in2", "o2"), found, strict=True)] == [True] * 4


async def test_a_cancel_from_a_question_ends_the_other_reads_of_its_reply(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    for name in ("o1.txt", "o2.txt"):
        (outside / name).write_text(f"{name}\n")
    model = ScriptedModel([Reply(calls=[read(str(outside / "o1.txt")), read(str(outside / "o2.txt"))]), Reply("x")])
    async with tool_agent(tmp_path, model) as (client, editor, session, work):
        editor.hold_permissions = True
        async with anyio.create_task_group() as group:
            answers: list[str] = []

            async def prompt() -> None:
                answers.append(await client.prompt(session, "go"))

            group.start_soon(prompt)
            await editor.wait_for_permission_request(1)
            await editor.cancel(session)
    assert answers == ["cancelled"]
    assert len(editor.permission_requests) == 1, "nothing more is asked after the cancel"
    # neither call started (one waited for its answer, the other for its turn to ask): no status follows the cancel,
    # the client marks them cancelled itself (Zed's e2e test, `tests/protocol/test_cancelled_calls.py`)
    assert [shown[-1] for shown in statuses(client, session).values()] == ["pending", "pending"]
