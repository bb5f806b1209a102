"""`coder-agent run` in a mode that edits: a run that changed files and ends without checking them gets the one
follow-up of `agent.finish_check`; one in read-only gets none."""

from __future__ import annotations

from pathlib import Path

import pytest

from coder_agent import prompts
from tests.support.fake_llm import FakeLLM, Reply
from tests.support.headless import run_here

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

FOLLOW_UP = prompts.load("check_before_finishing.md")


@pytest.mark.parametrize(("mode", "followed_up"), [("accept-edits", True), ("read-only", False)])
async def test_a_run_that_changed_files_is_asked_to_check_them(
    tmp_path: Path, fake_llm: FakeLLM, mode: str, followed_up: bool
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    fake_llm.script(
        [
            Reply.tool("write_file", {"path": "notes.txt", "content": "remember\n"}),
            Reply("Written."),
            Reply("No tests in this folder: nothing to run."),
        ]
    )
    args = ["--cwd", str(work), "--mode", mode, "--output-format", "json", "note it"]
    ran = await run_here(tmp_path, *args, llm=fake_llm)
    assert ran.code == (0 if followed_up else 3), ran.stderr  # read-only: the refused write ends the run with 3
    sent = [m for r in fake_llm.requests for m in r["messages"] if m["role"] == "user" and m["content"] == FOLLOW_UP]
    assert bool(sent) == followed_up
    assert len(fake_llm.requests) == (3 if followed_up else 2)
