"""Background jobs end to end in-process: `run_command` with `background`, the job tools, jobs that end while no turn
runs, jobs that outlive their turn and end with their session — locally and in the editor's terminal."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest

from coder_agent.model.scripted import Call, Reply, Request, ScriptedModel
from coder_agent.process import OWNER_VARIABLE
from tests.support.processes import alive, wait_gone
from tests.support.scripted_agent import scripted_agent, tool_agent

pytestmark = pytest.mark.anyio

WHERE = pytest.mark.parametrize("terminal", [False, True], ids=["local", "terminal"])


def results(model: ScriptedModel) -> list[str]:
    return [m["content"] for m in model.last_request.messages if m["role"] == "tool"]


def background(command: str, **more: Any) -> Call:
    return Call("run_command", {"command": command, "background": True, **more})


def pid_in(text: str) -> int:
    found = re.search(r"pid=(\d+)", text)
    assert found, text
    return int(found.group(1))


@WHERE
async def test_a_job_starts_at_once_answers_its_input_and_is_read_after_it_ends(tmp_path: Path, terminal: bool) -> None:
    script = "echo 'name?'; read name; echo \"hello $name\"; echo done >&2"
    model = ScriptedModel(
        [
            Reply(calls=[background(script, stdin=True)]),
            Reply(calls=[Call("job_input", {"job_id": 1, "text": "Ada"})]),
            Reply(calls=[Call("job_wait", {"job_id": 1, "timeout_ms": 30000})]),
            Reply(calls=[Call("job_output", {"job_id": 1, "since": 0})]),
            Reply("All done."),
        ]
    )
    async with tool_agent(tmp_path, model, terminal=terminal, mode="full-auto") as (client, editor, session, _):
        assert await client.prompt(session, "greet") == "end_turn"
        if terminal:
            assert editor.unreleased() == [], "the job's terminal is released once it has ended"
    started, answered, waited, read = results(model)
    assert started.startswith("Started job 1 (`echo 'name?'; read name;")
    assert "name?" in started
    assert "hello Ada" in answered and answered.startswith("job 1 ")
    assert "exited with code 0" in waited
    assert "hello Ada" in read and "done" in read and "characters 0 to" in read
    if terminal:
        created = next(iter(editor.terminals.values()))
        assert created.env[OWNER_VARIABLE], "the reaper can find the job's processes by the agent's mark"
        start = client.session_updates(session, "tool_call")[0]
        updates = [
            u for u in client.session_updates(session, "tool_call_update") if u["toolCallId"] == start["toolCallId"]
        ]
        assert any(c.get("type") == "terminal" for u in updates for c in u.get("content") or [])


@WHERE
async def test_a_wait_ends_when_the_text_appears_and_a_kill_ends_the_whole_group(
    tmp_path: Path, terminal: bool
) -> None:
    ready = tmp_path / "ready"
    script = f'sleep 60 & echo "pid=$!"; while [ ! -e {ready} ]; do sleep 0.02; done; echo Listening on 8000; wait'

    def get_ready(request: Request) -> Reply:
        ready.touch()
        return Reply(calls=[Call("job_wait", {"job_id": 1, "until": "Listening on", "timeout_ms": 30000})])

    model = ScriptedModel(
        [
            Reply(calls=[background(script)]),
            get_ready,
            Reply(calls=[Call("job_kill", {"job_id": 1})]),
            Reply(calls=[Call("job_list", {})]),
            Reply("Stopped."),
        ]
    )
    async with tool_agent(tmp_path, model, terminal=terminal, mode="full-auto") as (client, _, session, _):
        assert await client.prompt(session, "serve") == "end_turn"
    started, waited, killed, listed = results(model)
    child = pid_in(started)
    assert "'Listening on' appeared in its output" in waited and "Listening on 8000" in waited
    assert "killed" in killed
    assert "job 1" in listed and "killed" in listed
    await wait_gone(child)


async def test_jobs_outlive_their_turn_end_with_a_notice_and_are_named_in_the_next_update(tmp_path: Path) -> None:
    release = tmp_path / "go"
    model = ScriptedModel(
        [
            Reply(calls=[background(f"while [ ! -e {release} ]; do sleep 0.05; done; echo finished")]),
            Reply("Started it."),
            Reply("I see it ended."),
        ]
    )
    capabilities = {
        "fs": {"readTextFile": False, "writeTextFile": False},
        "terminal": False,
        "session": {"notices": {}},
    }
    async with scripted_agent(tmp_path, model, capabilities=capabilities, default_mode="full-auto") as (
        client,
        session,
        _,
    ):
        assert await client.prompt(session, "start it") == "end_turn"
        release.touch()

        def notices() -> list[dict[str, Any]]:
            sent = client.session_updates(session, "notice")
            return [n for n in sent if n["title"].startswith("Background")]

        await client.wait_for(lambda: bool(notices()))
        notice = notices()[0]
        assert notice["title"].startswith("Background job 1 (`while [ ! -e")
        assert "exited with code 0" in notice["title"]
        assert "finished" in notice["description"]
        assert await client.prompt(session, "and now?") == "end_turn"
    update = [m for m in model.last_request.messages if m["role"] == "user"][-2]["content"]
    assert update.startswith("[Environment update")
    assert "Background job 1" in update and "exited with code 0" in update and "unread (job_output)" in update


async def test_a_job_that_ends_during_the_turn_is_named_after_the_next_tool_results(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            Reply(calls=[background("echo quick")]),
            Reply(calls=[Call("job_list", {})]),  # it may still be running here; the note comes once it ended
            Reply(calls=[Call("job_wait", {"job_id": 1})]),
            Reply("done"),
        ]
    )
    async with tool_agent(tmp_path, model, terminal=False, mode="full-auto") as (client, _, session, _):
        assert await client.prompt(session, "go") == "end_turn"
    notes = [m["content"] for m in model.last_request.messages if m["role"] == "user"][1:]
    told = "".join(results(model)) + "".join(notes)
    assert "exited with code 0" in told, "the model hears of the end once, in a result or a note"


async def test_a_job_killed_from_outside_says_so(tmp_path: Path) -> None:
    def kill_it(request: Request) -> Reply:
        started = [m["content"] for m in request.messages if m["role"] == "tool"][-1]
        os.kill(pid_in(started), signal.SIGTERM)
        return Reply(calls=[Call("job_wait", {"job_id": 1, "timeout_ms": 30000})])

    model = ScriptedModel([Reply(calls=[background('echo "pid=$$"; exec sleep 60')]), kill_it, Reply("It was killed.")])
    async with tool_agent(tmp_path, model, terminal=False, mode="full-auto") as (client, _, session, _):
        assert await client.prompt(session, "go") == "end_turn"
    assert "killed by SIGTERM from outside the agent" in results(model)[1]


async def test_bad_job_ids_and_input_without_stdin_are_clear_failures(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            Reply(calls=[Call("job_output", {"job_id": 7})]),
            Reply(calls=[background("exec sleep 60")]),
            Reply(calls=[Call("job_kill", {"job_id": 9}), Call("job_input", {"job_id": 1, "text": "y"})]),
            Reply(calls=[Call("run_command", {"command": "true", "stdin": True})]),
            Reply("ok"),
        ]
    )
    async with tool_agent(tmp_path, model, terminal=False, mode="full-auto") as (client, _, session, _):
        assert await client.prompt(session, "go") == "end_turn"
    missing, _, wrong, started_without, stdin_alone = results(model)
    assert "no background jobs" in missing and "background: true" in missing
    assert "There is no job 9 in this session; its jobs are: 1" in wrong
    assert "was started without its input open" in started_without
    assert "stdin applies to background jobs only" in stdin_alone


@pytest.mark.parametrize("end", ["session/close", "session/delete", "agent exit"])
async def test_jobs_end_with_their_session(tmp_path: Path, end: str) -> None:
    model = ScriptedModel([Reply(calls=[background('echo "pid=$$"; exec sleep 60')]), Reply("started")])
    async with tool_agent(tmp_path, model, terminal=False, mode="full-auto") as (client, _, session, _):
        assert await client.prompt(session, "go") == "end_turn"
        pid = pid_in(results(model)[0])
        assert alive(pid)
        if end != "agent exit":
            await client.request(end, {"sessionId": session})
            await wait_gone(pid)
    await wait_gone(pid)


async def test_a_background_command_asks_and_is_denied_like_any_command(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            Reply(calls=[background("npm run dev")]),
            Reply(calls=[background("git push --force")]),
            Reply("ok"),
        ]
    )
    async with tool_agent(tmp_path, model, terminal=False, permissions={"deny": ["execute:git push"]}) as (
        client,
        editor,
        session,
        _,
    ):
        editor.permission_answers = ["reject_once"]
        assert await client.prompt(session, "go") == "end_turn"
    rejected, denied = results(model)
    assert "rejected" in rejected
    assert "denied by the rule `execute:git push`" in denied
    asked = editor.permission_requests[0]["toolCall"]
    assert asked["title"] == "npm run dev (background job)"
    assert any("Runs in the background" in c["content"]["text"] for c in asked["content"] if c["type"] == "content")


async def test_input_asks_like_the_jobs_command(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            Reply(calls=[background('read answer; echo "got $answer"', stdin=True)]),
            Reply(calls=[Call("job_input", {"job_id": 1, "text": "yes"})]),
            Reply(calls=[Call("job_kill", {"job_id": 1})]),
            Reply("ok"),
        ]
    )
    async with tool_agent(tmp_path, model, terminal=False) as (client, editor, session, _):
        editor.permission_answers = ["allow_once", "reject_once"]
        assert await client.prompt(session, "go") == "end_turn"
    _, refused, killed = results(model)
    assert "rejected" in refused
    assert "got yes" not in killed
    asked = editor.permission_requests[1]["toolCall"]
    assert asked["title"].startswith("Input for job 1")
    assert asked["kind"] == "execute"


async def test_a_job_that_prints_a_lot_keeps_a_bounded_tail(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            Reply(calls=[background("head -c 3000000 /dev/zero | tr '\\0' x; echo; echo THE-END")]),
            Reply(calls=[Call("job_wait", {"job_id": 1})]),
            Reply(calls=[Call("job_output", {"job_id": 1, "since": 0, "max_chars": 5000})]),
            Reply("ok"),
        ]
    )
    async with tool_agent(tmp_path, model, terminal=False, mode="full-auto") as (client, _, session, _):
        assert await client.prompt(session, "go") == "end_turn"
    _, waited, read = results(model)
    assert "THE-END" in waited and len(waited) < 25_000
    assert "earlier characters are no longer kept" in read and "THE-END" in read and len(read) < 6_000


async def test_a_job_started_in_a_turn_that_is_cancelled_keeps_running(tmp_path: Path) -> None:
    hold = anyio.Event()
    model = ScriptedModel(
        [Reply(calls=[background('echo "pid=$$"; exec sleep 60')]), Reply("thinking", hold=hold, hold_after=0)]
    )
    async with tool_agent(tmp_path, model, terminal=False, mode="full-auto") as (client, _, session, _):
        async with anyio.create_task_group() as group:

            async def prompt() -> None:
                assert await client.prompt(session, "go") == "cancelled"

            group.start_soon(prompt)
            await client.wait_for(lambda: len(model.requests) == 2)
            await client.notify("session/cancel", {"sessionId": session})
        pid = pid_in(model.requests[1].messages[-1]["content"])
        assert alive(pid), "a job outlives the turn that started it"
    await wait_gone(pid)


async def test_a_wait_that_times_out_input_that_closes_and_a_job_that_ended(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            Reply(calls=[Call("job_list", {})]),
            Reply(calls=[background('read line; echo "got $line"; exec sleep 60', stdin=True)]),
            Reply(calls=[Call("job_wait", {"job_id": 1, "timeout_ms": 200, "until": "never printed"})]),
            Reply(calls=[Call("job_input", {"job_id": 1, "text": "bye", "close": True, "wait_ms": 5000})]),
            Reply(calls=[Call("job_input", {"job_id": 1, "text": "again"})]),
            Reply(calls=[Call("job_kill", {"job_id": 1}), Call("job_kill", {"job_id": 1})]),
            Reply(calls=[Call("job_input", {"job_id": 1, "text": "late"})]),
            Reply("ok"),
        ]
    )
    async with tool_agent(tmp_path, model, terminal=False, mode="full-auto") as (client, _, session, _):
        assert await client.prompt(session, "go") == "end_turn"
    none, _, timed_out, answered, closed, killed, killed_again, ended = results(model)
    assert none == "This session has no background jobs."
    assert "Still running after waiting 0.2 s. 'never printed' has not appeared yet." in timed_out
    assert "got bye" in answered and "closed its input" in answered
    assert "The input of job 1" in closed and "is closed" in closed
    assert "killed" in killed and "It had ended already." in killed_again
    assert "has ended" in ended and "takes no more input" in ended


async def test_a_wait_for_text_in_the_editors_terminal_asks_less_and_less_and_ends_with_the_job(
    tmp_path: Path,
) -> None:
    """`job_wait` with `until` asks the editor for the terminal's output when a growing timer runs out (not every
    50 ms), and ends as soon as `terminal/wait_for_exit` answers. Checked on the times the editor saw the asks: they
    only spread further apart on a loaded machine."""
    import time

    model = ScriptedModel(
        [
            Reply(calls=[background("while [ ! -f go ]; do sleep 0.02; done; echo finished")]),
            Reply(calls=[Call("job_wait", {"job_id": 1, "until": "never printed", "timeout_ms": 120000})]),
            Reply("ok"),
        ]
    )
    async with tool_agent(tmp_path, model, terminal=True, mode="full-auto") as (client, editor, session, work):
        asked: list[float] = []
        serve = client.handlers["terminal/output"]

        async def output(params: dict[str, Any]) -> Any:
            if len(model.requests) == 2:  # the wait runs
                asked.append(time.monotonic())
            return await serve(params)

        client.handlers["terminal/output"] = output
        async with anyio.create_task_group() as group:
            group.start_soon(client.prompt, session, "wait for it")
            await client.wait_for(lambda: len(asked) >= 4)
            (work / "go").touch()
    assert asked[3] - asked[0] >= 0.35, "asked every 50 ms: 4 asks take 0.15 s; with a growing timer 0.7 s"
    waited = results(model)[1]
    assert "exited with code 0" in waited, waited
