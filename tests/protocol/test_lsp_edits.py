"""Language servers in a session, on the scripted model with a fake editor: after an edit the model reads the new
problems the project's server reports (not those already there) and the tool call shows them; the `diagnostics`
tool lists a file's problems and those of every file checked; the environment update counts the errors when they
changed; the server runs inside the session's walls, with no keys. The server is a real one built with pygls
(`tests/support/lsp_servers`), which publishes its diagnostics."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from coder_agent.model.scripted import Call, Reply, ScriptedModel
from coder_agent.sandbox import probe
from tests.support.editor_lsp import SERVER_ID, EditorLanguageServers
from tests.support.lsp_servers import MARKED
from tests.support.scripted_agent import tool_agent

pytestmark = pytest.mark.anyio

LSP: dict[str, Any] = {
    "enabled": True,
    "servers": {"marked": {"command": [sys.executable, str(MARKED)], "extensions": ["mk"]}},
    "start_timeout": 120,
    "wait": 30,
}


def tool_results(model: ScriptedModel) -> list[str]:
    return [m["content"] for m in model.last_request.messages if m["role"] == "tool"]


def shown_texts(client: Any, session: str) -> list[str]:
    return [
        c["content"]["text"]
        for u in client.session_updates(session, "tool_call_update")
        for c in u.get("content") or []
        if c["type"] == "content"
    ]


async def test_an_edit_reports_the_new_problems_and_the_call_shows_them(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            Reply(calls=[Call("read_file", {"path": "a.mk"})]),
            Reply(calls=[Call("edit_file", {"path": "a.mk", "old_string": "DEF b", "new_string": "WARN"})]),
            Reply(calls=[Call("diagnostics", {"path": "a.mk"})]),
            Reply(calls=[Call("diagnostics", {})]),
            Reply("Done."),
        ]
    )
    async with tool_agent(tmp_path, model, mode="accept-edits", lsp=LSP) as (client, editor, session, work):
        (work / "a.mk").write_text("ERROR\nDEF b\nUSES b\n")
        await client.prompt(session, "go")
    _, edited, file_report, all_report = tool_results(model)
    assert "marked reports 2 new problem(s) in a.mk after this edit:" in edited
    assert "a.mk:2:1: warning [W1] a warning is marked here" in edited
    assert "a.mk:3:1: error [E2] 'b' is not defined" in edited
    assert "[E1]" not in edited, "the error that was already there is not the edit's"
    shown = "\n".join(shown_texts(client, session))
    assert "Language server (marked): 2 new in a.mk" in shown
    assert "a.mk:3:1: error [E2] 'b' is not defined" in shown
    assert "marked reports 2 error(s) and 1 warning(s) in a.mk:" in file_report
    assert "2 error(s) and 1 warning(s) in 1 of the 1 file(s) checked." in all_report


async def test_the_error_count_reaches_the_next_turn_when_it_changed(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            Reply(calls=[Call("write_file", {"path": "b.mk", "content": "ERROR\nERROR\n"})]),
            Reply("Written."),
            Reply("Nothing to do."),
        ]
    )
    async with tool_agent(tmp_path, model, mode="accept-edits", lsp=LSP) as (client, editor, session, work):
        await client.prompt(session, "write it")
        await client.prompt(session, "and now?")
    update = next(
        m["content"]
        for m in model.last_request.messages
        if m["role"] == "user" and "Environment update" in str(m["content"])
    )
    assert "Errors the language servers report: 2 in 1 of the 1 file(s) checked so far" in update


async def test_without_servers_the_tool_checks_the_syntax_and_says_so(tmp_path: Path) -> None:
    model = ScriptedModel([Reply(calls=[Call("diagnostics", {"path": "c.py"})]), Reply("Done.")])
    async with tool_agent(tmp_path, model) as (client, editor, session, work):
        (work / "c.py").write_text("def f(:\n    pass\n")
        await client.prompt(session, "check")
    [said] = tool_results(model)
    assert "Syntax check (python, tree-sitter)" in said
    assert "no language server checks it" in said


@pytest.mark.skipif(not probe.check().available, reason="the sandbox cannot work on this machine")
async def test_the_server_runs_inside_the_walls_without_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outside = tmp_path / "outside.txt"
    monkeypatch.setenv("MARKED_MODE", "env")
    monkeypatch.setenv("MARKED_ESCAPE", str(outside))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-for-servers")
    model = ScriptedModel([Reply(calls=[Call("write_file", {"path": "d.mk", "content": "fine\n"})]), Reply("Done.")])
    async with tool_agent(tmp_path, model, mode="accept-edits", lsp=LSP) as (client, editor, session, work):
        await client.prompt(session, "write")
    [written] = tool_results(model)
    assert "keys in my environment:" in written
    assert "ANTHROPIC_API_KEY" not in written
    assert "could not write outside" in written
    assert not outside.exists(), "the walls hold for the agent's own language server"


async def test_the_editors_own_server_is_asked_before_and_after_the_edit(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            Reply(calls=[Call("read_file", {"path": "e.mk"})]),
            Reply(calls=[Call("edit_file", {"path": "e.mk", "old_string": "DEF c", "new_string": "ERROR"})]),
            Reply(calls=[Call("diagnostics", {"path": "e.mk"})]),
            Reply("Done."),
        ]
    )
    lsp = {"enabled": True}  # no server of our own checks .mk files: only the editor's can
    options: dict[str, Any] = {"mode": "accept-edits", "lsp": lsp, "client_meta": {"lsp": {}}}
    async with tool_agent(tmp_path, model, **options) as (client, editor, session, work):
        servers = EditorLanguageServers(editor, work)
        servers.extra_servers.append(
            {
                "serverId": "other@elsewhere",
                "name": "other",
                "workspacePath": str(tmp_path / "another-project"),
                "fileExtensions": ["mk"],
                "state": "running",
                "capabilities": {"diagnosticProvider": {}},
            }
        )
        (work / "e.mk").write_text("DEF c\nUSES c\n")
        await client.prompt(session, "go")
    _, edited, checked = tool_results(model)
    assert "marked (the editor's) reports 2 new problem(s) in e.mk after this edit:" in edited
    assert "e.mk:1:1: error [E1] an error is marked here" in edited
    assert "e.mk:2:1: error [E2] 'c' is not defined" in edited
    assert "marked (the editor's) reports 2 error(s) and 0 warning(s) in e.mk:" in checked
    uri = (work / "e.mk").as_uri()
    assert [r["serverId"] for r in servers.requests] == [SERVER_ID] * 3, "before the write, after it, and the tool"
    assert all(r["sessionId"] == session for r in servers.requests)
    assert all(r["method"] == "textDocument/diagnostic" for r in servers.requests)
    assert all(r["params"] == {"textDocument": {"uri": uri}} for r in servers.requests)
