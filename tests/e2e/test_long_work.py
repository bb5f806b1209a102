"""Long work through a spawned agent, as an editor sees it: a server started as a background job, fetched, its log
read and the job killed; three sub-agents side by side, one cancelled on its own; plan mode approved into accept
edits; and an agent killed while a sub-agent and a job run, which leaves nothing running and whose session loads
with the interrupted calls repaired and the sub-agent ended as disconnected."""

from __future__ import annotations

import re
import signal
import socket
import threading
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.editor import FakeEditor
from tests.support.fake_llm import Call, FakeLLM, Reply
from tests.support.processes import alive
from tests.support.spawn import poll_until, spawned_agent, stored_session
from tests.support.user_config import LANGUAGE_SERVERS_OFF

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

WAIT = 90


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def tool_results(body: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in body["messages"] if m["role"] == "tool"]


def task_of(body: dict[str, Any]) -> str | None:
    """The task of a sub-agent's request (None for the parent's)."""
    messages = body["messages"]
    if "a sub-agent of coder-agent" not in str(messages[0]["content"]):
        return None
    return str(messages[1]["content"])


async def test_a_background_server_is_fetched_its_log_read_and_killed(tmp_path: Path, fake_llm: FakeLLM) -> None:
    work = tmp_path / "project"
    work.mkdir()
    (work / "index.html").write_text("<html><body><h1>Hello from the job</h1></body></html>")
    port = free_port()
    serve = f"python3 -u -m http.server {port} --bind 127.0.0.1"
    fake_llm.script(
        [
            Reply.tool(
                "run_command",
                {"command": serve, "background": True, "outside_sandbox": True, "justification": "fetch must reach it"},
            ),
            Reply.tool("job_wait", {"job_id": 1, "until": "Serving HTTP", "timeout_ms": 30000}),
            Reply.tool("fetch", {"url": f"http://127.0.0.1:{port}/index.html"}),
            Reply.tool("job_output", {"job_id": 1}),
            Reply.tool("job_kill", {"job_id": 1}),
            Reply("The server answered and is stopped."),
        ]
    )
    async with spawned_agent(tmp_path, llm=fake_llm) as agent:
        client = agent.client
        editor = FakeEditor(client, root=work)
        try:
            await client.initialize(editor.capabilities())
            session = await client.new_session(str(work))
            assert await client.prompt(session, "serve the folder and check it", timeout=WAIT) == "end_turn"
            assert editor.unreleased() == [], "the job's terminal is released once it ended"
        finally:
            await editor.aclose()
    started, waited, fetched, log, killed = tool_results(fake_llm.last_request)
    assert started.startswith("Started job 1 (`python3 -u -m http.server")
    assert "Serving HTTP" in started + waited
    assert "Hello from the job" in fetched
    assert '"GET /index.html HTTP/1.1" 200' in log
    assert "killed" in killed
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass
    terminal = next(iter(editor.terminals.values()))
    assert terminal.argv[-1] == serve or serve in " ".join(terminal.argv)


async def test_in_auto_a_sandboxed_dev_server_is_reached_by_the_sessions_next_command(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    """The everyday loop without a question: a dev server as a sandboxed job, the tests against it in another
    sandboxed command; the server is the session's own, out of the machine's reach."""
    work = tmp_path / "project"
    work.mkdir()
    (work / "index.html").write_text("<h1>Hello from the sandboxed job</h1>")
    port = free_port()
    get = f"python3 -c 'import urllib.request as u; print(u.urlopen(\"http://127.0.0.1:{port}/index.html\").read())'"
    fake_llm.script(
        [
            Reply.tool(
                "run_command", {"command": f"python3 -u -m http.server {port} --bind 127.0.0.1", "background": True}
            ),
            Reply.tool("job_wait", {"job_id": 1, "until": "Serving HTTP", "timeout_ms": 30000}),
            Reply.tool("run_command", {"command": get}),
            Reply("It serves the page."),
            Reply.tool("job_kill", {"job_id": 1}),
            Reply("Stopped."),
        ]
    )
    async with spawned_agent(tmp_path, llm=fake_llm) as agent:
        client = agent.client
        editor = FakeEditor(client, root=work)
        try:
            await client.initialize(editor.capabilities())
            session = await client.new_session(str(work))
            await client.request("session/set_mode", {"sessionId": session, "modeId": "auto"})
            async with anyio.create_task_group() as group:

                async def prompt() -> None:
                    assert await client.prompt(session, "serve it and check", timeout=WAIT) == "end_turn"

                group.start_soon(prompt)
                await client.wait_for(lambda: "It serves the page." in client.agent_text(session), timeout=WAIT)
                with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port), timeout=2):
                    pass  # while the job still runs: its loopback is not the machine's
            fetched = tool_results(fake_llm.last_request)[2]
            assert await client.prompt(session, "stop it", timeout=WAIT) == "end_turn"  # no job left at the end
        finally:
            await editor.aclose()
    assert editor.permission_requests == []
    assert "Hello from the sandboxed job" in fetched, fetched


