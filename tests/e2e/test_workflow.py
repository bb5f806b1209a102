"""End to end, as an editor sees it: the spawned agent streams, plans, edits through fs with a diff the user
approves, runs a command in the editor's terminal, and ends the turn, all against the fake LLM server."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.editor import FakeEditor
from tests.support.fake_llm import Call, FakeLLM, Reply
from tests.support.spawn import spawned_agent

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def test_a_coding_turn_through_a_spawned_agent(tmp_path: Path, fake_llm: FakeLLM) -> None:
    work = tmp_path / "project"
    work.mkdir()
    (work / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    plan = [{"content": "Fix add", "status": "in_progress"}, {"content": "Run the check", "status": "pending"}]
    fake_llm.script(
        [
            Reply("I'll fix it.", thought="The sign is wrong.", calls=[Call("update_plan", {"entries": plan})]),
            Reply(calls=[Call("read_file", {"path": "calc.py"})]),
            Reply(calls=[Call("edit_file", {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"})]),
            Reply(calls=[Call("run_command", {"command": "python3 -c 'import calc; print(calc.add(2, 3))'"})]),
            Reply("Fixed: `add` now returns 5 for 2 + 3.", chunk_size=6),
        ]
    )
    async with spawned_agent(tmp_path, llm=fake_llm) as agent:
        client = agent.client
        editor = FakeEditor(client, root=work)
        try:
            await client.initialize(editor.capabilities())
            session = await client.new_session(str(work))
            assert await client.prompt(session, "add() is broken, fix it", timeout=60) == "end_turn"
            assert editor.unreleased() == []
        finally:
            await editor.aclose()
        assert await agent.close_stdin_and_wait() == 0

    assert (work / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert editor.writes == [(str(work / "calc.py"), "def add(a, b):\n    return a + b\n")]
    diff = editor.permission_requests[0]["toolCall"]["content"][0]
    assert diff["type"] == "diff" and diff["newText"].endswith("a + b\n")
    assert [r["toolCall"]["kind"] for r in editor.permission_requests] == ["edit", "execute"]
    terminal = next(iter(editor.terminals.values()))
    assert terminal.text().strip() == "5"
    assert client.session_updates(session, "plan")[0]["entries"][0]["content"] == "Fix add"
    assert client.agent_text(session).endswith("Fixed: `add` now returns 5 for 2 + 3.")
    assert client.session_updates(session, "agent_thought_chunk")
    assert client.session_updates(session, "usage_update")
    tool_result = [m for m in fake_llm.last_request["messages"] if m["role"] == "tool"][-1]["content"]
    assert tool_result.startswith("Exit code: 0")
