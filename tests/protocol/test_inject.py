"""Messages queued while a turn runs (`_session/inject`, the v2 draft's shape): answered at once with their id, run
in order after the turn, shown when delivered; revoked or replaced while pending, refused once delivered."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from coder_agent.model.scripted import Call, Reply, ScriptedModel
from tests.support.acp_client import RpcFailure
from tests.support.scripted_agent import scripted_agent

pytestmark = pytest.mark.anyio


def text(value: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": value}]


async def test_queued_messages_wait_for_the_turn_and_can_be_revoked_or_replaced(tmp_path: Path) -> None:
    model = ScriptedModel(
        [Reply(calls=[Call("write_file", {"path": "a.txt", "content": "x"})]), Reply("one"), Reply("B")]
    )
    asked, release = anyio.Event(), anyio.Event()
    async with scripted_agent(tmp_path, model, editor=True) as (client, session, _):

        async def answer(params: dict[str, Any]) -> Any:
            asked.set()
            await release.wait()
            return {"outcome": {"outcome": "selected", "optionId": params["options"][0]["optionId"]}}

        client.handlers["session/request_permission"] = answer
        async with anyio.create_task_group() as group:
            group.start_soon(client.prompt, session, "write a")
            await asked.wait()  # the turn runs, waiting for the user
            inject = {"sessionId": session, "mode": "queue"}
            first = (await client.request("_session/inject", inject | {"content": text("A")}))["messageId"]
            second = (await client.request("_session/inject", inject | {"content": text("B draft")}))["messageId"]
            replaced = {"sessionId": session, "messageId": second, "content": text("B")}
            assert (await client.request("_session/replace_inject", replaced))["messageId"] == second
            await client.request("_session/revoke_inject", {"sessionId": session, "messageId": first})
            await client.request("_session/revoke_inject", {"sessionId": session, "messageId": first})  # a retry
            release.set()
        await client.wait_for(lambda: "B" in client.agent_messages(session))
        users = client.messages(session, "user_message_chunk")
        assert users == [(second, "B")], "shown when delivered, with its final content; the revoked one never"
        with pytest.raises(RpcFailure) as delivered:
            await client.request("_session/revoke_inject", {"sessionId": session, "messageId": second})
        assert delivered.value.error["data"]["reason"] == "already_delivered"
        with pytest.raises(RpcFailure) as unknown:
            await client.request("_session/revoke_inject", {"sessionId": session, "messageId": "nope"})
        assert unknown.value.error["data"]["reason"] == "unknown_message_id"
    said = [m["content"] for m in model.last_request.messages if m["role"] == "user"]
    assert "B" in said and "A" not in said and "B draft" not in said


async def test_a_queued_message_on_an_idle_session_runs_at_once(tmp_path: Path) -> None:
    model = ScriptedModel([Reply("hi")])
    async with scripted_agent(tmp_path, model) as (client, session, _):
        params = {"sessionId": session, "mode": "queue", "content": text("hello")}
        message_id = (await client.request("_session/inject", params))["messageId"]
        await client.wait_for(lambda: "hi" in client.agent_messages(session), timeout=10)
        assert client.messages(session, "user_message_chunk") == [(message_id, "hello")]