async def test_three_sub_agents_side_by_side_one_cancelled_on_its_own(tmp_path: Path, fake_llm: FakeLLM) -> None:
    work = tmp_path / "project"
    work.mkdir()
    released = threading.Event()
    tasks = [
        Call("task", {"description": "Find one", "prompt": "one"}),
        Call("task", {"description": "Find two", "prompt": "two"}),
        Call("task", {"description": "Stuck one", "prompt": "stuck"}),
    ]

    def answer(body: dict[str, Any]) -> Reply:
        task = task_of(body)
        if task is None:
            return Reply("Two found, one stopped.") if tool_results(body) else Reply(calls=tasks)
        if task == "stuck":
            return Reply("never", gate=released, stall_after=1)
        return Reply(f"{task} is in {task}.py:1")

    fake_llm.default = answer
    capabilities = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True, "subagents": {}}
    async with spawned_agent(tmp_path, llm=fake_llm) as agent:
        client = agent.client
        await client.initialize(capabilities)
        session = await client.new_session(str(work))
        try:
            async with anyio.create_task_group() as group:

                async def prompt() -> None:
                    assert await client.prompt(session, "find them", timeout=WAIT) == "end_turn"

                group.start_soon(prompt)

                def ended() -> list[dict[str, Any]]:
                    return [u for u in client.session_updates(session, "subagent_update") if "state" in u]

                await client.wait_for(lambda: len(ended()) == 2, timeout=WAIT)
                children = [u for u in client.session_updates(session, "subagent_update") if "name" in u]
                stuck = next(c["subagentSessionId"] for c in children if c["task"] == "Stuck one")
                assert stuck not in {u["subagentSessionId"] for u in ended()}
                await client.notify("session/cancel", {"sessionId": stuck})
        finally:
            released.set()
    states = {
        u["subagentSessionId"]: u["state"] for u in client.session_updates(session, "subagent_update") if "state" in u
    }
    assert sorted(states.values()) == ["cancelled", "completed", "completed"] and states[stuck] == "cancelled"
    one, two, cancelled = tool_results(fake_llm.last_request)
    assert (one, two) == ("one is in one.py:1", "two is in two.py:1")
    assert cancelled == "The user stopped this sub-agent before it finished."


async def test_plan_mode_approved_into_accept_edits(tmp_path: Path, fake_llm: FakeLLM) -> None:
    work = tmp_path / "project"
    work.mkdir()
    (work / "app.py").write_text("DEBUG = True\n")
    config = tmp_path / "xdg-config" / "coder-agent" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('default_mode = "plan"\n' + LANGUAGE_SERVERS_OFF)
    plan = "## Plan\n\nTurn DEBUG off in app.py."
    fake_llm.script(
        [
            Reply.tool("read_file", {"path": "app.py"}),
            Reply.tool("propose_plan", {"plan": plan, "steps": ["Set DEBUG = False"]}),
            Reply.tool("edit_file", {"path": "app.py", "old_string": "True", "new_string": "False"}),
            Reply("DEBUG is off."),
        ]
    )
    async with spawned_agent(tmp_path, llm=fake_llm) as agent:
        client = agent.client
        editor = FakeEditor(client, root=work)
        editor.permission_answers = ["option:approve:accept-edits"]
        try:
            await client.initialize(editor.capabilities())
            response = await client.request("session/new", {"cwd": str(work), "mcpServers": []})
            session = response["sessionId"]
            assert response["modes"]["currentModeId"] == "plan"
            assert await client.prompt(session, "turn debug off", timeout=WAIT) == "end_turn"
        finally:
            await editor.aclose()
    assert (work / "app.py").read_text() == "DEBUG = False\n"
    assert len(editor.permission_requests) == 1, "after the approval, the edit ran without asking"
    assert [u["currentModeId"] for u in client.session_updates(session, "current_mode_update")] == ["accept-edits"]
    assert client.session_updates(session, "plan")[0]["entries"][0]["content"] == "Set DEBUG = False"


async def test_an_agent_killed_while_a_sub_agent_and_a_job_run(tmp_path: Path, fake_llm: FakeLLM) -> None:
    work = tmp_path / "project"
    work.mkdir()
    never = threading.Event()

    def answer(body: dict[str, Any]) -> Reply:
        if task_of(body) is not None:
            return Reply("…", gate=never, stall_after=1)
        if tool_results(body):
            return Reply("Carrying on.")
        job = Call("run_command", {"command": 'echo "pid=$$"; exec sleep 600', "background": True})
        return Reply(calls=[job, Call("task", {"description": "Look long", "prompt": "look"})])

    fake_llm.default = answer
    no_terminal = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False, "subagents": {}}
    try:
        async with spawned_agent(
            tmp_path, llm=fake_llm, env={"CODER_AGENT_CONFIG": str(_full_auto(tmp_path))}
        ) as agent:
            client = agent.client
            await client.initialize(no_terminal)
            session = await client.new_session(str(work))
            async with anyio.create_task_group() as group:
                prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}
                group.start_soon(partial(client.request, "session/prompt", prompt, timeout=120))
                await client.wait_for(lambda: bool(client.session_updates(session, "subagent_update")), timeout=WAIT)
                shown = str(client.session_updates(session, "tool_call_update"))
                pid = int(re.search(r"pid=(\d+)", shown).group(1))  # type: ignore[union-attr]
                await poll_until(lambda: "subagent_update" in stored_session(tmp_path, session))
                agent.process.send_signal(signal.SIGKILL)
                with anyio.fail_after(10):
                    await agent.process.wait()
                group.cancel_scope.cancel()
        await poll_until(lambda: not alive(pid), timeout=20)
    finally:
        never.set()
    async with spawned_agent(tmp_path, llm=fake_llm) as agent:
        client = agent.client
        await client.initialize(no_terminal)
        await client.request("session/load", {"sessionId": session, "cwd": str(work), "mcpServers": []}, timeout=30)
        updates = client.session_updates(session, "subagent_update")
        assert updates[-1]["state"] == "disconnected"
        task_call = next(u for u in client.session_updates(session, "tool_call") if u["title"].startswith("Explore"))
        assert task_call["status"] == "failed"
        assert await client.prompt(session, "go on", timeout=WAIT) == "end_turn"
    assert "interrupted" in tool_results(fake_llm.last_request)[-1]


def _full_auto(tmp_path: Path) -> Path:
    config = tmp_path / "full-auto.toml"
    config.write_text('default_mode = "full-auto"\n')
    return config
