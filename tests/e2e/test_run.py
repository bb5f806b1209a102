"""`coder-agent run` end to end, its model the fake server through litellm — outputs, exit codes, prompts from
stdin, sessions continued and resumed (and shared with editors), refusals and Ctrl-C. What needs a process of
its own (stdin pipes, argparse's exit, signals, a resumed session in another folder) spawns the command; the
rest runs the same path in this process (`tests/support/headless.py`), without a new interpreter each time."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from pathlib import Path
from subprocess import PIPE

import anyio
import pytest

from tests.support.fake_llm import Call, FakeLLM, Fault, Reply, Usage
from tests.support.headless import RUN_WAIT, Ran, run_here
from tests.support.processes import group_alive, wait_groups_gone
from tests.support.spawn import agent_env, poll_until, spawned_agent, stored_session
from tests.support.user_config import LANGUAGE_SERVERS_OFF

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

ESCAPE = "\x1b["
WRITE = Reply.tool("write_file", {"path": "notes.txt", "content": "remember\n"})
PLAN = {
    "entries": [{"content": "Read main.py", "status": "completed"}, {"content": "Say bye", "status": "in_progress"}]
}
EDIT_SCRIPT = [
    Reply("Let me look.", calls=[Call("update_plan", PLAN), Call("read_file", {"path": "main.py"})]),
    Reply(calls=[Call("edit_file", {"path": "main.py", "old_string": "hello", "new_string": "bye"})]),
    Reply("Changed the greeting."),
]
"""An edit the script does not check: the runs given it turn the check before finishing off (`no_finish_check`)."""


async def run(
    tmp_path: Path, *args: str, llm: FakeLLM | None = None, stdin: str = "", env: dict[str, str] | None = None
) -> Ran:
    """`coder-agent run ARGS` with pipes (no terminal anywhere), to the end."""
    with anyio.fail_after(RUN_WAIT):
        done = await anyio.run_process(
            [sys.executable, "-m", "coder_agent", "run", *args],
            input=stdin.encode(),
            env=agent_env(tmp_path, llm, env),
            check=False,
        )
    return Ran(done.returncode, done.stdout.decode(), done.stderr.decode())


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "main.py").write_text("print('hello')\n")
    return folder


def no_finish_check(tmp_path: Path) -> None:
    """The user config of the agents run under `tmp_path` turns the check before finishing off (its follow-up
    is `tests/e2e/test_run_finish_check.py`'s), the language servers off as every test's."""
    config = tmp_path / "xdg-config" / "coder-agent" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("check_before_finishing = false\n" + LANGUAGE_SERVERS_OFF, encoding="utf-8")


def user_messages(llm: FakeLLM) -> list[str]:
    """What the user said in the last request (environment updates left out)."""
    said = [m["content"] for m in llm.last_request["messages"] if m["role"] == "user"]
    return [m for m in said if not str(m).startswith("[Environment update")]


async def test_text_puts_the_answer_on_stdout_and_the_work_on_stderr(
    tmp_path: Path, work: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.script(EDIT_SCRIPT)
    no_finish_check(tmp_path)
    ran = await run_here(tmp_path, "--cwd", str(work), "--mode", "accept-edits", "Say bye", llm=fake_llm)
    assert ran.code == 0, ran.stderr
    assert ran.stdout == "Let me look.\n\nChanged the greeting.\n"
    assert "Plan\n  ✓ Read main.py\n  ▸ Say bye\n" in ran.stderr
    assert "• Read main.py" in ran.stderr
    assert "• Edit main.py" in ran.stderr
    assert "    -print('hello')\n    +print('bye')" in ran.stderr
    assert "1 file changed" in ran.stderr
    assert ESCAPE not in ran.stdout + ran.stderr  # piped: plain text
    assert (work / "main.py").read_text() == "print('bye')\n"


async def test_json_prints_one_object_at_the_end(tmp_path: Path, work: Path, fake_llm: FakeLLM) -> None:
    fake_llm.script(EDIT_SCRIPT)
    no_finish_check(tmp_path)
    ran = await run_here(
        tmp_path, "--cwd", str(work), "--mode", "accept-edits", "--output-format", "json", "Say bye", llm=fake_llm
    )
    assert ran.code == 0, ran.stderr
    result = ran.json()
    assert result["type"] == "result"
    assert result["answer"] == "Changed the greeting."
    assert result["stop_reason"] == "end_turn"
    assert result["exit_code"] == 0
    assert result["error"] is None
    assert result["session_id"].startswith("sess_")
    assert result["files_changed"] == ["main.py"]
    assert result["usage"]["model_requests"] == 3
    assert result["usage"]["tokens"] > 0
    usage = result["usage"]
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0  # each request's, added up (Harbor reads them)
    assert usage["cached_input_tokens"] == 0
    assert "cost" in result
    assert ran.stderr == ""


async def test_stream_json_prints_each_event_as_a_line(tmp_path: Path, work: Path, fake_llm: FakeLLM) -> None:
    fake_llm.script(EDIT_SCRIPT)
    no_finish_check(tmp_path)
    args = ["--cwd", str(work), "--mode", "accept-edits", "--output-format", "stream-json", "Say bye"]
    ran = await run_here(tmp_path, *args, llm=fake_llm)
    assert ran.code == 0, ran.stderr
    events = ran.events()
    first, last = events[0], events[-1]
    assert first == {
        "type": "session",
        "session_id": last["session_id"],
        "cwd": str(work),
        "model": "openai/fake-model",
        "mode": "accept-edits",
        "resumed": False,
        "piped_input": None,
    }
    assert last["type"] == "result" and last["files_changed"] == ["main.py"]
    updates = [e["update"] for e in events if e["type"] == "update"]
    kinds = [u["sessionUpdate"] for u in updates]
    assert kinds.index("agent_message_chunk") < kinds.index("tool_call")
    assert "usage_update" in kinds, "usage is reported (while the tool runs: it is off the call's path)"
    edit = next(u for u in updates if u["sessionUpdate"] == "tool_call" and u["kind"] == "edit")
    assert edit["content"][0]["type"] == "diff"
    text = "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk")
    assert text == "Let me look.Changed the greeting."


@pytest.mark.parametrize("argument", [[], ["-"]])
async def test_the_prompt_comes_from_stdin(tmp_path: Path, work: Path, fake_llm: FakeLLM, argument: list[str]) -> None:
    fake_llm.script([Reply("Four.")])
    ran = await run_here(tmp_path, "--cwd", str(work), *argument, llm=fake_llm, stdin="What is 2+2?\n")
    assert ran.code == 0, ran.stderr
    assert ran.stdout == "Four.\n"
    assert user_messages(fake_llm) == ["What is 2+2?\n"]


PIPED_PROMPT = "explain this\n\nInput piped to the command (stdin):\n```\n{}\n```"


async def test_input_piped_next_to_a_prompt_is_added_to_it(tmp_path: Path, work: Path, fake_llm: FakeLLM) -> None:
    """`cat calc.py | coder-agent run "explain this"`, through a real pipe."""
    fake_llm.script([Reply("It adds.")])
    code = "def add(a, b):\n    return a + b\n"
    ran = await run(tmp_path, "--cwd", str(work), "explain this", llm=fake_llm, stdin=code)
    assert ran.code == 0, ran.stderr
    assert user_messages(fake_llm) == [PIPED_PROMPT.format(code.rstrip())]
    assert "Added the 32 bytes piped on stdin to the prompt." in ran.stderr


async def test_piped_input_is_capped_keeping_its_start_and_end(tmp_path: Path, work: Path, fake_llm: FakeLLM) -> None:
    fake_llm.script([Reply("Long.")])
    log = "".join(f"line {n:06}\n" for n in range(30_000))  # 360 KB
    args = ["--cwd", str(work), "--output-format", "json", "explain this"]
    ran = await run_here(tmp_path, *args, llm=fake_llm, stdin=log)
    assert ran.code == 0, ran.stderr
    assert ran.json()["piped_input"] == {"bytes": len(log), "truncated": True, "kept_bytes": 100_000}
    [said] = user_messages(fake_llm)
    assert "line 000000" in said and "line 029999" in said, "the start and the end (where errors are) are kept"
    assert f"[… {len(log) - 100_000:,} bytes of the input left out here …]" in said
    assert len(said) < 101_000


async def test_an_open_silent_stdin_does_not_hang_a_run(tmp_path: Path, work: Path, fake_llm: FakeLLM) -> None:
    """A CI step or a harness that leaves stdin open and writes nothing: the run goes on without it."""
    fake_llm.script([Reply("Hi.")])
    argv = [sys.executable, "-m", "coder_agent", "run", "--cwd", str(work), "Hello"]
    process = await anyio.open_process(argv, stdin=PIPE, stdout=PIPE, stderr=PIPE, env=agent_env(tmp_path, fake_llm))
    async with process:  # stdin stays open until the run has ended
        with anyio.fail_after(RUN_WAIT):
            assert await process.wait() == 0
        assert process.stderr is not None
        stderr = (await process.stderr.receive()).decode()
    assert "Nothing came on stdin within 2 s: going on without it" in stderr
    assert user_messages(fake_llm) == ["Hello"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "the prompt is empty"),
        (["--mode", "yolo", "x"], "invalid choice: 'yolo'"),
        (["--allow", "nonsense", "x"], "--allow: permission rule 'nonsense'"),
        (["--continue", "--resume", "sess_1", "x"], "not allowed with argument"),
        (["--cwd", "/no/such/folder", "x"], "--cwd /no/such/folder: no such folder"),
        (["--max-turns", "0", "x"], "--max-turns must be at least 1"),
        (["--output-format", "yaml", "x"], "invalid choice: 'yaml'"),
    ],
)
async def test_usage_errors_exit_2_before_anything_runs(
    tmp_path: Path, fake_llm: FakeLLM, args: list[str], message: str
) -> None:
    ran = await run(tmp_path, *args, llm=fake_llm)
    assert ran.code == 2
    assert message in ran.stderr
    assert "usage: coder-agent run" in ran.stderr
    assert ran.stdout == ""
    assert fake_llm.requests == []


async def test_no_model_is_an_error_with_the_fix_on_stderr(tmp_path: Path, work: Path) -> None:
    ran = await run_here(tmp_path, "--cwd", str(work), "--output-format", "json", "hi")
    assert ran.code == 1
    assert "No model is configured. Set CODER_AGENT_MODEL" in ran.stderr
    result = ran.json()
    assert result["exit_code"] == 1 and result["session_id"] is None
    assert result["error"].startswith("No model is configured")


async def test_a_model_failure_exits_1(tmp_path: Path, work: Path, fake_llm: FakeLLM) -> None:
    fake_llm.script([Fault.status(401, message="bad key")])
    ran = await run_here(tmp_path, "--cwd", str(work), "hi", llm=fake_llm)
    assert ran.code == 1
    assert "rejected the credentials" in ran.stderr
    assert "bad key" in ran.stderr


async def test_hitting_max_turns_exits_1(tmp_path: Path, work: Path, fake_llm: FakeLLM) -> None:
    fake_llm.script([Reply.tool("read_file", {"path": "main.py"}), Reply("never reached")])
    ran = await run_here(
        tmp_path, "--cwd", str(work), "--max-turns", "1", "--output-format", "json", "look", llm=fake_llm
    )
    assert ran.code == 1
    assert ran.json()["stop_reason"] == "max_turn_requests"
    assert "--max-turns" in ran.stderr
    assert len(fake_llm.requests) == 1


async def test_a_refused_permission_stops_with_3_and_continue_picks_it_up(
    tmp_path: Path, work: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.script([WRITE])
    args = ["--cwd", str(work), "--mode", "default", "--output-format", "json", "Note it"]
    ran = await run_here(tmp_path, *args, llm=fake_llm)
    assert ran.code == 3, ran.stderr
    result = ran.json()
    assert result["stop_reason"] == "cancelled"
    assert result["refused"] == [
        {
            "tool_call_id": "call_1_0",
            "title": "Write notes.txt",
            "kind": "edit",
            "decision": "refused",
            "answered_by": "nobody",
            "allow_rules": ["edit:**"],
            "leaves_sandbox": False,
        }
    ]
    assert "needs permission, and there is no terminal to ask on" in ran.stderr
    assert f"`coder-agent run --resume {result['session_id']} --allow 'edit:**'`" in ran.stderr
    assert not (work / "notes.txt").exists()
    assert len(fake_llm.requests) == 1  # the turn stopped at the refusal
    told = json.loads(stored_session(tmp_path, result["session_id"]))["messages"][-1]
    assert told["role"] == "tool" and "needs the user's permission, and no one could be asked" in told["content"]

    fake_llm.script([WRITE, Reply("Done now.")])
    again = await run_here(
        tmp_path, "--cwd", str(work), "--continue", "--mode", "default", "--allow", "edit:**", "go on", llm=fake_llm
    )
    assert again.code == 0, again.stderr
    assert "Continuing session " + result["session_id"] in again.stderr
    assert (work / "notes.txt").read_text() == "remember\n"
    assert user_messages(fake_llm) == ["Note it", "go on"]


async def test_continue_with_allow_and_no_prompt_runs_the_stopped_call(
    tmp_path: Path, work: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.script([WRITE])
    stopped = await run_here(tmp_path, "--cwd", str(work), "--allow", "read:**", "Note it", llm=fake_llm)
    assert stopped.code == 3, "with --allow and no terminal, what is not allowed stops the run (mode default)"

    fake_llm.script([Reply("Noted.")])
    again = await run_here(tmp_path, "--cwd", str(work), "--continue", "--allow", "edit:**", llm=fake_llm)
    assert again.code == 0, again.stderr
    assert (work / "notes.txt").read_text() == "remember\n"
    assert again.stdout == "Noted.\n"
    assert "• Write notes.txt" in again.stderr
    assert len(fake_llm.requests) == 2, "the stopped call ran without asking the model again"
    sent = fake_llm.last_request["messages"]
    assert user_messages(fake_llm) == ["Note it"]
    results = [m["content"] for m in sent if m["role"] == "tool"]
    assert len(results) == 1 and "permission" not in results[0]


async def test_continue_without_a_prompt_needs_a_stopped_call(tmp_path: Path, work: Path, fake_llm: FakeLLM) -> None:
    fake_llm.script([Reply("Hello.")])
    assert (await run_here(tmp_path, "--cwd", str(work), "hi", llm=fake_llm)).code == 0
    ran = await run_here(tmp_path, "--cwd", str(work), "--continue", llm=fake_llm)
    assert ran.code == 1
    assert "did not stop at a call that needs permission" in ran.stderr and "give a prompt" in ran.stderr
    assert len(fake_llm.requests) == 1


async def test_a_mode_refusal_is_the_models_to_work_around(tmp_path: Path, work: Path, fake_llm: FakeLLM) -> None:
    """Without a terminal the mode is read-only, and the run says so at its start, with the flag that changes it: an
    edit is refused and the model is told, as in an editor, naming the flag; the run goes on, and at its end says
    what was refused and exits 3 (the change the task needed was not made, whatever the answer says)."""
    fake_llm.script([WRITE, Reply("I may not edit here.")])
    ran = await run_here(tmp_path, "--cwd", str(work), "--output-format", "json", "Note it", llm=fake_llm)
    assert ran.code == 3, ran.stderr
    assert ran.stderr.startswith("Mode: read-only, as there is no terminal to ask on")
    result = ran.json()
    assert result["answer"] == "I may not edit here."
    assert result["refused_by_mode"] == [
        {"tool_call_id": "call_1_0", "title": "Write notes.txt", "kind": "edit", "mode": "read-only"}
    ]
    assert result["refused"] == []
    assert "The read-only mode refused 1 file change (Write notes.txt)" in result["error"]
    assert f"`coder-agent run --resume {result['session_id']} --mode accept-edits" in result["error"]
    tool_result = fake_llm.last_request["messages"][-1]
    assert tool_result["role"] == "tool" and "read-only mode" in tool_result["content"]
    assert "--mode accept-edits" in tool_result["content"], "the model may tell the user the flag, not a picker"


async def test_a_command_the_mode_refused_is_counted_but_the_answer_stands(
    tmp_path: Path, work: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.script([Reply.tool("run_command", {"command": "wc -l main.py"}), Reply("One line.")])
    ran = await run_here(tmp_path, "--cwd", str(work), "how long is main.py?", llm=fake_llm)
    assert ran.code == 0, ran.stderr
    assert ran.stdout == "One line.\n"
    assert "✗ Not allowed: the session is in read-only mode; give --mode accept-edits" in ran.stderr
    assert "The read-only mode refused 1 command (wc -l main.py)" in ran.stderr


async def test_resume_by_id_and_the_stored_mode_is_kept(tmp_path: Path, work: Path, fake_llm: FakeLLM) -> None:
    fake_llm.script([Reply("First answer.")])
    first = await run_here(
        tmp_path, "--cwd", str(work), "--mode", "full-auto", "--output-format", "json", "first", llm=fake_llm
    )
    session_id = first.json()["session_id"]
    assert json.loads(stored_session(tmp_path, session_id))["mode"] == "default"  # full-auto was for that run only

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    fake_llm.script([Reply("Second answer.")])
    with anyio.fail_after(RUN_WAIT):
        done = await anyio.run_process(
            [sys.executable, "-m", "coder_agent", "run", "--resume", session_id, "--output-format", "stream-json", "2"],
            env=agent_env(tmp_path, fake_llm),
            cwd=elsewhere,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert events[0]["session_id"] == session_id and events[0]["resumed"] is True
    assert events[0]["cwd"] == str(work) and events[0]["mode"] == "read-only"
    assert user_messages(fake_llm) == ["first", "2"]


async def test_a_model_given_on_resume_is_for_that_run_only(tmp_path: Path, work: Path, fake_llm: FakeLLM) -> None:
    fake_llm.script([Reply("Made.")])
    made = await run_here(tmp_path, "--cwd", str(work), "--output-format", "json", "first", llm=fake_llm)
    session_id = made.json()["session_id"]
    assert json.loads(stored_session(tmp_path, session_id))["model"] == "openai/fake-model"

    fake_llm.script([Reply("Answered by another model.")])
    other = await run_here(
        tmp_path, "--resume", session_id, "--model", "openai/other-model", "--output-format", "json", "2", llm=fake_llm
    )
    assert other.code == 0, other.stderr
    assert fake_llm.last_request["model"] == "other-model"
    assert json.loads(stored_session(tmp_path, session_id))["model"] == "openai/fake-model"


async def test_continue_without_a_session_says_so(tmp_path: Path, work: Path, fake_llm: FakeLLM) -> None:
    ran = await run_here(tmp_path, "--cwd", str(work), "--continue", "hi", llm=fake_llm)
    assert ran.code == 1
    assert f"No session to continue in {work}" in ran.stderr


async def test_sessions_are_shared_with_editors(tmp_path: Path, work: Path, fake_llm: FakeLLM) -> None:
    fake_llm.script([Reply("From the command line.")])
    ran = await run_here(tmp_path, "--cwd", str(work), "--output-format", "json", "Made by run", llm=fake_llm)
    made_by_run = ran.json()["session_id"]

    fake_llm.script([Reply("From the editor.")])
    async with spawned_agent(tmp_path, llm=fake_llm) as agent:
        await agent.client.initialize()
        listed = await agent.client.request("session/list", {"cwd": str(work)})
        assert [(s["sessionId"], s["title"]) for s in listed["sessions"]] == [(made_by_run, "Made by run")]
        made_by_editor = await agent.client.new_session(str(work))
        assert await agent.client.prompt(made_by_editor, "Made by the editor", timeout=60) == "end_turn"

    fake_llm.script([Reply("Back on the command line.")])
    again = await run_here(
        tmp_path, "--cwd", str(work), "--continue", "--output-format", "json", "and now?", llm=fake_llm
    )
    assert again.json()["session_id"] == made_by_editor
    assert user_messages(fake_llm) == ["Made by the editor", "and now?"]


async def test_ctrl_c_kills_the_command_saves_the_session_and_exits_130(
    tmp_path: Path, work: Path, fake_llm: FakeLLM
) -> None:
    pid_file = work / "command.pid"
    fake_llm.script([Reply.tool("run_command", {"command": f"echo $$ > {pid_file}; sleep 600"})])
    argv = [sys.executable, "-m", "coder_agent", "run", "--cwd", str(work), "--mode", "full-auto"]
    argv += ["--output-format", "stream-json", "wait a long time"]
    with (tmp_path / "stderr.log").open("wb") as stderr:
        process = await anyio.open_process(
            argv, stdin=PIPE, stdout=PIPE, stderr=stderr, env=agent_env(tmp_path, fake_llm)
        )
    async with process:
        output = b""

        async def read_stdout() -> None:
            nonlocal output
            assert process.stdout is not None
            async for chunk in process.stdout:
                output += chunk

        try:
            async with anyio.create_task_group() as task_group:
                task_group.start_soon(read_stdout)
                await poll_until(lambda: pid_file.exists() and pid_file.read_text().strip() != "", timeout=RUN_WAIT)
                group = os.getpgid(int(pid_file.read_text()))  # a supervisor may lead the group it runs in
                assert group_alive(group), "the command's group is there"
                process.send_signal(signal.SIGINT)
                with anyio.fail_after(30):
                    code = await process.wait()
        finally:
            if process.returncode is None:
                process.kill()
        events = [json.loads(line) for line in output.decode().splitlines()]
    assert code == 130
    result = events[-1]
    assert result["type"] == "result" and result["stop_reason"] == "cancelled" and result["exit_code"] == 130
    await wait_groups_gone(group, timeout=10)  # a killed member may be a zombie for a moment
    stored = json.loads(stored_session(tmp_path, result["session_id"]))
    assert next(m for m in stored["messages"] if m["role"] == "user") == {"role": "user", "content": "wait a long time"}
    assert stored["messages"][-1]["role"] == "tool"  # the interrupted call is answered, so the session goes on


async def test_a_provider_error_that_echoes_the_key_does_not_print_it(
    tmp_path: Path, work: Path, fake_llm: FakeLLM
) -> None:
    key = "sk-e2e-echoed-by-the-provider-0123456789"
    fake_llm.script([Fault.status(401, message=f"Incorrect API key provided: {key}.")])
    env = {"CODER_AGENT_API_KEY": key, "CODER_AGENT_LOG_LEVEL": "debug"}
    ran = await run(tmp_path, "--cwd", str(work), "--output-format", "json", "hi", llm=fake_llm, env=env)
    assert ran.code == 1
    assert "Incorrect API key provided" in ran.json()["error"]
    assert key not in ran.stdout and key not in ran.stderr
    stored = "".join(p.read_text() for p in (tmp_path / "xdg-data").rglob("*.json"))
    assert key not in stored


async def test_a_session_saved_while_a_run_works_keeps_its_own_mode(
    tmp_path: Path, work: Path, fake_llm: FakeLLM
) -> None:
    """The store is written after every step: killed in the middle (SIGKILL, a crash), a `--mode full-auto` run
    must not leave a session an editor reopens in full-auto."""
    pid_file = work / "command.pid"
    fake_llm.script([Reply.tool("run_command", {"command": f"echo $$ > {pid_file}; sleep 600"})])
    argv = [sys.executable, "-m", "coder_agent", "run", "--cwd", str(work), "--mode", "full-auto", "wait"]
    sessions = tmp_path / "xdg-data" / "coder-agent" / "sessions"

    def saved_mid_call() -> str:
        found = [p.read_text() for p in sessions.glob("*.json")] if sessions.is_dir() else []
        return next((text for text in found if "sleep 600" in text), "")

    process = await anyio.open_process(argv, stdin=PIPE, stdout=PIPE, stderr=PIPE, env=agent_env(tmp_path, fake_llm))
    async with process:
        try:
            await poll_until(lambda: pid_file.exists() and bool(saved_mid_call()), timeout=RUN_WAIT)
            stored = json.loads(saved_mid_call())
        finally:
            process.kill()
            await process.wait()
            if pid_file.exists() and pid_file.read_text().strip():
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(int(pid_file.read_text()), signal.SIGKILL)
    assert stored["mode"] == "default"


@pytest.mark.parametrize("where", ["--config", "project"])
async def test_a_config_problem_is_printed_once(tmp_path: Path, work: Path, fake_llm: FakeLLM, where: str) -> None:
    fake_llm.script([Reply("Fine.")])
    bad = 'temperature = "hot"\n'
    if where == "project":
        (work / ".coder-agent").mkdir()
        (work / ".coder-agent" / "config.toml").write_text(bad)
        args = ["--cwd", str(work), "hi"]
    else:
        (tmp_path / "bad.toml").write_text(bad)
        args = ["--cwd", str(work), "--config", str(tmp_path / "bad.toml"), "hi"]
    ran = await run(tmp_path, *args, llm=fake_llm)
    assert ran.stderr.count("field 'temperature'") == 1, ran.stderr
    assert ran.code == (0 if where == "project" else 1)  # a broken project file is left out, with a notice


async def test_in_ci_the_default_mode_is_auto_inside_the_sandbox(tmp_path: Path, work: Path, fake_llm: FakeLLM) -> None:
    from coder_agent.sandbox import probe

    if not probe.check().available:
        pytest.skip(f"no sandbox here: {probe.check().reason}")
    outside = tmp_path / "outside.txt"
    leave = f"python3 -c \"open('{outside}', 'w').write('x')\""
    fake_llm.script([Reply(calls=[Call("run_command", {"command": f"touch made.txt && {leave}"})]), Reply("done")])
    ran = await run(
        tmp_path, "--cwd", str(work), "--output-format", "stream-json", "go", llm=fake_llm, env={"CI": "true"}
    )
    events = [json.loads(line) for line in ran.stdout.splitlines()]
    assert events[0]["type"] == "session" and events[0]["mode"] == "auto"
    assert (work / "made.txt").exists() and not outside.exists()  # ran unasked, inside the walls
    assert ran.code == 3 and "needs to run outside the sandbox" in events[-1]["error"]  # no one to ask in CI
    assert "Traceback" not in ran.stderr and len(fake_llm.requests) == 1


async def test_auto_without_a_sandbox_is_refused_and_ci_falls_back_to_read_only(
    tmp_path: Path, work: Path, fake_llm: FakeLLM
) -> None:
    config = tmp_path / "no-sandbox.toml"
    config.write_text("[sandbox]\nenabled = false\n")
    env = {"CODER_AGENT_CONFIG": str(config)}
    ran = await run_here(tmp_path, "--cwd", str(work), "--mode", "auto", "go", llm=fake_llm, env=env)
    assert ran.code == 1 and "--mode auto needs the sandbox" in ran.stderr and "--mode full-auto" in ran.stderr
    assert "sandbox.enabled is off" in ran.stderr
    fake_llm.script([Reply("looked")])
    ran = await run_here(
        tmp_path, "--cwd", str(work), "--output-format", "json", "go", llm=fake_llm, env={**env, "CI": "1"}
    )
    assert ran.code == 0 and ran.json()["answer"] == "looked"


@pytest.mark.parametrize("tool_requests", [0, 3])
async def test_usage_and_cost_count_every_request_of_a_slowly_streamed_turn(
    tmp_path: Path, work: Path, fake_llm: FakeLLM, tool_requests: int
) -> None:
    reads = [
        Reply(calls=[Call("read_file", {"path": f"part{i}.py"})], usage=Usage(1000, 10)) for i in range(tool_requests)
    ]
    answer = Reply("It prints hello.", usage=Usage(1200, 20), chunk_size=3)
    script = [Fault.slow(0.03, reply) for reply in [*reads, answer]]  # 30 ms between chunks, as a real server
    fake_llm.script(script)
    priced = {"CODER_AGENT_MODEL": "openai/gpt-4o-mini"}  # a model litellm has a price for
    args = ["--cwd", str(work), "--output-format", "json", "What does main.py print?"]
    ran = await run_here(tmp_path, *args, llm=fake_llm, env=priced)
    assert ran.code == 0, ran.stderr
    result = ran.json()
    requests = tool_requests + 1
    assert result["usage"]["model_requests"] == requests, "the last request's usage is waited for"
    assert result["usage"]["tokens"] == 1010 * tool_requests + 1220
    assert result["cost"] is not None and result["cost"] > 0
    fake_llm.script(script)
    text = await run_here(tmp_path, "--cwd", str(work), "What does main.py print?", llm=fake_llm, env=priced)
    assert text.code == 0, text.stderr
    counted = f"{requests} model request{'s' if requests > 1 else ''}, {result['usage']['tokens']:,} tokens"
    assert counted in text.stderr, "the terminal footer counts them too"


async def test_append_system_prompt_joins_the_instructions_and_stays_with_the_session(
    tmp_path: Path, work: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.script([Reply("ok"), Reply("still ok")])
    args = ["--cwd", str(work), "--output-format", "json"]
    ran = await run_here(tmp_path, *args, "--append-system-prompt", "Answer in French.", "hi", llm=fake_llm)
    assert ran.code == 0, ran.stderr
    system = fake_llm.last_request["messages"][0]["content"]
    assert system.rstrip().endswith("Answer in French.") and "# Instructions for this session" in system
    again = await run_here(tmp_path, *args, "--continue", "again", llm=fake_llm)
    assert again.code == 0 and fake_llm.last_request["messages"][0]["content"] == system
    from coder_agent.headless.run_options import UsageError

    with pytest.raises(UsageError, match="the instructions are empty"):  # exit status 2, as every usage error
        await run_here(tmp_path, *args, "--append-system-prompt", "  ", "hi", llm=fake_llm)


async def test_a_guessed_context_window_is_said_in_the_usage_line_with_how_to_set_it(
    tmp_path: Path, work: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.script([Reply.tool("read_file", {"path": "main.py"}), Reply("It prints hello.")])
    ran = await run_here(tmp_path, "--cwd", str(work), "what does main.py do?", llm=fake_llm)
    assert ran.code == 0, ran.stderr
    usage = ran.stderr.strip().splitlines()[-1]
    assert usage.startswith("session sess_") and " · 2 model requests, " in usage
    assert " of 32,768 tokens, a guess: the model's window is not known (set CODER_AGENT_CONTEXT_WINDOW)" in usage

    fake_llm.script([Reply("Still hello.")])
    env = {"CODER_AGENT_CONTEXT_WINDOW": "64000"}
    args = ["--cwd", str(work), "--output-format", "json", "and now?"]
    ran = await run_here(tmp_path, *args, llm=fake_llm, env=env)
    assert ran.code == 0 and "a guess" not in ran.stderr
    assert ran.json()["usage"]["context_window"] == 64000
    assert ran.json()["usage"]["context_window_guessed"] is False
