"""The check after every edit, on the scripted model with a fake editor: the syntax errors an edit introduced are
reported (never those already there) and the edit stands; a configured checker runs locally, without keys, bounded
in time; a project file cannot name one."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from coder_agent.model.scripted import Call, Reply, ScriptedModel
from tests.support.scripted_agent import tool_agent

pytestmark = pytest.mark.anyio


def calls(*tool_calls: Call) -> list[Reply]:
    return [Reply(calls=[call]) for call in tool_calls] + [Reply("Done.")]


def results(model: ScriptedModel) -> list[str]:
    return [m["content"] for m in model.last_request.messages if m["role"] == "tool"]


def edit(path: str, old: str, new: str) -> Call:
    return Call("edit_file", {"path": path, "old_string": old, "new_string": new})


async def test_an_edit_that_breaks_the_syntax_is_made_and_reported(tmp_path: Path) -> None:
    model = ScriptedModel(
        calls(
            Call("read_file", {"path": "app.py"}),
            edit("app.py", "return 1", "return (1"),
            Call("read_file", {"path": "old.py"}),
            edit("old.py", "x = 1", "x = 2"),
        )
    )
    async with tool_agent(tmp_path, model, mode="accept-edits") as (client, editor, session, work):
        (work / "app.py").write_text("def f():\n    return 1\n")
        (work / "old.py").write_text("def broken(:\n    pass\nx = 1\n")
        await client.prompt(session, "go")
    broke, kept = results(model)[1], results(model)[3]
    assert "Syntax check (python, tree-sitter): the change introduced 1 syntax error in app.py:" in broke
    assert "     2\t    return (1" in broke
    assert (work / "app.py").read_text() == "def f():\n    return (1\n", "the edit stands: the model decides"
    assert "Syntax check" not in kept, "an error that was already there is not the edit's"
    shown = [
        c["content"]["text"]
        for u in client.session_updates(session, "tool_call_update")
        for c in u.get("content") or []
        if c["type"] == "content"
    ]
    assert "Syntax check: 1 error(s) introduced in app.py (line 2)." in shown


async def test_a_patch_and_a_new_file_are_checked_too(tmp_path: Path) -> None:
    patch = "\n".join(
        [
            "*** Begin Patch",
            "*** Add File: bad.json",
            '+{"a": [1, 2}',
            "*** Add File: good.json",
            '+{"a": 1}',
            "*** End Patch",
        ]
    )
    model = ScriptedModel(
        calls(Call("apply_patch", {"input": patch}), Call("write_file", {"path": "w.ts", "content": "let x = ;\n"}))
    )
    async with tool_agent(tmp_path, model, mode="accept-edits") as (client, editor, session, work):
        await client.prompt(session, "go")
    patched, written = results(model)
    assert "Syntax check (json, tree-sitter)" in patched and "in bad.json" in patched and "good.json:" not in patched
    assert "Syntax check (typescript, tree-sitter)" in written
    assert (work / "bad.json").exists() and (work / "w.ts").exists()


async def test_the_syntax_check_can_be_turned_off(tmp_path: Path) -> None:
    model = ScriptedModel(calls(Call("write_file", {"path": "a.py", "content": "def (\n"})))
    async with tool_agent(tmp_path, model, mode="accept-edits", syntax_check=False) as (client, editor, session, work):
        await client.prompt(session, "go")
    assert "Syntax check" not in results(model)[0]


async def test_a_checker_runs_locally_without_keys_and_its_output_goes_to_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODER_AGENT_API_KEY", "sk-very-secret-key")
    script = (
        "import os, sys; print('key=' + os.environ.get('CODER_AGENT_API_KEY', ''));"
        " print(open(sys.argv[1]).read().strip()); sys.exit(3)"
    )
    checker = f"{shlex.quote(sys.executable)} -c {shlex.quote(script)} {{file}}"
    model = ScriptedModel(calls(Call("write_file", {"path": "a.py", "content": "x = 1\n"})))
    async with tool_agent(tmp_path, model, mode="accept-edits", checkers={"python": checker}) as (
        client,
        editor,
        session,
        work,
    ):
        await client.prompt(session, "go")
    (result,) = results(model)
    assert "exited with 3:\nkey=\nx = 1" in result, "the file as written, and no key in its environment"
    assert "sk-very-secret-key" not in result
    assert editor.terminals == {}, "the agent's own check never runs in the editor's terminal"


async def test_a_checker_is_killed_at_its_timeout_and_a_clean_one_says_so(tmp_path: Path) -> None:
    # Two sessions: the short deadline only ever meets a checker that never finishes; the clean checker runs under
    # the default one, so a loaded machine cannot make it time out too.
    (tmp_path / "slow").mkdir()
    (tmp_path / "clean").mkdir()
    slow_model = ScriptedModel(calls(Call("write_file", {"path": "a.py", "content": "x = 1\n"})))
    slow = {"python": "sleep 30"}
    async with tool_agent(tmp_path / "slow", slow_model, mode="accept-edits", checkers=slow, checker_timeout=0.5) as (
        client,
        _,
        session,
        _,
    ):
        await client.prompt(session, "go")
    clean_model = ScriptedModel(calls(Call("write_file", {"path": "b.rs", "content": "fn main() {}\n"})))
    async with tool_agent(tmp_path / "clean", clean_model, mode="accept-edits", checkers={"rust": "true {file}"}) as (
        client,
        _,
        session,
        _,
    ):
        await client.prompt(session, "go")
    [timed_out], [clean] = results(slow_model), results(clean_model)
    assert "Checker `sleep 30` timed out after 0.5 s and was killed." in timed_out
    assert "Checker `true " in clean and ": no problems." in clean


async def test_a_project_file_cannot_name_a_checker(tmp_path: Path) -> None:
    model = ScriptedModel(calls(Call("write_file", {"path": "a.py", "content": "x = 1\n"})))
    async with tool_agent(tmp_path, model, mode="accept-edits", open_session=False) as (client, editor, _, work):
        (work / ".coder-agent").mkdir()
        (work / ".coder-agent" / "config.toml").write_text('[checkers]\npython = "touch pwned"\n')
        session = await client.new_session(str(work))
        await client.prompt(session, "go")
    assert "Checker" not in results(model)[0]
    assert not (work / "pwned").exists()
