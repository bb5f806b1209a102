"""Sessions a person can find: `coder-agent sessions` lists the folder's (or every folder's) with their title, age
and model; `run --resume` takes the start of an id, or, on a terminal, offers the folder's sessions to pick from;
and `coder-agent "fix it"` is `coder-agent run "fix it"`."""

from __future__ import annotations

import contextlib
import io
import json
import os
import pty
import sys
from pathlib import Path

import anyio
import pytest
from rich.console import Console

from tests.support.fake_llm import FakeLLM, Reply
from tests.support.headless import RUN_WAIT, environment_of, run_here
from tests.support.spawn import agent_env

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    return one, two


async def made(tmp_path: Path, cwd: Path, prompt: str, llm: FakeLLM, *more: str) -> str:
    llm.script([Reply("Done.")])
    ran = await run_here(tmp_path, "--cwd", str(cwd), "--output-format", "json", *more, prompt, llm=llm)
    assert ran.code == 0, ran.stderr
    return str(ran.json()["session_id"])


def sessions_here(tmp_path: Path, cwd: Path, *args: str) -> str:
    """`coder-agent sessions ARGS` in this process, in `cwd`, with the store a spawned one would use."""
    from coder_agent.cli import parse_args
    from coder_agent.headless.sessions import main

    parsed = parse_args(["sessions", *args])
    out = io.StringIO()
    with environment_of(agent_env(tmp_path)), contextlib.redirect_stdout(out):
        assert main(cwd, every_folder=parsed.every_folder, as_json=parsed.as_json) == 0
    return out.getvalue()


async def test_sessions_lists_this_folders_newest_first(
    tmp_path: Path, folders: tuple[Path, Path], fake_llm: FakeLLM
) -> None:
    one, two = folders
    first = await made(tmp_path, one, "Fix the flaky test", fake_llm)
    second = await made(tmp_path, one, "Explain the cache", fake_llm, "--model", "openai/other-model")
    elsewhere = await made(tmp_path, two, "Elsewhere", fake_llm)

    listed = sessions_here(tmp_path, one).splitlines()
    assert [line.split()[0] for line in listed] == [second, first]
    assert listed[0].split()[1:] == ["just", "now", "openai/other-model", "Explain", "the", "cache"]
    assert listed[1].split()[1:] == ["just", "now", "openai/fake-model", "Fix", "the", "flaky", "test"]
    assert elsewhere not in "".join(listed)

    rows = json.loads(sessions_here(tmp_path, one, "--all", "--json"))
    assert [row["session_id"] for row in rows] == [elsewhere, second, first]
    assert {key: rows[0][key] for key in ("title", "model", "cwd")} == {
        "title": "Elsewhere",
        "model": "openai/fake-model",
        "cwd": str(two),
    }
    assert rows[0]["updated_at"].endswith("Z")


async def test_a_session_is_resumed_by_the_start_of_its_id(
    tmp_path: Path, folders: tuple[Path, Path], fake_llm: FakeLLM
) -> None:
    one, _ = folders
    session = await made(tmp_path, one, "first", fake_llm)
    fake_llm.script([Reply("Again.")])
    ran = await run_here(tmp_path, "--resume", session[:12], "--output-format", "json", "again", llm=fake_llm)
    assert ran.code == 0, ran.stderr
    assert ran.json()["session_id"] == session
    missing = await run_here(tmp_path, "--resume", "sess_nope", "again", llm=fake_llm)
    assert missing.code == 1 and "No session 'sess_nope': `coder-agent sessions` lists" in missing.stderr


async def test_resume_without_an_id_offers_the_folders_sessions_on_a_terminal(
    tmp_path: Path, folders: tuple[Path, Path], fake_llm: FakeLLM
) -> None:
    from coder_agent.headless.sessions import pick
    from coder_agent.store import SessionStore

    one, _ = folders
    older = await made(tmp_path, one, "The older one", fake_llm)
    await made(tmp_path, one, "The newer one", fake_llm)
    console = Console(file=io.StringIO(), record=True, width=120)
    master, slave = pty.openpty()
    picked: list[str] = []
    try:
        with environment_of(agent_env(tmp_path)):
            store = SessionStore()
            async with anyio.create_task_group() as tasks:

                async def choose() -> None:
                    picked.append(await pick(store, one, console, terminal_fd=slave))

                tasks.start_soon(choose)
                with anyio.fail_after(RUN_WAIT):
                    while "Resume which? 1-2" not in console.export_text(clear=False):
                        await anyio.wait_all_tasks_blocked()
                os.write(master, b"2\n")
    finally:
        os.close(master)
        os.close(slave)
    shown = console.export_text()
    assert picked == [older]
    assert f"Sessions in {one}, latest first:" in shown
    assert "[1]" in shown and "The newer one" in shown and "[2]" in shown and "The older one" in shown


async def test_a_bare_prompt_runs_like_run(tmp_path: Path, folders: tuple[Path, Path], fake_llm: FakeLLM) -> None:
    one, _ = folders
    fake_llm.script([Reply("Fixed, nothing to do.")])
    with anyio.fail_after(RUN_WAIT):
        done = await anyio.run_process(
            [sys.executable, "-m", "coder_agent", "--cwd", str(one), "fix it"],
            env=agent_env(tmp_path, fake_llm),
            check=False,
            stdin=-3,  # /dev/null
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode() == "Fixed, nothing to do.\n"


def test_no_sessions_says_where_it_looked(tmp_path: Path, folders: tuple[Path, Path]) -> None:
    from coder_agent.headless.sessions import main

    err = io.StringIO()
    with environment_of(agent_env(tmp_path)), contextlib.redirect_stderr(err):
        assert main(folders[0], every_folder=False, as_json=False) == 0
    assert f"No sessions in {folders[0]} (`coder-agent sessions --all` lists every folder's)." in err.getvalue()
    assert sessions_here(tmp_path, folders[0], "--json") == "[]\n"
