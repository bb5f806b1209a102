"""Hooks through the protocol, with real commands: `before_tool` blocks a call before anyone is asked (its stderr
to the model), `after_edit` runs a formatter and the model hears the file changed, `after_tool` adds a failing
hook's stderr, `session_start` once, `turn_end` and `notification` with their JSON; and the walls: hooks get the
scrubbed environment and no key in their JSON, run inside the sandbox, are killed at their timeout and capped. A
project file's hooks run only once trusted: the question names each command, the answer is remembered for that
folder and those hooks, and changed hooks are asked about again."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from coder_agent.model.scripted import Call, Reply, ScriptedModel
from coder_agent.sandbox import probe
from coder_agent.store import SessionStore
from tests.support.scripted_agent import tool_agent
from tests.support.spawn import poll_until

pytestmark = pytest.mark.anyio

SECRET = "sk-hook-secret-5f1e2d3c4b5a69788796"
DUMP = "cat > {path}"
"""A hook that keeps the event it was given."""
SANDBOXED = pytest.mark.skipif(not probe.check().available, reason=f"no sandbox here: {probe.check().reason}")


def python(code: str) -> str:
    return f"python3 -c {json.dumps(code)}"


def results(model: ScriptedModel) -> list[str]:
    return [m["content"] for m in model.last_request.messages if m["role"] == "tool"]


def event(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


async def test_before_tool_blocks_a_call_before_anyone_is_asked(tmp_path: Path) -> None:
    guard = python(
        "import json, sys; call = json.load(sys.stdin); sys.stderr.write('no rm here: ' + call['input']['command']);"
        "sys.exit(1 if 'rm ' in call['input']['command'] else 0)"
    )
    hooks = {"before_tool": [{"command": guard, "tools": ["run_command"]}]}
    model = ScriptedModel(
        [
            Reply(calls=[Call("run_command", {"command": "rm keep.txt"})]),
            Reply(calls=[Call("read_file", {"path": "keep.txt"})]),
            Reply("ok"),
        ]
    )
    async with tool_agent(tmp_path, model, mode="default", hooks=hooks) as (client, editor, session, work):
        (work / "keep.txt").write_text("kept\n")
        assert await client.prompt(session, "clean up") == "end_turn"
    assert (work / "keep.txt").exists()
    assert editor.permission_requests == [], "a blocked call is never asked about"
    blocked, read = results(model)
    assert blocked.startswith("Blocked by a hook: The before_tool hook `python3 -c")
    assert "exited with 1:\nno rm here: rm keep.txt" in blocked
    assert read.endswith("kept\n") or "kept" in read, "a tool the hook does not name runs"
    [failed] = [u for u in client.session_updates(session, "tool_call_update") if u.get("status") == "failed"]
    assert failed["content"][0]["content"]["text"] == "Blocked by a before_tool hook."


async def test_after_edit_formats_and_the_model_hears_of_it_after_tool_reports_a_failure(tmp_path: Path) -> None:
    formatter = python(
        "import json, sys, pathlib; "
        "[pathlib.Path(f).write_text(pathlib.Path(f).read_text().upper()) for f in json.load(sys.stdin)['files']]"
    )
    failing = python("import sys; print('stdout is not read'); sys.stderr.write('lint: 1 problem'); sys.exit(3)")
    hooks = {"after_edit": [{"command": formatter}], "after_tool": [{"command": failing, "tools": ["write_*"]}]}
    model = ScriptedModel([Reply(calls=[Call("write_file", {"path": "a.txt", "content": "quiet\n"})]), Reply("ok")])
    async with tool_agent(tmp_path, model, mode="accept-edits", hooks=hooks) as (client, editor, session, work):
        await client.prompt(session, "write it")
    assert (work / "a.txt").read_text() == "QUIET\n"
    [result] = results(model)
    assert f"The after_edit hooks changed {work / 'a.txt'} after your edit: read it again" in result
    assert "The after_tool hook `python3 -c" in result and "exited with 3:\nlint: 1 problem" in result
    assert "\nstdout is not read" not in result, "only stderr is read"


async def test_session_start_once_turn_end_and_notification_get_their_json(tmp_path: Path) -> None:
    events = tmp_path / "work" / "events"
    hooks = {
        "session_start": [{"command": DUMP.format(path=events / "start-$$.json")}],
        "turn_end": [{"command": DUMP.format(path=events / "end.json")}],
        "notification": [{"command": DUMP.format(path=events / "notification.json")}],
    }
    model = ScriptedModel(
        [Reply("First."), Reply(calls=[Call("write_file", {"path": "n.txt", "content": "x"})]), Reply("Second.")]
    )
    async with tool_agent(tmp_path, model, mode="default", hooks=hooks) as (client, editor, session, work):
        events.mkdir()
        editor.permission_answers = ["allow_once"]
        await client.prompt(session, "one")
        await client.prompt(session, "two")
        await poll_until(lambda: (events / "notification.json").exists())  # in the background, never waited on
    [start] = list(events.glob("start-*.json"))
    assert event(start)["event"] == "session_start" and event(start)["model"] == "scripted/model"
    assert event(start)["session_id"] == session and event(start)["cwd"] == str(work)
    end = event(events / "end.json")
    assert (end["event"], end["stop_reason"], end["answer"], end["mode"]) == (
        "turn_end",
        "end_turn",
        "Second.",
        "default",
    )
    notified = event(events / "notification.json")
    assert notified["kind"] == "permission" and notified["title"] == "Write n.txt"


async def test_hooks_get_no_keys_in_their_environment_or_their_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    work = tmp_path / "work"
    hooks = {"before_tool": [{"command": f"env > {work / 'env.txt'}; cat > {work / 'call.json'}"}]}
    model = ScriptedModel([Reply(calls=[Call("run_command", {"command": f"echo {SECRET}"})]), Reply("ok")])
    async with tool_agent(tmp_path, model, mode="full-auto", hooks=hooks) as (client, editor, session, _):
        await client.prompt(session, "go")
    environment = (work / "env.txt").read_text()
    assert SECRET not in environment and "CODER_AGENT_OWNER=" in environment, "scrubbed, and marked as ours"
    call = (work / "call.json").read_text()
    assert SECRET not in call and json.loads(call)["input"]["command"].startswith("echo ")


@SANDBOXED
async def test_hooks_run_inside_the_walls_whatever_the_mode_and_are_killed_at_their_timeout(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    hooks = {
        "session_start": [{"command": f"echo escaped > {outside}"}],
        "before_tool": [{"command": "sleep 30", "timeout": 1, "tools": ["glob"]}],
        "after_tool": [
            {"command": python("import sys; sys.stderr.write('x' * 200000); sys.exit(1)"), "tools": ["grep"]}
        ],
    }
    model = ScriptedModel(
        [Reply(calls=[Call("glob", {"pattern": "*"}), Call("grep", {"pattern": "nothing"})]), Reply("ok")]
    )
    async with tool_agent(tmp_path, model, mode="full-auto", hooks=hooks) as (client, editor, session, _):
        await client.prompt(session, "look")
        notices = client.agent_text(session)
    assert not outside.exists(), "a hook writes only the workspace, even in full-auto"
    assert "session_start hook failed" in notices
    timed_out, capped = results(model)
    assert "timed out after 1 s and was killed" in timed_out
    assert len(capped) < 10_000 and "characters left out" in capped


PROJECT_HOOK = "echo ran >> {log}"


def project_file(work: Path, command: str) -> None:
    folder = work / ".coder-agent"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.toml").write_text(f"[[hooks.session_start]]\ncommand = {json.dumps(command)}\n")


async def test_a_projects_hooks_run_once_trusted_and_are_asked_about_again_when_they_change(tmp_path: Path) -> None:
    work = tmp_path / "work"
    log = work / "ran.log"
    project_file(work, PROJECT_HOOK.format(log=log))
    store = SessionStore(tmp_path / "store")

    async def session(answer: str) -> list[dict[str, Any]]:
        model = ScriptedModel([Reply("ok")])
        async with tool_agent(tmp_path, model, store=store) as (client, editor, session, _):
            editor.permission_answers = [answer]
            await client.prompt(session, "hi")
        return editor.permission_requests

    [asked] = await session("allow_always")
    text = asked["toolCall"]["content"][0]["content"]["text"]
    assert f"- session_start: `{PROJECT_HOOK.format(log=log)}`" in text, "the question names each command"
    where = "inside the sandbox" if probe.check().available else "with your account's rights"
    assert f"sets commands to run on this session's events, {where}" in text, "and says where they run"
    assert [o["optionId"] for o in asked["options"]] == ["trust-hooks", "skip-hooks"]
    assert log.read_text() == "ran\n"

    assert await session("reject_once") == [], "trusted: not asked again"
    assert log.read_text() == "ran\nran\n"

    project_file(work, PROJECT_HOOK.format(log=log) + " # changed")
    [again] = await session("reject_once")
    assert "# changed" in again["toolCall"]["content"][0]["content"]["text"]
    assert log.read_text() == "ran\nran\n", "declined: not run"
    trusted = json.loads((Path(os.environ["XDG_DATA_HOME"]) / "coder-agent" / "trusted-hooks.json").read_text())
    assert list(trusted) == [str(work.resolve())]
    assert (Path(os.environ["XDG_DATA_HOME"]) / "coder-agent" / "trusted-hooks.json").stat().st_mode & 0o777 == 0o600


@SANDBOXED
async def test_a_projects_hooks_trusted_inside_the_walls_are_asked_about_again_where_they_would_run_without(
    tmp_path: Path,
) -> None:
    """The yes was given to commands that run inside the sandbox (the question said so; a hook that runs a workspace
    script runs what the model wrote there, walled). A session in the same folder without walls would run them with
    the user's rights: it asks again, saying so, and a no runs nothing."""
    work = tmp_path / "work"
    log = work / "ran.log"
    project_file(work, PROJECT_HOOK.format(log=log))
    store = SessionStore(tmp_path / "store")

    async def session(answer: str, **fields: Any) -> list[dict[str, Any]]:
        model = ScriptedModel([Reply("ok")])
        async with tool_agent(tmp_path, model, store=store, **fields) as (client, editor, session, _):
            editor.permission_answers = [answer]
            await client.prompt(session, "hi")
        return editor.permission_requests

    [asked] = await session("allow_always")
    assert "inside the sandbox" in asked["toolCall"]["content"][0]["content"]["text"]
    assert log.read_text() == "ran\n"

    [again] = await session("reject_once", sandbox={"enabled": False})
    assert "with your account's rights" in again["toolCall"]["content"][0]["content"]["text"]
    assert log.read_text() == "ran\n", "not run outside the walls on a yes given to walled ones"
    assert await session("reject_once") == [], "the walled trust stands"
    assert log.read_text() == "ran\nran\n"
