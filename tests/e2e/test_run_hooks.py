"""Hooks in `coder-agent run`: the user's run there as in an editor; a project file's, where no one can be asked
(no terminal), do not run, and the run says so once and goes on (it is not a refusal: the exit status stays 0)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.fake_llm import FakeLLM, Reply
from tests.support.headless import run_here

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def test_a_projects_hooks_do_not_run_without_someone_to_trust_them(tmp_path: Path, fake_llm: FakeLLM) -> None:
    work = tmp_path / "project"
    (work / ".coder-agent").mkdir(parents=True)
    (work / ".coder-agent" / "config.toml").write_text('[[hooks.turn_end]]\ncommand = "touch project-hook-ran"\n')
    user = tmp_path / "xdg-config" / "coder-agent" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text('[[hooks.turn_end]]\ncommand = "cat > user-hook.json"\n')
    fake_llm.script([Reply("Hello."), Reply("Again.")])
    ran = await run_here(tmp_path, "--cwd", str(work), "say hello", llm=fake_llm)
    assert ran.code == 0, ran.stderr
    assert ran.stdout == "Hello.\n"
    assert not (work / "project-hook-ran").exists()
    assert ran.stderr.count("The project's hooks were not run") == 1, ran.stderr
    assert "no one can be asked here" in ran.stderr
    assert json.loads((work / "user-hook.json").read_text())["answer"] == "Hello.", "the user's own hooks run"
