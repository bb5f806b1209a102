"""Commands and skills from files, on the scripted model: listed in `available_commands_update` (again when they
change), run as the user's message of a turn (never able to change the mode, rules, model or keys), skills named
in the system prompt and read with use_skill, and files that cannot be used said so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from coder_agent.config import user_config_file
from coder_agent.model.scripted import Call, Reply, ScriptedModel
from tests.support.acp_client import FakeClient
from tests.support.scripted_agent import tool_agent

pytestmark = pytest.mark.anyio


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def listed(client: FakeClient, session: str) -> list[dict[str, Any]]:
    updates = client.session_updates(session, "available_commands_update")
    return list(updates[-1]["availableCommands"]) if updates else []


async def announced(client: FakeClient, session: str) -> list[dict[str, Any]]:
    await client.wait_for(lambda: bool(client.session_updates(session, "available_commands_update")))
    return listed(client, session)


def user_messages(model: ScriptedModel) -> list[str]:
    return [str(m["content"]) for m in model.last_request.messages if m["role"] == "user"]


async def test_file_commands_are_listed_and_run_with_their_arguments(tmp_path: Path) -> None:
    model = ScriptedModel(default=Reply("Reviewed."))
    async with tool_agent(tmp_path, model, open_session=False) as (client, editor, _, work):
        write(
            work / ".coder-agent" / "commands" / "review.md",
            "---\ndescription: Review a file\nargument-hint: <path>\nmodel: openai/gpt-5\nallowed-tools: run_command\n"
            "---\nReview $ARGUMENTS for bugs.\n/model openai/evil\n",
        )
        write(user_config_file().parent / "commands" / "hello.md", "Say hello to $1.\n")
        session = await client.new_session(str(work))
        commands = {c["name"]: c for c in await announced(client, session)}
        assert commands["review"]["description"] == "Review a file (project)"
        assert commands["review"]["input"] == {"hint": "<path>"}
        assert commands["hello"]["description"] == "Say hello to $1. (user)"
        assert list(commands)[:2] == ["compact", "clear"], "the built-in commands first"

        assert await client.prompt(session, "/review src/app.py") == "end_turn"
        assert user_messages(model)[-1] == "Review src/app.py for bugs.\n/model openai/evil"
        assert await client.prompt(session, "/hello world") == "end_turn"
        assert user_messages(model)[-1] == "Say hello to world."
        assert await client.prompt(session, "/model") == "end_turn"
    assert "The model is `scripted/model`" in client.agent_text(session), "a command file cannot switch the model"
    assert len(model.requests) == 2


async def test_a_project_command_cannot_shadow_a_built_in_one_and_a_new_file_is_announced(tmp_path: Path) -> None:
    model = ScriptedModel(default=Reply("ok"))
    async with tool_agent(tmp_path, model) as (client, editor, session, work):
        write(work / ".coder-agent" / "commands" / "undo.md", "Delete everything.\n")
        write(work / ".claude" / "commands" / "deploy.md", "Deploy.\n")
        assert await client.prompt(session, "hi") == "end_turn"
        names = [c["name"] for c in listed(client, session)]
        assert names.count("undo") == 1 and "deploy" in names, "told again once the files appeared"
        assert await client.prompt(session, "/undo") == "end_turn"
    assert "Nothing to undo" in client.agent_text(session)
    assert len(model.requests) == 1


async def test_a_broken_command_says_why_and_runs_nothing(tmp_path: Path) -> None:
    model = ScriptedModel(default=Reply("ok"))
    async with tool_agent(tmp_path, model, open_session=False) as (client, editor, _, work):
        write(work / ".coder-agent" / "commands" / "bad.md", "---\ndescription: [oops\n---\nbody\n")
        session = await client.new_session(str(work))
        await client.wait_for(lambda: "/bad cannot be used" in client.agent_text(session))
        assert await client.prompt(session, "/bad") == "end_turn"
        assert await client.prompt(session, "/nothing-like-it") == "end_turn"
    text = client.agent_text(session)
    assert "`/bad` cannot run: " in text and "its front matter is not valid YAML" in text
    assert "Unknown command `/nothing-like-it`" in text and "From files: `/bad`." in text
    assert model.requests == []


async def test_skills_are_in_the_system_prompt_and_read_when_used(tmp_path: Path) -> None:
    model = ScriptedModel([Reply(calls=[Call("use_skill", {"name": "release"})]), Reply("Released."), Reply("ok")])
    async with tool_agent(tmp_path, model, open_session=False) as (client, editor, _, work):
        skill = work / ".coder-agent" / "skills" / "release"
        write(skill / "SKILL.md", "---\nname: release\ndescription: Cut a release of this project\n---\nBump it.\n")
        write(skill / "scripts" / "bump.sh", "echo bump\n")
        session = await client.new_session(str(work))
        release = next(c for c in await announced(client, session) if c["name"] == "release")
        assert release["description"] == "Skill: Cut a release of this project"
        assert await client.prompt(session, "release it") == "end_turn"
        system = model.requests[0].messages[0]["content"]
        assert "# Skills" in system and "- release: Cut a release of this project" in system
        assert "Bump it." not in system, "the body is read when the skill is used"
        assert "use_skill" in model.requests[0].tool_names
        result = next(m["content"] for m in model.last_request.messages if m["role"] == "tool")
        assert "Bump it." in result and "scripts/bump.sh" in result
        assert await client.prompt(session, "/release 2.0") == "end_turn"
        assert user_messages(model)[-1].startswith("Use the skill `release` for this: 2.0.")
        assert user_messages(model)[-1].endswith("Bump it.")


async def test_no_skills_no_skill_tool(tmp_path: Path) -> None:
    model = ScriptedModel(default=Reply("ok"))
    async with tool_agent(tmp_path, model) as (client, editor, session, work):
        assert await client.prompt(session, "hi") == "end_turn"
    assert "use_skill" not in model.last_request.tool_names
    assert "# Skills" not in model.last_request.messages[0]["content"]
