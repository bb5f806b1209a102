"""Sessions across agent processes: a new process lists, reloads (with replay) and undoes a session saved by an
earlier one, and a session killed with SIGKILL mid-turn still loads."""

from __future__ import annotations

import signal
from functools import partial
from pathlib import Path

import anyio
import pytest

from tests.support.editor import FakeEditor
from tests.support.fake_llm import Call, FakeLLM, Fault, Reply
from tests.support.spawn import poll_until, spawned_agent, stored_session

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def test_a_new_process_lists_reloads_and_undoes(tmp_path: Path, fake_llm: FakeLLM) -> None:
    work = tmp_path / "project"
    work.mkdir()
    (work / "main.py").write_text("print('hello')\n")
    fake_llm.script(
        [
            Reply(calls=[Call("read_file", {"path": "main.py"})]),
            Reply(calls=[Call("edit_file", {"path": "main.py", "old_string": "hello", "new_string": "bye"})]),
            Reply("Changed the greeting."),
        ]
    )
    async with spawned_agent(tmp_path, llm=fake_llm) as agent:
        editor = FakeEditor(agent.client, root=work)
        try:
            await agent.client.initialize(editor.capabilities())
            session = await agent.client.new_session(str(work))
            assert await agent.client.prompt(session, "Say bye instead", timeout=60) == "end_turn"
        finally:
            await editor.aclose()
    assert (work / "main.py").read_text() == "print('bye')\n"

    async with spawned_agent(tmp_path, llm=fake_llm) as agent:
        client = agent.client
        editor = FakeEditor(client, root=work)
        try:
            init = await client.initialize(editor.capabilities())
            assert init["agentCapabilities"]["loadSession"] is True
            listed = await client.request("session/list", {"cwd": str(work)})
            assert [s["sessionId"] for s in listed["sessions"]] == [session]
            assert listed["sessions"][0]["title"] == "Say bye instead"
            await client.request("session/load", {"sessionId": session, "cwd": str(work), "mcpServers": []}, timeout=30)
            replayed = client.session_updates(session)
            assert replayed[0] == {
                "sessionUpdate": "user_message_chunk",
                "content": {"type": "text", "text": "Say bye instead"},
                "messageId": replayed[0]["messageId"],
            }
            edit = next(u for u in replayed if u["sessionUpdate"] == "tool_call" and u["kind"] == "edit")
            assert edit["status"] == "completed" and edit["content"][0]["type"] == "diff"
            await client.prompt(session, "/undo", timeout=30)
            assert "restored" in client.agent_text(session)
        finally:
            await editor.aclose()
    assert (work / "main.py").read_text() == "print('hello')\n"
    assert editor.writes == [(str(work / "main.py"), "print('hello')\n")]


async def test_a_session_killed_mid_turn_still_loads(tmp_path: Path, fake_llm: FakeLLM) -> None:
    work = tmp_path / "project"
    work.mkdir()
    fake_llm.script([Fault.stall(60, after_chunks=3, reply=Reply("partial text that never ends", chunk_size=4))])
    async with spawned_agent(tmp_path, llm=fake_llm) as agent:
        client = agent.client
        await client.initialize()
        session = await client.new_session(str(work))
        async with anyio.create_task_group() as task_group:
            prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "long task"}]}
            # never answered: the agent is killed mid-turn (the bound only outlasts a slow first import)
            task_group.start_soon(partial(client.request, "session/prompt", prompt, timeout=120))
            await client.wait_for(lambda: "partial" in client.agent_text(session), timeout=90)
            # The prompt is saved in the background as the model starts; kill once it is on disk.
            await poll_until(lambda: "long task" in stored_session(tmp_path, session))
            agent.process.send_signal(signal.SIGKILL)
            with anyio.fail_after(10):
                await agent.process.wait()
            task_group.cancel_scope.cancel()

    fake_llm.script([Reply("Picking up again.")])
    async with spawned_agent(tmp_path, llm=fake_llm) as agent:
        client = agent.client
        await client.initialize()
        await client.request("session/load", {"sessionId": session, "cwd": str(work), "mcpServers": []}, timeout=30)
        assert client.session_updates(session, "user_message_chunk")[0]["content"]["text"] == "long task"
        assert await client.prompt(session, "continue", timeout=60) == "end_turn"
    sent = fake_llm.last_request["messages"]
    assert sent[1] == {"role": "user", "content": "long task"}
    assert sent[-1] == {"role": "user", "content": "continue"}
