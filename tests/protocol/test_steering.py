"""Mid-turn steering: `_session/steering` as Claude's adapter and codex-acp offer it (advertised in initialize's
`_meta.steering.supported`; `idleBehavior: promptRequired` in the request's `_meta`). No ACP schema has it yet: its
shapes are checked here against those of the two adapters. And the boolean config option (auto-compaction) for
clients that show them (`session.configOptions.boolean`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from coder_agent.model.base import Usage
from coder_agent.model.scripted import Call, Reply, ScriptedModel
from coder_agent.store import SessionStore
from tests.support.acp_client import FakeClient, RpcFailure
from tests.support.scripted_agent import scripted_agent

pytestmark = pytest.mark.anyio

NOTICES = {"session": {"notices": {}}}
OUTCOMES = ("injected", "startedNewTurn", "promptRequired")


def checked(response: dict[str, Any]) -> dict[str, Any]:
    """A steering response in the adapters' shape: an `outcome` they know, a `reason` with `promptRequired`."""
    assert response["outcome"] in OUTCOMES, response
    if response["outcome"] == "promptRequired":
        assert response["reason"] == "noRunningTurn"
    return response


def text(value: str) -> dict[str, str]:
    return {"type": "text", "text": value}


async def steer(client: FakeClient, session: str, message: str, *, prompt_required: bool = False) -> dict[str, Any]:
    params: dict[str, Any] = {"sessionId": session, "prompt": [text(message)]}
    if prompt_required:
        params["_meta"] = {"steering": {"idleBehavior": "promptRequired"}}
    return checked(await client.request("_session/steering", params))


async def arrived() -> None:
    """Once every task waits (the turn on its held answer, the steering request on its message), the message was
    offered to the turn."""
    await anyio.wait_all_tasks_blocked()


def conversation(model: ScriptedModel, request: int = -1) -> list[tuple[str, Any]]:
    return [(m["role"], m.get("content")) for m in model.requests[request].messages[1:]]


async def test_it_is_advertised_as_the_adapters_do(tmp_path: Path) -> None:
    async with scripted_agent(tmp_path, ScriptedModel(), open_session=False) as (client, _, _):
        result = await client.initialize()
    assert result["_meta"]["steering"] == {"supported": True}


HELPER = "Use the existing retry helper."


async def inject(client: FakeClient, session: str, message: str) -> dict[str, Any]:
    """`_session/inject` in the v2 draft's shape, mode `steer` (acp-factory calls it so): answered with an id."""
    params = {"sessionId": session, "mode": "steer", "content": [text(message)]}
    response: dict[str, Any] = await client.request("_session/inject", params)
    return response


@pytest.mark.parametrize("via", ["steering", "inject"])
async def test_a_message_sent_mid_answer_reaches_the_model_in_the_same_turn(tmp_path: Path, via: str) -> None:
    hold = anyio.Event()
    model = ScriptedModel([Reply("Writing a new helper", chunk_size=8, hold=hold), Reply("Using the retry helper.")])
    async with scripted_agent(tmp_path, model, capabilities=NOTICES) as (client, session, _):
        answers: list[str] = []
        steered: list[dict[str, Any]] = []

        async def prompt() -> None:
            answers.append(await client.prompt(session, "fix the flaky test"))

        async def send() -> None:
            steered.append(await (steer if via == "steering" else inject)(client, session, HELPER))

        async with anyio.create_task_group() as task_group:
            task_group.start_soon(prompt)
            await client.wait_for(lambda: client.agent_text(session).startswith("Writing"))
            task_group.start_soon(send)
            await arrived()
            hold.set()
    assert answers == ["end_turn"], "one turn, one answer"
    assert len(model.requests) == 2
    assert conversation(model) == [
        ("user", "fix the flaky test"),
        ("assistant", "Writing a new helper"),
        ("user", HELPER),
    ]
    [response] = steered
    assert response["messageId"] and (via == "inject" or response["outcome"] == "injected")
    users = client.session_updates(session, "user_message_chunk")
    assert [(u["messageId"], u["content"]["text"]) for u in users] == [(response["messageId"], HELPER)], (
        "shown live in its place, as the user's"
    )


