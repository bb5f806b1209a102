"""The built-in tools end to end: the scripted model asks for tool calls, the fake editor serves fs and terminals for
real."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from coder_agent.model.scripted import Call, Reply, ScriptedModel
from tests.support.acp_client import FakeClient
from tests.support.processes import wait_gone
from tests.support.scripted_agent import tool_agent

pytestmark = pytest.mark.anyio


def calls(*tool_calls: Call) -> list[Reply]:
    """One model turn per tool call, then a final answer."""
    return [Reply(calls=[call]) for call in tool_calls] + [Reply("All done.")]


def tool_results(model: ScriptedModel) -> list[str]:
    return [m["content"] for m in model.last_request.messages if m["role"] == "tool"]


def updates_for(client: FakeClient, session: str, kind: str) -> list[dict[str, Any]]:
    return client.session_updates(session, kind)


def final_status(client: FakeClient, session: str) -> list[str]:
    """The last status reported for each tool call, in order of the calls."""
    status: dict[str, str] = {}
    for update in client.session_updates(session):
        if update["sessionUpdate"] in ("tool_call", "tool_call_update") and "status" in update:
            status[update["toolCallId"]] = update["status"]
    return list(status.values())


async def test_an_approved_edit_is_a_diff_written_through_the_editor(tmp_path: Path) -> None:
    model = ScriptedModel(
        calls(
            Call("read_file", {"path": "app.py"}),
            Call("edit_file", {"path": "app.py", "old_string": "x = 1", "new_string": "x = 2"}),
        )
    )
    async with tool_agent(tmp_path, model) as (client, editor, session, work):
        (work / "app.py").write_text("import os\nx = 1\n")
        assert await client.prompt(session, "bump x") == "end_turn"
    assert editor.writes == [(str(work / "app.py"), "import os\nx = 2\n")]
    assert (work / "app.py").read_text() == "import os\nx = 2\n"
    asked = editor.permission_requests[0]
    diff = asked["toolCall"]["content"][0]
    assert diff == {
        "type": "diff",
        "path": str(work / "app.py"),
        "oldText": "import os\nx = 1\n",
        "newText": "import os\nx = 2\n",
    }
    assert {o["kind"] for o in asked["options"]} == {"allow_once", "allow_always", "reject_once", "reject_always"}
    starts = updates_for(client, session, "tool_call")
    assert [(s["kind"], s["title"]) for s in starts] == [("read", "Read app.py"), ("edit", "Edit app.py")]
    assert starts[1]["rawInput"]["old_string"] == "x = 1"
    assert starts[1]["name"] == "edit_file"
    assert starts[1]["content"][0]["type"] == "diff", "the call shows its diff from the start"
    assert starts[1]["locations"] == [{"path": str(work / "app.py"), "line": 2}]
    edit_updates = [
        u for u in updates_for(client, session, "tool_call_update") if u["toolCallId"] == starts[1]["toolCallId"]
    ]
    assert all("status" in u for u in edit_updates), "every update says the call's status"
    assert final_status(client, session) == ["completed", "completed"]
    assert "has been edited" in tool_results(model)[1]


async def test_reads_see_unsaved_buffers_and_stale_edits_are_refused(tmp_path: Path) -> None:
    model = ScriptedModel(
        calls(
            Call("read_file", {"path": "notes.txt"}),
            Call("edit_file", {"path": "notes.txt", "old_string": "draft", "new_string": "final"}),
        )
    )
    async with tool_agent(tmp_path, model) as (client, editor, session, work):
        (work / "notes.txt").write_text("on disk\n")
        editor.set_buffer(work / "notes.txt", "draft in the buffer\n")
        real_read = editor.read_text_file
        reads = 0

        async def read_then_user_types(params: dict[str, Any]) -> dict[str, Any]:
            nonlocal reads
            reads += 1
            result = await real_read(params)
            if reads == 1:
                editor.set_buffer(work / "notes.txt", "draft changed by the user\n")
            return result

        client.handlers["fs/read_text_file"] = read_then_user_types
        await client.prompt(session, "finalize")
    results = tool_results(model)
    assert "draft in the buffer" in results[0]
    assert "changed since you last read it" in results[1]
    assert editor.writes == []
    assert final_status(client, session) == ["completed", "failed"]


async def test_edits_need_a_read_first_and_bad_edits_fail_before_asking(tmp_path: Path) -> None:
    model = ScriptedModel(
        calls(
            Call("edit_file", {"path": "a.py", "old_string": "a", "new_string": "b"}),
            Call("read_file", {"path": "a.py"}),
            Call("edit_file", {"path": "a.py", "old_string": "missing text", "new_string": "b"}),
            Call("edit_file", {"path": "a.py", "old_string": "x", "new_string": "y"}),
        )
    )
    async with tool_agent(tmp_path, model) as (client, editor, session, work):
        (work / "a.py").write_text("x\nx\n")
        await client.prompt(session, "edit")
    results = tool_results(model)
    assert "before you edit it" in results[0]
    assert "did not appear verbatim" in results[2] or "not found" in results[2].lower()
    assert "lines 1" in results[3] or "1, 2" in results[3] or "line 1" in results[3]
    assert editor.permission_requests == [], "failing edits never reach the user"


async def test_multi_edit_applies_all_or_nothing(tmp_path: Path) -> None:
    bad = [{"old_string": "one", "new_string": "1"}, {"old_string": "nope", "new_string": "2"}]
    good = [{"old_string": "one", "new_string": "1"}, {"old_string": "two", "new_string": "2"}]
    model = ScriptedModel(
        calls(
            Call("read_file", {"path": "n.txt"}),
            Call("edit_file", {"path": "n.txt", "edits": bad}),
            Call("edit_file", {"path": "n.txt", "edits": good}),
        )
    )
    async with tool_agent(tmp_path, model, mode="accept-edits") as (client, editor, session, work):
        (work / "n.txt").write_text("one two\n")
        await client.prompt(session, "numbers")
    assert editor.writes == [(str(work / "n.txt"), "1 2\n")]


async def test_write_file_creates_and_overwrite_needs_a_read(tmp_path: Path) -> None:
    model = ScriptedModel(
        calls(
            Call("write_file", {"path": "new/dir/file.md", "content": "# Title\n"}),
            Call("write_file", {"path": "old.md", "content": "replaced\n"}),
        )
    )
    async with tool_agent(tmp_path, model) as (client, editor, session, work):
        (work / "old.md").write_text("old\n")
        await client.prompt(session, "write")
    assert (work / "new/dir/file.md").read_text() == "# Title\n"
    asked = editor.permission_requests[0]["toolCall"]["content"][0]
    assert asked["type"] == "diff"
    assert asked.get("oldText") is None, "a new file has no old text"
    assert "before you overwrite it" in tool_results(model)[1]
    assert (work / "old.md").read_text() == "old\n"


@pytest.mark.parametrize(
    ("answer", "written", "asked_again", "result_says"),
    [
        ("allow_once", True, True, "has been edited"),
        ("allow_always", True, False, "has been edited"),
        ("reject_once", False, True, "rejected"),
        ("reject_always", False, False, "rejected"),
    ],
)
async def test_permission_outcomes(
    tmp_path: Path, answer: str, written: bool, asked_again: bool, result_says: str
) -> None:
    model = ScriptedModel(
        calls(
            Call("read_file", {"path": "src/a.py"}),
            Call("edit_file", {"path": "src/a.py", "old_string": "a", "new_string": "b"}),
            Call("read_file", {"path": "src/c.py"}),
            Call("edit_file", {"path": "src/c.py", "old_string": "c", "new_string": "d"}),
        )
    )
    async with tool_agent(tmp_path, model) as (client, editor, session, work):
        (work / "src").mkdir()
        (work / "src/a.py").write_text("a\n")
        (work / "src/c.py").write_text("c\n")
        editor.permission_answers = [answer, "allow_once"]
        await client.prompt(session, "edit both")
    assert ((work / "src/a.py").read_text() == "b\n") is written
    assert len(editor.permission_requests) == (2 if asked_again else 1)
    results = tool_results(model)
    assert result_says in results[1]
    if answer == "reject_always":
        assert "denied by the rule `edit:src/**`" in results[3]
        assert (work / "src/c.py").read_text() == "c\n"
    else:
        assert (work / "src/c.py").read_text() == "d\n"


async def test_cancel_while_asking_ends_the_turn_cancelled(tmp_path: Path) -> None:
    model = ScriptedModel([Reply(calls=[Call("run_command", {"command": "echo hi"})]), Reply("unused")])
    async with tool_agent(tmp_path, model) as (client, editor, session, work):
        editor.hold_permissions = True
        answers: list[str] = []

        async def prompt() -> None:
            answers.append(await client.prompt(session, "run it"))

        async with anyio.create_task_group() as task_group:
            task_group.start_soon(prompt)
            await editor.wait_for_permission_request()
            await editor.cancel(session)
    assert answers == ["cancelled"]
    assert editor.terminals == {}
    assert final_status(client, session) == ["pending"], "a call that never started gets no status after the cancel"


async def test_commands_run_in_the_editor_terminal_and_are_released(tmp_path: Path) -> None:
    model = ScriptedModel(calls(Call("run_command", {"command": "echo hello; echo oops >&2; exit 3"})))
    async with tool_agent(tmp_path, model, mode="full-auto") as (client, editor, session, work):
        await client.prompt(session, "run")
        assert editor.unreleased() == []
    assert len(editor.terminals) == 1
    terminal = next(iter(editor.terminals.values()))
    assert terminal.cwd == str(work)
    embedded = [
        c
        for u in updates_for(client, session, "tool_call_update")
        for c in u.get("content") or []
        if c["type"] == "terminal"
    ]
    assert embedded, "the terminal is shown in the tool call"
    result = tool_results(model)[0]
    assert "Exit code: 3" in result
    assert "hello" in result and "oops" in result
    assert final_status(client, session) == ["failed"]
    assert updates_for(client, session, "tool_call")[0]["kind"] == "execute"


async def test_a_command_that_times_out_is_killed_with_its_children(tmp_path: Path) -> None:
    command = "sleep 60 & sleep 60 & wait"
    model = ScriptedModel(calls(Call("run_command", {"command": command, "timeout_ms": 1000})))
    async with tool_agent(tmp_path, model, mode="full-auto") as (client, editor, session, work):
        await client.prompt(session, "hang")
        assert editor.unreleased() == []
        assert await editor.wait_no_live_pids() == []
    assert "Timed out" in tool_results(model)[0]


async def test_cancel_kills_the_running_command_and_its_children(tmp_path: Path) -> None:
    model = ScriptedModel([Reply(calls=[Call("run_command", {"command": "sleep 60 & sleep 60 & wait"})]), Reply("x")])
    async with tool_agent(tmp_path, model, mode="full-auto") as (client, editor, session, work):
        answers: list[str] = []

        async def prompt() -> None:
            answers.append(await client.prompt(session, "hang"))

        async with anyio.create_task_group() as task_group:
            task_group.start_soon(prompt)
            await client.wait_for(lambda: bool(editor.terminals))
            await client.notify("session/cancel", {"sessionId": session})
        assert answers == ["cancelled"]
        assert editor.unreleased() == []
        assert await editor.wait_no_live_pids() == []


async def test_without_fs_or_terminal_the_agent_uses_disk_and_subprocesses(tmp_path: Path) -> None:
    marker = tmp_path / "children.pid"
    model = ScriptedModel(
        calls(
            Call("read_file", {"path": "f.txt"}),
            Call("edit_file", {"path": "f.txt", "old_string": "old", "new_string": "new"}),
            Call("run_command", {"command": "cat f.txt; seq 1 200000"}),
            Call("run_command", {"command": f"sleep 60 & echo $! > {marker}; exit 0"}),
        )
    )
    # check_before_finishing off: the script ends after its edit and commands (none of which checks it)
    async with tool_agent(
        tmp_path, model, fs=False, terminal=False, mode="full-auto", check_before_finishing=False
    ) as (
        client,
        editor,
        session,
        work,
    ):
        (work / "f.txt").write_text("old\n")
        await client.prompt(session, "local")
        methods = {r["method"] for r in client.agent_requests}
        assert not any(m.startswith(("fs/", "terminal/")) for m in methods), methods
    assert (work / "f.txt").read_text() == "new\n"
    results = tool_results(model)
    assert results[2].startswith("Exit code: 0")
    assert "new" in results[2] and "200000" in results[2]
    assert "characters omitted" in results[2], "huge output is cut in the middle"
    assert len(results[2]) < 40_000
    child = int(marker.read_text())
    await wait_gone(child, timeout=5)


async def test_read_only_mode_denies_changes_without_asking(tmp_path: Path) -> None:
    model = ScriptedModel(
        calls(Call("write_file", {"path": "x.txt", "content": "x"}), Call("run_command", {"command": "ls"}))
    )
    async with tool_agent(tmp_path, model, mode="read-only") as (client, editor, session, work):
        await client.prompt(session, "try")
    assert editor.permission_requests == []
    assert all("read-only mode" in r for r in tool_results(model))
    assert not (work / "x.txt").exists()


async def test_accept_edits_mode_edits_freely_but_asks_for_commands(tmp_path: Path) -> None:
    model = ScriptedModel(
        calls(Call("write_file", {"path": "x.txt", "content": "x"}), Call("run_command", {"command": "ls"}))
    )
    async with tool_agent(tmp_path, model, mode="accept-edits") as (client, editor, session, work):
        await client.prompt(session, "go")
    assert [r["toolCall"]["kind"] for r in editor.permission_requests] == ["execute"]
    assert (work / "x.txt").read_text() == "x"


async def test_full_auto_still_asks_outside_the_workspace_and_for_symlink_escapes(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    model = ScriptedModel(
        calls(
            Call("read_file", {"path": str(outside / "secret.txt")}),
            Call("read_file", {"path": "link/secret.txt"}),
            Call("run_command", {"command": "true"}),
        )
    )
    async with tool_agent(tmp_path, model, mode="full-auto") as (client, editor, session, work):
        (work / "link").symlink_to(outside)
        editor.permission_answers = ["reject_once", "reject_once"]
        await client.prompt(session, "peek")
    assert [r["toolCall"]["kind"] for r in editor.permission_requests] == ["read", "read"]
    results = tool_results(model)
    assert "rejected" in results[0] and "rejected" in results[1]
    assert results[2].startswith("Exit code: 0")


async def test_modes_are_session_modes_and_a_config_option(tmp_path: Path) -> None:
    model = ScriptedModel()
    async with tool_agent(tmp_path, model) as (client, editor, session, work):
        response = await client.request("session/new", {"cwd": str(work), "mcpServers": []})
        assert response["modes"]["currentModeId"] == "default"
        from coder_agent.sandbox import probe

        sandboxed = {"auto"} if probe.check().available else set()  # auto only where commands can be sandboxed
        assert {m["id"] for m in response["modes"]["availableModes"]} == {
            "read-only",
            "plan",
            "default",
            "accept-edits",
            "full-auto",
            *sandboxed,
        }
        assert response["configOptions"][0]["id"] == "mode"
        assert response["configOptions"][0]["category"] == "mode"
        assert await client.request("session/set_mode", {"sessionId": session, "modeId": "full-auto"}) == {}
        result = await client.request(
            "session/set_config_option", {"sessionId": session, "configId": "mode", "value": "read-only"}
        )
        assert result["configOptions"][0]["currentValue"] == "read-only"
        bad = await client.request_raw("session/set_mode", {"sessionId": session, "modeId": "yolo"})
        assert bad["error"]["code"] == -32602
    modes = [u["currentModeId"] for u in updates_for(client, session, "current_mode_update")]
    assert modes == ["full-auto", "read-only"]
    options = updates_for(client, session, "config_option_update")
    assert options[-1]["configOptions"][0]["currentValue"] == "read-only"


async def test_plan_updates_reach_the_client(tmp_path: Path) -> None:
    entries = [
        {"content": "Read the code", "status": "completed"},
        {"content": "Fix the bug", "status": "in_progress", "priority": "high"},
    ]
    model = ScriptedModel(calls(Call("update_plan", {"entries": entries})))
    async with tool_agent(tmp_path, model) as (client, editor, session, work):
        await client.prompt(session, "plan")
    plan = updates_for(client, session, "plan")[-1]["entries"]
    assert plan == [
        {"content": "Read the code", "status": "completed", "priority": "medium"},
        {"content": "Fix the bug", "status": "in_progress", "priority": "high"},
    ]
    assert "1 of 2" in tool_results(model)[0]


async def test_grep_and_glob_respect_gitignore(tmp_path: Path) -> None:
    model = ScriptedModel(
        calls(
            Call("grep", {"pattern": "needle", "output_mode": "content"}),
            Call("glob", {"pattern": "**/*.py"}),
        )
    )
    async with tool_agent(tmp_path, model) as (client, editor, session, work):
        (work / ".gitignore").write_text("build/\n")
        (work / "build").mkdir()
        (work / "build" / "gen.py").write_text("needle\n")
        (work / "src").mkdir()
        (work / "src" / "main.py").write_text("x = 1\nneedle = 2\n")
        await client.prompt(session, "find")
    grep_result, glob_result = tool_results(model)
    assert "src/main.py:2:needle = 2" in grep_result
    assert "build" not in grep_result
    assert "src/main.py" in glob_result and "build" not in glob_result
    assert [s["kind"] for s in updates_for(client, session, "tool_call")] == ["search", "search"]


async def test_binary_and_non_utf8_files_are_refused_and_untouched(tmp_path: Path) -> None:
    model = ScriptedModel(
        calls(
            Call("read_file", {"path": "image.bin"}),
            Call("read_file", {"path": "latin1.txt"}),
            Call("write_file", {"path": "latin1.txt", "content": "clobbered"}),
        )
    )
    async with tool_agent(tmp_path, model, mode="full-auto") as (client, editor, session, work):
        (work / "image.bin").write_bytes(b"\x7fELF\x02\x01\x00\x00")  # a PNG is read as an image: see test_images
        (work / "latin1.txt").write_bytes("café\n".encode("latin-1"))
        await client.prompt(session, "read")
    results = tool_results(model)
    assert all("not a UTF-8 text file" in r for r in results)
    assert (work / "latin1.txt").read_bytes() == "café\n".encode("latin-1")
    assert editor.reads == []


async def test_invalid_arguments_and_unknown_tools_are_results(tmp_path: Path) -> None:
    model = ScriptedModel(calls(Call("read_file", {"offset": 3}), Call("read_file", "{not json"), Call("teleport", {})))
    async with tool_agent(tmp_path, model) as (client, editor, session, work):
        await client.prompt(session, "oops")
    results = tool_results(model)
    assert "path" in results[0] and "Invalid arguments" in results[0]
    assert "Invalid arguments" in results[1]
    assert "no tool named 'teleport'" in results[2]


async def test_tool_schemas_sent_to_the_model(tmp_path: Path) -> None:
    model = ScriptedModel([Reply("hi")])
    async with tool_agent(tmp_path, model) as (client, editor, session, work):
        await client.prompt(session, "hi")
    tools = {t["function"]["name"]: t["function"] for t in model.last_request.tools}
    names = "read_file write_file edit_file glob grep diagnostics run_command fetch update_plan ask_user"
    names += " job_output job_wait job_input job_kill job_list task propose_plan"
    assert set(tools) == set(names.split())
    for spec in tools.values():
        assert spec["description"]
        assert "$ref" not in json.dumps(spec["parameters"])
        assert "title" not in spec["parameters"]
    assert tools["edit_file"]["parameters"]["required"] == ["path"]
    assert tools["run_command"]["parameters"]["required"] == ["command"]


async def test_config_deny_rules_block_commands(tmp_path: Path) -> None:
    model = ScriptedModel(calls(Call("run_command", {"command": "git push --force"})))
    async with tool_agent(tmp_path, model, mode="full-auto", permissions={"deny": ["execute:git push"]}) as (
        client,
        editor,
        session,
        work,
    ):
        await client.prompt(session, "push")
    assert "denied by the rule `execute:git push`" in tool_results(model)[0]
    assert editor.terminals == {}


async def test_fetch_reads_a_page_as_markdown_after_asking(tmp_path: Path) -> None:
    import http.server
    import threading

    page = (
        b"<html><head><title>Frob docs</title><style>x{}</style></head>"
        b"<body><h1>Docs</h1><p>Use <b>frob()</b>, see <a href='/api'>the API</a>.</p></body></html>"
    )

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/docs"
        model = ScriptedModel(calls(Call("fetch", {"url": url}), Call("fetch", {"url": "file:///etc/passwd"})))
        async with tool_agent(tmp_path, model) as (client, editor, session, work):
            await client.prompt(session, "read the docs")
    finally:
        server.shutdown()
        server.server_close()
    first, second = tool_results(model)
    assert f"Title: Frob docs\n\n# Docs\n\nUse **frob()**, see [the API]({url[: -len('/docs')]}/api)." in first
    assert "x{}" not in first
    assert "Only http:// and https://" in second
    assert [r["toolCall"]["kind"] for r in editor.permission_requests] == ["fetch"], "a bad URL fails before asking"


async def test_commands_do_not_see_the_model_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-leak")
    monkeypatch.setenv("CODER_AGENT_API_KEY", "sk-nor-this")
    monkeypatch.setenv("HARMLESS_SETTING", "visible")
    model = ScriptedModel(calls(Call("run_command", {"command": "env"})))
    async with tool_agent(tmp_path, model, terminal=False, mode="full-auto") as (client, editor, session, work):
        await client.prompt(session, "env")
    output = tool_results(model)[0]
    assert "HARMLESS_SETTING=visible" in output
    assert "sk-should-not-leak" not in output and "sk-nor-this" not in output
