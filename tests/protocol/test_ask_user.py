"""The `ask_user` tool: a form elicitation tied to the tool call where the client shows forms, the question as the
agent's message (ending the turn) where it does not; answers, refusals and cancels are plain results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from coder_agent.model.scripted import Call, Reply, ScriptedModel
from tests.support.asker import CANCEL, DECLINE, FakeAsker, accept, elicitation_capabilities
from tests.support.scripted_agent import scripted_agent

pytestmark = pytest.mark.anyio

NO_FS = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
FORMS = {**NO_FS, "elicitation": elicitation_capabilities(form=True, url=False)}


def ask(call_id: str = "q1", **arguments: Any) -> Reply:
    return Reply(calls=[Call("ask_user", {"question": "Which database?", **arguments}, id=call_id)])


def tool_result(model: ScriptedModel, call_id: str) -> str:
    for request in reversed(model.requests):
        for message in request.messages:
            if message.get("role") == "tool" and message.get("tool_call_id") == call_id:
                return str(message["content"])
    raise AssertionError(f"no result for {call_id}")


async def test_a_choice_is_a_form_tied_to_the_tool_call_and_the_answer_goes_back(tmp_path: Path) -> None:
    model = ScriptedModel([ask(options=["PostgreSQL", "SQLite"]), Reply("Using SQLite.")])
    async with scripted_agent(tmp_path, model, capabilities=FORMS) as (client, session, _):
        asker = FakeAsker(client)
        asker.answers = [accept(choice="SQLite")]
        assert await client.prompt(session, "set up storage") == "end_turn"
    [request] = asker.requests
    assert request["sessionId"] == session and request["toolCallId"] == "q1" and request["mode"] == "form"
    assert request["message"] == "Which database?"
    assert request["requestedSchema"]["properties"]["choice"]["enum"] == ["PostgreSQL", "SQLite"]
    assert request["requestedSchema"]["required"] == ["choice"]
    asked_at = client.frames.index(next(f for f in client.frames if f.get("method") == "elicitation/create"))
    started = [
        i for i, f in enumerate(client.frames) if f.get("params", {}).get("update", {}).get("toolCallId") == "q1"
    ]
    assert started[0] < asked_at, "the tool call is shown before its question"
    assert "Chose: SQLite." in tool_result(model, "q1")
    call = client.session_updates(session, "tool_call")[0]
    assert call["title"] == "Ask: Which database?" and call["kind"] == "other"
    assert client.session_updates(session, "tool_call_update")[-1]["status"] == "completed"


async def test_several_choices_and_free_text(tmp_path: Path) -> None:
    model = ScriptedModel([ask(options=["unit", "e2e"], multi_select=True, free_text=True), Reply("ok")])
    async with scripted_agent(tmp_path, model, capabilities=FORMS) as (client, session, _):
        asker = FakeAsker(client)
        asker.answers = [accept(choices=["unit", "e2e"], answer="and a benchmark")]
        await client.prompt(session, "add tests")
    schema = asker.requests[0]["requestedSchema"]
    assert schema["properties"]["choices"]["items"] == {"type": "string", "enum": ["unit", "e2e"]}
    assert schema["properties"]["answer"]["type"] == "string"
    assert schema["required"] == []
    assert "Chose: unit, e2e. Wrote: and a benchmark" in tool_result(model, "q1")


@pytest.mark.parametrize(
    ("answer", "expected"),
    [(DECLINE, "declined to answer"), (CANCEL, "dismissed the question"), ({"action": "_later"}, "does not know")],
)
async def test_decline_cancel_and_unknown_actions_are_plain_results(
    tmp_path: Path, answer: dict[str, Any], expected: str
) -> None:
    model = ScriptedModel([ask(), Reply("fine")])
    async with scripted_agent(tmp_path, model, capabilities=FORMS) as (client, session, _):
        FakeAsker(client).answers = [answer]
        assert await client.prompt(session, "go") == "end_turn"
    assert expected in tool_result(model, "q1")
    assert len(model.requests) == 2, "the turn goes on after the answer"


async def test_without_forms_the_question_ends_the_turn_and_the_next_prompt_answers_it(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            Reply(
                "Let me check.",
                calls=[
                    Call("ask_user", {"question": "Which database?", "options": ["A", "B"]}, "q1"),
                    Call("glob", {"pattern": "*"}, "g1"),
                ],
            ),
            Reply("Going with B."),
        ]
    )
    async with scripted_agent(tmp_path, model, capabilities=NO_FS) as (client, session, _):
        asker = FakeAsker(client)
        assert await client.prompt(session, "set up storage") == "end_turn"
        assert len(model.requests) == 1, "the turn ended at the question"
        text = client.agent_text(session)
        assert text.endswith("Which database?\n\n- A\n- B\n")
        assert await client.prompt(session, "B") == "end_turn"
    assert asker.requests == [], "no elicitation without the capability"
    messages = model.last_request.messages
    assert "shown to the user as your message" in tool_result(model, "q1")
    assert "Not run" in tool_result(model, "g1"), "the calls after the question wait for its answer"
    assert messages[-1] == {"role": "user", "content": "B"}


async def test_session_cancel_while_the_question_waits_cancels_it(tmp_path: Path) -> None:
    model = ScriptedModel([ask(), Reply("unused")])
    async with scripted_agent(tmp_path, model, capabilities=FORMS) as (client, session, _):
        asker = FakeAsker(client, hold=True)
        answers: list[str] = []

        async def prompt() -> None:
            answers.append(await client.prompt(session, "go"))

        async with anyio.create_task_group() as task_group:
            task_group.start_soon(prompt)
            await asker.wait_for_request()
            await asker.cancel(session)
        await client.wait_for(lambda: any(f.get("method") == "$/cancel_request" for f in client.frames))
    assert answers == ["cancelled"]
    [elicitation] = [f for f in client.frames if f.get("method") == "elicitation/create"]
    cancels = [f["params"]["requestId"] for f in client.frames if f.get("method") == "$/cancel_request"]
    assert cancels == [elicitation["id"]], "the pending question is withdrawn, as a permission request is"
    statuses = [u.get("status") for u in client.session_updates(session) if u.get("toolCallId") == "q1"]
    assert statuses[-1] == "failed", "a cancelled call gets its final status live, as in the replay"
    assert len(model.requests) == 1


@pytest.mark.parametrize(
    "arguments",
    [
        {"question": "What is your GitHub personal access token?"},
        {"question": "Paste the API key for the staging server", "options": ["later"], "free_text": True},
        {"question": "Enter your database password"},
    ],
)
async def test_questions_for_secrets_are_never_asked(tmp_path: Path, arguments: dict[str, Any]) -> None:
    model = ScriptedModel([Reply(calls=[Call("ask_user", arguments, id="q1")]), Reply("ok")])
    async with scripted_agent(tmp_path, model, capabilities=FORMS) as (client, session, _):
        asker = FakeAsker(client)
        await client.prompt(session, "deploy")
    assert asker.requests == []
    assert "Never ask for secrets" in tool_result(model, "q1")


async def test_a_choice_among_options_may_mention_keys(tmp_path: Path) -> None:
    arguments = {"question": "Rotate the API key now?", "options": ["yes", "no"]}
    model = ScriptedModel([Reply(calls=[Call("ask_user", arguments, id="q1")]), Reply("ok")])
    async with scripted_agent(tmp_path, model, capabilities=FORMS) as (client, session, _):
        FakeAsker(client).answers = [accept(choice="no")]
        await client.prompt(session, "deploy")
    assert "Chose: no." in tool_result(model, "q1")


@pytest.mark.parametrize(
    "arguments",
    [{"question": "x", "options": ["a", "a"]}, {"question": "x", "multi_select": True}, {"question": ""}],
)
async def test_malformed_questions_are_results(tmp_path: Path, arguments: dict[str, Any]) -> None:
    model = ScriptedModel([Reply(calls=[Call("ask_user", arguments, id="q1")]), Reply("ok")])
    async with scripted_agent(tmp_path, model, capabilities=FORMS) as (client, session, _):
        asker = FakeAsker(client)
        await client.prompt(session, "go")
    assert asker.requests == []
    assert "Invalid arguments for ask_user" in tool_result(model, "q1")
