"""Prompts that finish the job: in an autonomous mode the system prompt tells the model to keep going until the
task is done and verified without stopping to ask; interactive modes keep asking when they must; a mode switch
mid-conversation is told in the environment update, and every request still starts with the one before it."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from coder_agent.model.scripted import Reply, ScriptedModel
from coder_agent.permissions import AUTONOMOUS_MODES, MODES, is_autonomous
from tests.support.scripted_agent import tool_agent

pytestmark = pytest.mark.anyio

ON_ITS_OWN = "# Working on your own"
KEEP_GOING = "Keep going until the task is completely done and verified"
ASKING = "Ask the user with `ask_user` when the request is ambiguous"


def test_full_auto_is_the_autonomous_mode() -> None:
    assert set(MODES) >= AUTONOMOUS_MODES
    assert is_autonomous("full-auto")
    assert not any(is_autonomous(mode) for mode in ("read-only", "default", "accept-edits", "no-such-mode"))


@pytest.mark.parametrize("mode", list(MODES))
async def test_the_system_prompt_of_each_mode(tmp_path: Path, mode: str) -> None:
    model = ScriptedModel(default=Reply("ok"))
    async with tool_agent(tmp_path, model, mode=mode) as (client, editor, session, work):
        await client.prompt(session, "fix the bug")
    system = model.last_request.messages[0]["content"]
    if is_autonomous(mode):
        assert ON_ITS_OWN in system and KEEP_GOING in system and "run its tests" in system
        assert ASKING not in system
    else:
        assert ASKING in system and ON_ITS_OWN not in system


def wire(messages: list[dict[str, object]]) -> str:
    return json.dumps(messages)


def shared_prefix(before: str, after: str) -> float:
    differ = (i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b)
    return next(differ, min(len(before), len(after))) / len(before)


async def test_switching_to_an_autonomous_mode_is_told_and_keeps_the_prompt_cache(tmp_path: Path) -> None:
    model = ScriptedModel(default=Reply("ok"))
    async with tool_agent(tmp_path, model, mode="default") as (client, editor, session, work):
        await client.prompt(session, "look around")
        await client.request("session/set_mode", {"sessionId": session, "modeId": "full-auto"})
        await client.prompt(session, "now fix it all")
        await client.request("session/set_mode", {"sessionId": session, "modeId": "accept-edits"})
        await client.prompt(session, "and one more thing")
    requests = [r.messages for r in model.requests]
    assert len({json.dumps(r[0]) for r in requests}) == 1, "one system prompt for the whole conversation"
    for before, after in itertools.pairwise(requests):
        assert shared_prefix(wire(before), wire(after)) >= 0.95
    updates = [m["content"] for m in requests[-1] if m["role"] == "user" and "[Environment" in str(m["content"])]
    assert len(updates) == 2
    assert KEEP_GOING in updates[0] and "Permission mode: Full auto" in updates[0]
    assert "How to work now: with the user: ask with `ask_user`" in updates[1]
