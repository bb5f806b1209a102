"""What other people's clients ran into, the agent's side of it (issue 22): prompts of several text blocks,
capability notes in the middle of an answer, untitled empty sessions in the list, malformed client answers, and
what the agent advertises."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from coder_agent.model.scripted import Call, Reply, ScriptedModel
from coder_agent.store import SessionStore
from tests.support.scripted_agent import scripted_agent, tool_agent

pytestmark = pytest.mark.anyio


def text(value: str) -> dict[str, str]:
    return {"type": "text", "text": value}


async def test_text_blocks_are_paragraphs_and_a_link_stays_in_its_sentence(tmp_path: Path) -> None:
    model = ScriptedModel([Reply("ok"), Reply("ok")])
    async with scripted_agent(tmp_path, model) as (client, session, _):
        paragraphs = [text("First paragraph."), text("Second paragraph.")]
        await client.request("session/prompt", {"sessionId": session, "prompt": paragraphs})
        first = model.last_request.messages[-1]["content"]
        mention = [
            text("Compare "),
            {"type": "resource_link", "uri": "file:///w/a.rs", "name": "a.rs"},
            text(" with this:"),
            text("fn main() {}"),
        ]
        await client.request("session/prompt", {"sessionId": session, "prompt": mention})
        second = model.last_request.messages[-1]["content"]
    assert first == "First paragraph.\n\nSecond paragraph."
    assert second == "Compare [a.rs](file:///w/a.rs) with this:\n\nfn main() {}"


async def test_a_capability_note_is_its_own_message_before_the_answer(tmp_path: Path) -> None:
    model = ScriptedModel(
        [Reply("I will read it.", calls=[Call("read_file", {"path": "a.txt"})]), Reply("It says hi."), Reply("Again.")]
    )
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "a.txt").write_text("hi\n")
    no_fs_no_notices = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
    async with scripted_agent(tmp_path, model, capabilities=no_fs_no_notices) as (client, session, _):
        await client.prompt(session, "what does a.txt say?")
        await client.prompt(session, "and again?")
    said = client.agent_messages(session)
    assert said[0].startswith("_Files are read and written on disk, not through the editor_")
    assert "Commands run as local processes" in said[0]
    assert said[0].endswith("\n\n---\n\n"), "a rule ends it: a client that runs messages together shows where"
    assert said[1:] == ["I will read it.", "It says hi.", "Again."], "nothing lands in the model's answer"


async def test_a_client_with_notices_hears_of_the_fallback_when_it_is_used(tmp_path: Path) -> None:
    model = ScriptedModel([Reply("Reading.", calls=[Call("read_file", {"path": "a.txt"})]), Reply("Done.")])
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "a.txt").write_text("hi\n")
    capabilities = {"fs": {"readTextFile": False, "writeTextFile": False}, "session": {"notices": {}}}
    async with scripted_agent(tmp_path, model, capabilities=capabilities) as (client, session, _):
        await client.prompt(session, "read it")
    assert client.agent_messages(session) == ["Reading.", "Done."]
    [notice] = client.session_updates(session, "notice")
    assert notice["title"] == "Files are read and written on disk, not through the editor"


async def test_sessions_never_prompted_are_left_out_of_the_list_and_still_load(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "store")
    async with scripted_agent(tmp_path, ScriptedModel([Reply("hi")]), store=store) as (client, used, _):
        await client.prompt(used, "hello")
        await client.request("session/close", {"sessionId": used})  # saved: the last save follows the response
        empty = await client.new_session(str(tmp_path / "work"))
        listed = await client.request("session/list", {})
        await client.request("session/close", {"sessionId": empty})
        await client.request("session/load", {"sessionId": empty, "cwd": str(tmp_path / "work"), "mcpServers": []})
    assert [s["sessionId"] for s in listed["sessions"]] == [used]


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ({"exitCode": "zero"}, "exitCode"),
        (["not", "an", "object"], "the answer"),
    ],
)
async def test_a_malformed_terminal_answer_says_what_was_wrong(tmp_path: Path, answer: Any, problem: str) -> None:
    model = ScriptedModel([Reply(calls=[Call("run_command", {"command": "echo hi"}, id="c1")]), Reply("ok")])
    async with tool_agent(tmp_path, model, mode="full-auto") as (client, editor, session, work):

        async def malformed(params: dict[str, Any]) -> Any:
            await editor.terminal_wait_for_exit(params)
            return answer

        client.handlers["terminal/wait_for_exit"] = malformed
        client.lenient_answers.add("terminal/wait_for_exit")
        await client.prompt(session, "run it")
        assert editor.unreleased() == []
    result = next(m for m in model.last_request.messages if m["role"] == "tool")["content"]
    assert "The editor's answer to terminal/wait_for_exit was malformed" in result
    assert problem in result
    assert "unexpectedly" not in result
    shown = client.session_updates(session, "tool_call_update")[-1]
    assert shown["status"] == "failed"
    assert "terminal/wait_for_exit was malformed" in shown["content"][0]["content"]["text"]


async def test_additional_directories_are_advertised_and_used(tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    async with scripted_agent(tmp_path, ScriptedModel(), open_session=False) as (client, _, _):
        capabilities = (await client.initialize())["agentCapabilities"]["sessionCapabilities"]
        params = {"cwd": str(tmp_path / "work"), "mcpServers": [], "additionalDirectories": [str(extra)]}
        session = (await client.request("session/new", params))["sessionId"]
    assert capabilities["additionalDirectories"] == {}
    assert session
