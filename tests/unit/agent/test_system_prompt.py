"""What the model is told about where it works: a system prompt fixed for the conversation (folder, git state,
AGENTS.md files, mode), short environment updates when those change, and when the prompt is built anew."""

from __future__ import annotations

from pathlib import Path

import pytest

from coder_agent.agent import workspace
from coder_agent.model.scripted import Reply, Request, ScriptedModel
from coder_agent.store import SessionStore
from tests.support.acp_client import in_process_agent
from tests.support.scripted_agent import scripted_agent, scripted_runner, scripted_source

pytestmark = pytest.mark.anyio


def make_repo(work: Path, branch: str = "main") -> None:
    import git

    work.mkdir(parents=True, exist_ok=True)
    repo = git.Repo.init(work, initial_branch=branch)
    (work / "app.py").write_text("x = 1\n")
    (work / "AGENTS.md").write_text("Root rule: use tabs.")
    repo.index.add(["app.py", "AGENTS.md"])
    actor = git.Actor("t", "t@example.com")
    repo.index.commit("first commit", author=actor, committer=actor)
    repo.close()


def system(request: Request) -> str:
    return str(request.messages[0]["content"])


def updates(request: Request) -> list[str]:
    return [str(m["content"]) for m in request.messages[1:] if str(m["content"]).startswith("[Environment update")]


async def test_system_prompt_has_git_and_agents_files(tmp_path: Path) -> None:
    make_repo(tmp_path / "work", branch="feature-x")
    (tmp_path / "work" / "pkg").mkdir()
    (tmp_path / "work" / "pkg" / "AGENTS.md").write_text("Package rule: no globals.")
    model = ScriptedModel([Reply("ok")])
    async with in_process_agent(scripted_runner(model), source=scripted_source(tmp_path)) as client:
        await client.initialize()
        session = await client.new_session(str(tmp_path / "work" / "pkg"))
        await client.prompt(session, "hi")
    prompt = system(model.last_request)
    assert "Git branch: feature-x" in prompt
    assert "first commit" in prompt
    assert "Git status: 1 untracked" in prompt
    assert prompt.index("Root rule") < prompt.index("Package rule")
    assert "Permission mode: Ask" in prompt


async def test_changes_reach_the_model_as_updates_and_the_system_prompt_stays(tmp_path: Path) -> None:
    work = tmp_path / "work"
    make_repo(work)
    model = ScriptedModel(default=Reply("ok"))
    async with scripted_agent(tmp_path, model) as (client, session, _):
        await client.prompt(session, "one")
        await client.prompt(session, "two")
        assert updates(model.last_request) == [], "nothing changed: nothing is said"
        (work / "app.py").write_text("x = 2\n")
        (work / "AGENTS.md").write_text("Root rule: use spaces.")
        await client.request("session/set_mode", {"sessionId": session, "modeId": "read-only"})
        await client.prompt(session, "three")
        await client.prompt(session, "four")
    first, *_, last = model.requests
    assert system(last) == system(first), "the same system prompt for the whole conversation"
    (update,) = updates(last)
    assert "Git status: 2 modified" in update
    assert f"Project instructions from {work / 'AGENTS.md'}: Root rule: use spaces." in update
    assert "Permission mode: Read only" in update
    assert "Git branch" not in update, "only what changed"
    contents = [m["content"] for m in last.messages[1:] if m["role"] == "user"]
    assert contents == ["one", "two", update, "three", "four"], "the update comes right before the next prompt"


async def test_a_fact_that_disappears_is_said_to_no_longer_apply(tmp_path: Path) -> None:
    work = tmp_path / "work"
    make_repo(work)
    model = ScriptedModel(default=Reply("ok"))
    async with scripted_agent(tmp_path, model) as (client, session, _):
        await client.prompt(session, "one")
        (work / "AGENTS.md").unlink()
        await client.prompt(session, "two")
    (update,) = updates(model.last_request)
    assert f"Project instructions from {work / 'AGENTS.md'}: no longer applies" in update


async def test_a_reopened_session_keeps_its_system_prompt(tmp_path: Path) -> None:
    work = tmp_path / "work"
    make_repo(work)
    store = SessionStore(tmp_path / "store")
    model = ScriptedModel(default=Reply("ok"))
    async with scripted_agent(tmp_path, model, store=store) as (client, session, _):
        await client.prompt(session, "before")
    (work / "app.py").write_text("x = 3\n")
    async with scripted_agent(tmp_path, model, store=store, open_session=False) as (client, _, _):
        await client.request("session/load", {"sessionId": session, "cwd": str(work), "mcpServers": []})
        await client.prompt(session, "after")
    first, last = model.requests
    assert system(last) == system(first), "the stored prompt, not one rebuilt with the new git state"
    (update,) = updates(last)
    assert "Git status: 1 modified" in update


@pytest.mark.parametrize("restart", ["/clear", "/compact", "model"])
async def test_a_restarted_conversation_gets_a_fresh_system_prompt(tmp_path: Path, restart: str) -> None:
    work = tmp_path / "work"
    make_repo(work)
    model = ScriptedModel(default=Reply("ok"))
    async with scripted_agent(tmp_path, model, models=["scripted/other"]) as (client, session, _):
        await client.prompt(session, "one")
        await client.prompt(session, "two")
        (work / "app.py").write_text("x = 2\n")
        if restart == "model":
            params = {"sessionId": session, "configId": "model", "value": "scripted/other"}
            await client.request("session/set_config_option", params)
        else:
            await client.prompt(session, restart)
        await client.prompt(session, "three")
    assert "Git status: clean" in system(model.requests[0])
    assert "Git status: 1 modified" in system(model.last_request)
    assert updates(model.last_request) == [], "the new prompt already says it"


async def test_git_state_read_without_gitpython(tmp_path: Path) -> None:
    import git

    outside = await workspace.describe(tmp_path, [])
    assert outside.git is None
    work = tmp_path / "work"
    make_repo(work)
    (work / "sub").mkdir()
    inside = await workspace.describe(work / "sub", [])
    assert inside.git is not None
    assert inside.git.branch == "main"
    assert inside.git.recent_commits[0].endswith(" first commit")
    assert [a.path for a in inside.agents_files] == [str(work / "AGENTS.md")]
    repo = git.Repo(work)
    repo.git.checkout(repo.head.commit.hexsha)
    repo.close()
    detached = await workspace.describe(work, [])
    assert detached.git is not None and detached.git.branch.startswith("detached at ")
    empty = tmp_path / "empty"
    git.Repo.init(empty).close()
    fresh = await workspace.describe(empty, [])
    assert fresh.git is not None and fresh.git.branch == "(no commits yet)" and fresh.git.recent_commits == []
