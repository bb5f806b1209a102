"""What the system prompt tells the model about where it works: folder, git state, AGENTS.md files."""

from __future__ import annotations

from pathlib import Path

import pytest

from coder_agent.model.scripted import Reply, ScriptedModel
from tests.support.acp_client import in_process_agent
from tests.support.scripted_agent import scripted_runner, scripted_source

pytestmark = pytest.mark.anyio


async def test_system_prompt_has_git_and_agents_files(tmp_path: Path) -> None:
    import git

    work = tmp_path / "work"
    (work / "pkg").mkdir(parents=True)
    repo = git.Repo.init(work, initial_branch="feature-x")
    (work / "AGENTS.md").write_text("Root rule: use tabs.")
    (work / "pkg" / "AGENTS.md").write_text("Package rule: no globals.")
    repo.index.add(["AGENTS.md"])
    repo.index.commit("first commit", author=git.Actor("t", "t@example.com"), committer=git.Actor("t", "t@example.com"))
    repo.close()
    model = ScriptedModel([Reply("ok")])
    async with in_process_agent(scripted_runner(model), source=scripted_source(tmp_path)) as client:
        await client.initialize()
        session = await client.new_session(str(work / "pkg"))
        await client.prompt(session, "hi")
    system = str(model.last_request.messages[0]["content"])
    assert "feature-x" in system
    assert "first commit" in system
    assert system.index("Root rule") < system.index("Package rule")
