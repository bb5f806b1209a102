"""The prompt response's `usage` (ACP unstable `PromptResponse.usage`, checked against the unstable schema): the
turn's tokens, input, cached and output, over all its model calls, and in `_meta` its cost and requests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from coder_agent.model.base import Usage
from coder_agent.model.scripted import Call, Reply, ScriptedModel
from tests.support.scripted_agent import scripted_agent

pytestmark = pytest.mark.anyio


def prompt(session: str, text: str) -> dict[str, Any]:
    return {"sessionId": session, "prompt": [{"type": "text", "text": text}]}


async def test_the_usage_of_every_call_of_the_turn_is_in_its_response(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            Reply(calls=[Call("no_such_tool", id="c1")], usage=Usage(1000, 10, cached_tokens=600), cost=0.01),
            Reply("Done.", usage=Usage(1100, 20, cached_tokens=900, cache_write_tokens=50), cost=0.02, late_bill=True),
            Reply("Second.", usage=Usage(1200, 5), cost=0.005, late_bill=True),
        ]
    )
    async with scripted_agent(tmp_path, model) as (client, session, _):
        first = await client.request("session/prompt", prompt(session, "go"))
        second = await client.request("session/prompt", prompt(session, "again"))
    assert first["usage"] == {
        "totalTokens": 2130,
        "inputTokens": 2100,
        "outputTokens": 30,
        "cachedReadTokens": 1500,
        "cachedWriteTokens": 50,
        "_meta": {"coder-agent": {"requests": 2, "cost": {"amount": 0.03, "currency": "USD"}}},
    }
    assert second["usage"]["totalTokens"] == 1205, "each response has its own turn's usage, not the session's"
    assert second["usage"]["_meta"]["coder-agent"]["cost"]["amount"] == 0.005


async def test_a_command_without_a_model_call_reports_no_usage(tmp_path: Path) -> None:
    async with scripted_agent(tmp_path, ScriptedModel()) as (client, session, _):
        answer = await client.request("session/prompt", prompt(session, "/help"))
    assert answer["stopReason"] == "end_turn"
    assert "usage" not in answer