async def test_a_message_sent_during_a_tool_call_follows_its_result(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "store")
    hold = anyio.Event()
    model = ScriptedModel(
        [
            Reply("Looking.", calls=[Call("no_such_tool", id="c1")], hold=hold, hold_after=1),
            Reply("Noted."),
        ]
    )
    async with scripted_agent(tmp_path, model, store=store, capabilities=NOTICES) as (client, session, _):
        steered: list[dict[str, Any]] = []

        async def send() -> None:
            steered.append(await steer(client, session, "and check the logs"))

        async with anyio.create_task_group() as task_group:
            task_group.start_soon(client.prompt, session, "go")
            await client.wait_for(lambda: "Looking." in client.agent_text(session))
            task_group.start_soon(send)
            await arrived()
            hold.set()
        live = [(u["sessionUpdate"], u.get("messageId")) for u in client.session_updates(session)]
    roles = [role for role, _ in conversation(model)]
    assert roles == ["user", "assistant", "tool", "user"], "after the tool's result, before the next request"
    async with scripted_agent(tmp_path, ScriptedModel(), store=store, open_session=False) as (client, _, _):
        await client.request("session/load", {"sessionId": session, "cwd": str(tmp_path / "work"), "mcpServers": []})
        replayed = client.session_updates(session, "user_message_chunk")
    assert [u["messageId"] for u in replayed][-1] == steered[0]["messageId"], "replayed with its id"
    chunk = ("user_message_chunk", steered[0]["messageId"])
    assert live.index(chunk) > live.index(("tool_call", None)), "shown after the tool call"


async def test_with_no_turn_running_it_is_left_to_the_client_or_starts_one(tmp_path: Path) -> None:
    model = ScriptedModel([Reply("A turn of its own.")])
    async with scripted_agent(tmp_path, model, capabilities=NOTICES) as (client, session, _):
        left = await steer(client, session, "hello?", prompt_required=True)
        assert not model.requests, "nothing ran: the client sends it as a prompt"
        started = await steer(client, session, "hello!")
        await client.wait_for(lambda: client.agent_messages(session) == ["A turn of its own."])
    assert left == {"outcome": "promptRequired", "reason": "noRunningTurn"}
    assert started == {"outcome": "startedNewTurn"}
    assert conversation(model) == [("user", "hello!")]


async def test_a_cancel_leaves_a_waiting_message_out_and_says_so(tmp_path: Path) -> None:
    hold = anyio.Event()
    model = ScriptedModel([Reply("Working", chunk_size=4, hold=hold), Reply("Next.")])
    async with scripted_agent(tmp_path, model, capabilities=NOTICES) as (client, session, _):
        failures: list[RpcFailure] = []

        async def send() -> None:
            try:
                await steer(client, session, "never mind that")
            except RpcFailure as failure:
                failures.append(failure)

        async with anyio.create_task_group() as task_group:
            task_group.start_soon(client.prompt, session, "go")
            await client.wait_for(lambda: client.agent_text(session).startswith("Work"))
            task_group.start_soon(send)
            await arrived()
            await client.notify("session/cancel", {"sessionId": session})
        await client.prompt(session, "something else")
    [failure] = failures
    assert failure.code == -32800 and "was not sent" in failure.message
    assert "never mind that" not in str(conversation(model))


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"prompt": []}, -32602),
        ({"prompt": [text("x")], "sessionId": "sess_nowhere"}, -32002),
    ],
)
async def test_bad_steering_requests_are_refused(tmp_path: Path, params: dict[str, Any], code: int) -> None:
    async with scripted_agent(tmp_path, ScriptedModel(), capabilities=NOTICES) as (client, session, _):
        with pytest.raises(RpcFailure) as refused:
            await client.request("_session/steering", {"sessionId": session, **params})
    assert refused.value.code == code


async def test_auto_compaction_is_a_boolean_option_for_clients_that_show_them(tmp_path: Path) -> None:
    booleans = {"session": {"configOptions": {"boolean": {}}}}
    model = ScriptedModel(
        [Reply("One.", usage=Usage(950, 10)), Reply("Two.", usage=Usage(960, 10))], window=1000
    )  # 96% of the window after each: the threshold (80%) is passed
    async with scripted_agent(tmp_path, model, capabilities=booleans, open_session=False) as (client, _, _):
        created = await client.request("session/new", {"cwd": str(tmp_path / "work"), "mcpServers": []})
        session = created["sessionId"]
        [option] = [o for o in created["configOptions"] if o["id"] == "auto_compact"]
        assert option["type"] == "boolean" and option["currentValue"] is True
        with pytest.raises(RpcFailure) as not_a_value_id:
            await client.request(
                "session/set_config_option", {"sessionId": session, "configId": "auto_compact", "value": "off"}
            )
        answer = await client.request(
            "session/set_config_option",
            {"sessionId": session, "configId": "auto_compact", "type": "boolean", "value": False},
        )
        await client.prompt(session, "one")
        await client.prompt(session, "two")
    assert not_a_value_id.value.code == -32602
    assert next(o for o in answer["configOptions"] if o["id"] == "auto_compact")["currentValue"] is False
    assert len(model.requests) == 2, "no compaction request: it is off"


async def test_clients_without_boolean_options_do_not_get_one(tmp_path: Path) -> None:
    async with scripted_agent(tmp_path, ScriptedModel(), open_session=False) as (client, _, _):
        created = await client.request("session/new", {"cwd": str(tmp_path / "work"), "mcpServers": []})
    assert all(o["type"] == "select" for o in created["configOptions"])
