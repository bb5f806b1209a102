"""Plan mode: read-only tools and the plan; `propose_plan` asks the user to approve the plan and pick the mode to go
on in, or to keep planning; the plan is the ACP `plan`, and a Markdown `plan_update` for clients that show plans."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from coder_agent.model.scripted import Call, Reply, ScriptedModel
from tests.support.scripted_agent import scripted_agent, tool_agent

pytestmark = pytest.mark.anyio

PLAN = "## Plan\n\n1. Change `x = 1` to `x = 2` in app.py.\n2. Check it."
PROPOSE = Call("propose_plan", {"plan": PLAN, "steps": ["Edit app.py", "Check it"]})


def results(model: ScriptedModel) -> list[str]:
    return [m["content"] for m in model.last_request.messages if m["role"] == "tool"]


async def test_plan_mode_refuses_changes_then_an_approved_plan_goes_on_in_accept_edits(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            Reply(calls=[Call("read_file", {"path": "app.py"})]),
            Reply(calls=[Call("edit_file", {"path": "app.py", "old_string": "x = 1", "new_string": "x = 2"})]),
            Reply(calls=[Call("run_command", {"command": "ls"})]),
            Reply("Here is my plan.", calls=[PROPOSE]),
            Reply(calls=[Call("edit_file", {"path": "app.py", "old_string": "x = 1", "new_string": "x = 2"})]),
            Reply("Done."),
        ]
    )
    async with tool_agent(tmp_path, model, mode="plan") as (client, editor, session, work):
        (work / "app.py").write_text("x = 1\n")
        editor.permission_answers = ["option:approve:accept-edits"]
        assert await client.prompt(session, "bump x") == "end_turn"
        assert (work / "app.py").read_text() == "x = 2\n"
        modes = [u["currentModeId"] for u in client.session_updates(session, "current_mode_update")]
        assert modes == ["accept-edits"]
        options = client.session_updates(session, "config_option_update")[-1]["configOptions"]
        assert options[0]["currentValue"] == "accept-edits"
    _, edit_refused, command_refused, approved, edited = results(model)
    assert "plan mode" in edit_refused and "propose_plan" in edit_refused
    assert "plan mode" in command_refused
    assert "approved the plan" in approved and "accept-edits mode" in approved
    assert "has been edited" in edited or "Edited" in edited
    assert len(editor.permission_requests) == 1, "the approved plan's edit ran without asking (accept edits)"
    asked = editor.permission_requests[0]
    assert [o["optionId"] for o in asked["options"]] == [
        "allow_once",  # the most careful approval first: into the ask mode
        "approve:accept-edits",
        "approve:auto",  # this machine sandboxes commands
        "keep-planning",
    ]
    assert [o["kind"] for o in asked["options"]][-1] == "reject_once"
    names = [o["name"] for o in asked["options"]]
    assert len(set(names)) == len(names), "CodeCompanion showed three identical entries"
    assert ["Ask mode" in names[0], "Accept edits mode" in names[1], "Auto mode" in names[2]] == [True] * 3
    assert asked["toolCall"]["content"][0]["content"]["text"] == PLAN, "the plan itself is what the user reads"
    plan = client.session_updates(session, "plan")[0]["entries"]
    assert [(e["content"], e["status"]) for e in plan] == [("Edit app.py", "pending"), ("Check it", "pending")]
    assert client.session_updates(session, "plan_update") == [], "the client did not advertise plans"
    system = model.last_request.messages[0]["content"]
    assert "# Planning" in system and "propose_plan" in system


async def test_keep_planning_ends_the_turn_and_stays_in_plan_mode(tmp_path: Path) -> None:
    model = ScriptedModel([Reply(calls=[PROPOSE]), Reply("A better plan.", calls=[PROPOSE])])
    async with tool_agent(tmp_path, model, mode="plan") as (client, editor, session, _):
        editor.permission_answers = ["option:keep-planning", "cancelled"]
        assert await client.prompt(session, "plan it") == "end_turn"
        assert len(model.requests) == 1, "the turn ended at the answer"
        assert client.session_updates(session, "current_mode_update") == []
        assert await client.prompt(session, "use a dict instead") == "cancelled"
    feedback = model.requests[1].messages
    assert "keep planning" in feedback[-2]["content"] and feedback[-1]["content"] == "use a dict instead"


async def test_plans_go_as_markdown_to_clients_that_show_them(tmp_path: Path) -> None:
    model = ScriptedModel([Reply(calls=[PROPOSE]), Reply("ok")])
    capabilities: dict[str, Any] = {"fs": {"readTextFile": False, "writeTextFile": False}, "plan": {}}
    async with scripted_agent(tmp_path, model, editor=True, capabilities=capabilities, default_mode="plan") as (
        client,
        session,
        editor,
    ):
        assert editor is not None
        editor.permission_answers = ["option:allow_once"]
        assert await client.prompt(session, "plan it") == "end_turn"
    document = client.session_updates(session, "plan_update")[0]["plan"]
    assert document == {"type": "markdown", "id": "proposed-plan", "planId": "proposed-plan", "content": PLAN}
    assert client.session_updates(session, "plan_removed") == [], "an approved plan stays shown"
    assert [u["currentModeId"] for u in client.session_updates(session, "current_mode_update")] == ["default"]
    environment = [m["content"] for m in model.last_request.messages if m["role"] == "user"]
    assert not any("Environment update" in text for text in environment), "the switch is told at the next prompt"


async def test_the_model_is_told_when_the_mode_changes_in_and_out_of_plan_mode(tmp_path: Path) -> None:
    model = ScriptedModel([Reply("one"), Reply("two")])
    async with tool_agent(tmp_path, model) as (client, _, session, _):
        assert await client.prompt(session, "hello") == "end_turn"
        await client.request("session/set_mode", {"sessionId": session, "modeId": "plan"})
        assert await client.prompt(session, "plan a change") == "end_turn"
    update = [m["content"] for m in model.last_request.messages if m["role"] == "user"][-2]
    assert update.startswith("[Environment update")
    assert "Permission mode: Plan" in update and "in plan mode: understand first" in update


async def test_propose_plan_outside_plan_mode_says_to_carry_on(tmp_path: Path) -> None:
    model = ScriptedModel([Reply(calls=[PROPOSE]), Reply("ok")])
    async with tool_agent(tmp_path, model) as (client, editor, session, _):
        assert await client.prompt(session, "do it") == "end_turn"
    assert "not in it" in results(model)[0] and "update_plan" in results(model)[0]
    assert editor.permission_requests == []


async def test_an_answer_that_names_no_offered_option_keeps_planning(tmp_path: Path) -> None:
    model = ScriptedModel([Reply(calls=[PROPOSE])])
    async with tool_agent(tmp_path, model, mode="plan") as (client, editor, session, _):
        editor.permission_answers = ["id:approve:full-auto"]
        assert await client.prompt(session, "plan it") == "end_turn"
        assert client.session_updates(session, "current_mode_update") == []
        assert len(model.requests) == 1, "the turn ended: the user keeps planning"


@pytest.mark.parametrize("client", ["acpx --approve-all", "acp.el", "avante auto-approve"])
async def test_a_client_that_picks_the_first_allowing_option_approves_into_the_ask_mode(
    tmp_path: Path, client: str
) -> None:
    """These clients approve by taking the first option of kind allow_once: it must be the most careful one."""
    model = ScriptedModel([Reply(calls=[PROPOSE]), Reply(calls=[Call("run_command", {"command": "ls"})]), Reply("ok")])
    async with tool_agent(tmp_path, model, mode="plan") as (acp, editor, session, _):
        editor.permission_answers = ["allow_once", "reject_once"]  # the first allow_once; then the command is asked
        assert await acp.prompt(session, "plan it") == "end_turn"
        assert [u["currentModeId"] for u in acp.session_updates(session, "current_mode_update")] == ["default"]
    assert len(editor.permission_requests) == 2, "in the ask mode the plan's first command is asked about"


@pytest.mark.parametrize("answer", ["option:keep-planning", "cancelled"])
async def test_a_plan_kept_planning_or_cancelled_is_removed_where_plans_are_shown(tmp_path: Path, answer: str) -> None:
    """`plan_removed` (plan operations): the proposal is dropped when the user keeps planning or cancels."""
    model = ScriptedModel([Reply(calls=[PROPOSE])])
    capabilities: dict[str, Any] = {"fs": {"readTextFile": False, "writeTextFile": False}, "planCapabilities": {}}
    async with scripted_agent(tmp_path, model, editor=True, capabilities=capabilities, default_mode="plan") as (
        client,
        session,
        editor,
    ):
        assert editor is not None
        editor.permission_answers = [answer]
        stop = await client.prompt(session, "plan it")
    assert stop == ("end_turn" if answer.startswith("option:") else "cancelled")
    kinds = [u["sessionUpdate"] for u in client.session_updates(session) if u["sessionUpdate"].startswith("plan_")]
    assert kinds == ["plan_update", "plan_removed"]
    assert client.session_updates(session, "plan_removed")[0] == {
        "sessionUpdate": "plan_removed",
        "id": "proposed-plan",
        "planId": "proposed-plan",
    }
