"""`coder-agent run` has no one watching: whatever its mode, the model is told to finish the task on its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.fake_llm import FakeLLM, Reply
from tests.support.headless import run_here
from tests.support.spawn import stored_session

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def test_a_run_works_on_its_own_in_any_mode(tmp_path: Path, fake_llm: FakeLLM) -> None:
    work = tmp_path / "project"
    work.mkdir()
    fake_llm.script([Reply("Done."), Reply("Done again.")])
    ran = await run_here(tmp_path, "--cwd", str(work), "--mode", "default", "fix the tests", llm=fake_llm)
    assert ran.code == 0, ran.stderr
    system = fake_llm.requests[0]["messages"][0]["content"]
    assert "# Working on your own" in system and "Keep going until the task is completely done" in system
    assert "Ask the user with `ask_user`" not in system


async def test_a_run_in_plan_mode_with_no_one_to_approve_answers_with_the_plan(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    work = tmp_path / "project"
    work.mkdir()
    plan = {"plan": "## Plan\n\nRename the module.", "steps": ["Rename it", "Fix the imports"]}
    fake_llm.script([Reply.tool("propose_plan", plan)])
    ran = await run_here(tmp_path, "--cwd", str(work), "--mode", "plan", "plan the rename", llm=fake_llm)
    assert ran.code == 0, ran.stderr
    assert ran.stdout == "## Plan\n\nRename the module.\n", "the plan itself is the answer"
    assert len(fake_llm.requests) == 1, "the turn ends with the plan: no request for a summary of it"
    fake_llm.script([Reply.tool("propose_plan", plan)])
    ran = await run_here(
        tmp_path, "--cwd", str(work), "--mode", "plan", "--output-format", "json", "plan it", llm=fake_llm
    )
    assert ran.json()["answer"] == "## Plan\n\nRename the module."
    stored = json.loads(stored_session(tmp_path, ran.json()["session_id"]))["messages"]
    result = next(m["content"] for m in stored if m["role"] == "tool")
    assert "No one can approve the plan here" in result and "the plan itself is the answer" in result


async def test_the_session_is_titled_after_the_prompt_not_what_was_piped_next_to_it(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    work = tmp_path / "project"
    work.mkdir()
    fake_llm.script([Reply("It prints.")])
    ran = await run_here(
        tmp_path, "--cwd", str(work), "--output-format", "json", "explain this", llm=fake_llm, stdin="print('hi')\n"
    )
    assert ran.code == 0, ran.stderr
    record = json.loads(stored_session(tmp_path, ran.json()["session_id"]))
    assert record["title"] == "explain this"
    sent = [m["content"] for m in fake_llm.last_request["messages"] if m["role"] == "user"][-1]
    assert sent.startswith("explain this\n\nInput piped to the command (stdin):\n```")
