"""coder-agent driven by the official Python ACP SDK (`agent-client-protocol`, a dev dependency): a client built on
the SDK's client API, whose pydantic models parse everything the agent sends (see `sdk_client`). Covered: a text
answer, a tool call with its diff written through `fs/write_text_file` after a permission round trip (allowed and
refused), cancel, and `session/load` replaying a session saved by an earlier process."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from acp import text_block
from acp.schema import ToolCallProgress, ToolCallStart, UserMessageChunk

from tests.interop.sdk_client import SdkEditor, sdk_agent
from tests.support.fake_llm import Call, FakeLLM, Reply
from tests.support.spawn import agent_env

pytestmark = pytest.mark.anyio

PROMPT_WAIT = 60.0


def workspace(tmp_path: Path) -> Path:
    work = tmp_path / "project"
    work.mkdir()
    (work / "greet.py").write_text("print('hello')\n", encoding="utf-8")
    return work


async def test_a_text_answer(tmp_path: Path, fake_llm: FakeLLM) -> None:
    work = workspace(tmp_path)
    fake_llm.script([Reply("Hello from the fake model.", chunk_size=5)])
    async with sdk_agent(tmp_path, SdkEditor(work), agent_env(tmp_path, fake_llm)) as (connection, editor):
        session = await connection.new_session(cwd=str(work))
        response = await connection.prompt(session_id=session.session_id, prompt=[text_block("Say hello")])
        assert response.stop_reason == "end_turn"
        # (after a capability note: this editor offers no terminals)
        assert editor.agent_text(session.session_id).endswith("Hello from the fake model.")
    assert editor.problems == []


@pytest.mark.parametrize("allow", [True, False], ids=["allowed", "refused"])
async def test_an_edit_asks_and_writes_through_the_editor(tmp_path: Path, fake_llm: FakeLLM, allow: bool) -> None:
    work = workspace(tmp_path)
    fake_llm.script(
        [
            Reply(calls=[Call("read_file", {"path": "greet.py"})]),
            Reply(calls=[Call("edit_file", {"path": "greet.py", "old_string": "hello", "new_string": "bye"})]),
            Reply("Changed the greeting." if allow else "Left it alone."),
        ]
    )
    editor = SdkEditor(work, allow=allow)
    async with sdk_agent(tmp_path, editor, agent_env(tmp_path, fake_llm)) as (connection, editor):
        session = (await connection.new_session(cwd=str(work))).session_id
        response = await connection.prompt(session_id=session, prompt=[text_block("Say bye")])
        assert response.stop_reason == "end_turn"

    [(asked, options)] = editor.permissions
    assert {option.kind for option in options} >= {"allow_once", "reject_once"}
    starts = {u.tool_call_id: u for u in editor.session_updates(session, ToolCallStart)}
    assert starts[asked.tool_call_id].kind == "edit"
    finals = [u for u in editor.session_updates(session, ToolCallProgress) if u.tool_call_id == asked.tool_call_id]
    # the diff is shown before the write, in the tool call and in the question asked about it
    for shown in (starts[asked.tool_call_id], asked):
        [diff] = [c for c in shown.content or [] if c.type == "diff"]
        assert (diff.path, diff.old_text) == (str(work / "greet.py"), "print('hello')\n")
        assert diff.new_text == "print('bye')\n"
    if allow:
        assert (work / "greet.py").read_text(encoding="utf-8") == "print('bye')\n"
        assert editor.writes == [(str(work / "greet.py"), "print('bye')\n")]
        assert finals[-1].status == "completed"
    else:
        assert (work / "greet.py").read_text(encoding="utf-8") == "print('hello')\n"
        assert editor.writes == []
        assert finals[-1].status == "failed"
    assert editor.problems == []


async def test_cancel_ends_the_turn_as_cancelled(tmp_path: Path, fake_llm: FakeLLM) -> None:
    work = workspace(tmp_path)
    held = threading.Event()
    fake_llm.script([Reply("Thinking about it for a long while", chunk_size=4, gate=held, stall_after=3)])
    try:
        async with sdk_agent(tmp_path, SdkEditor(work), agent_env(tmp_path, fake_llm)) as (connection, editor):
            session = (await connection.new_session(cwd=str(work))).session_id
            turn = asyncio.ensure_future(connection.prompt(session_id=session, prompt=[text_block("Think")]))
            await editor.wait_for(lambda: editor.agent_text(session) != "")
            await connection.cancel(session_id=session)
            async with asyncio.timeout(PROMPT_WAIT):
                response = await turn
            assert response.stop_reason == "cancelled"
    finally:
        held.set()
    assert editor.problems == []


async def test_session_load_replays_a_saved_session(tmp_path: Path, fake_llm: FakeLLM) -> None:
    work = workspace(tmp_path)
    fake_llm.script([Reply(calls=[Call("read_file", {"path": "greet.py"})]), Reply("It prints hello.")])
    async with sdk_agent(tmp_path, SdkEditor(work), agent_env(tmp_path, fake_llm)) as (connection, first):
        session = (await connection.new_session(cwd=str(work))).session_id
        await connection.prompt(session_id=session, prompt=[text_block("What does greet.py print?")])

    async with sdk_agent(tmp_path, SdkEditor(work), agent_env(tmp_path, fake_llm)) as (connection, second):
        await connection.load_session(cwd=str(work), session_id=session)
        # the SDK hands notifications to tasks of their own: the answer's text is the replay's last part
        await second.wait_for(lambda: second.agent_text(session).endswith("It prints hello."))
        replayed = second.session_updates(session)
    [user] = [u for u in replayed if isinstance(u, UserMessageChunk)]
    assert user.content.text == "What does greet.py print?"
    [read] = [u for u in replayed if isinstance(u, ToolCallStart)]
    assert read.kind == "read"
    assert second.agent_text(session).endswith("It prints hello.")
    assert first.problems == [] and second.problems == []
