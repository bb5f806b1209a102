"""A permission answer is matched against what was offered, never read for what it looks like.

Clients are hostile input too: an editor that answers `"deny"`, `""`, an option of an earlier prompt, a
differently cased id, or no outcome a permission response can have, must never have its answer taken as
"allow". Each case runs a real write through the in-process agent and the fake editor answering as scripted,
and checks the file is untouched and the model reads that the call was rejected (or failed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from coder_agent.model.scripted import Call, Reply, ScriptedModel
from coder_agent.permissions import Choice, chosen
from coder_agent.protocol.schema import ToolCallUpdate
from coder_agent.session.local_bridge import LocalBridge
from tests.support.scripted_agent import scripted_agent

pytestmark = pytest.mark.anyio


def tool_results(model: ScriptedModel) -> list[str]:
    return [str(m["content"]) for m in model.requests[-1].messages if m["role"] == "tool"]


@pytest.mark.parametrize(
    "answer",
    [
        "id:deny",
        "id:",
        "id:allow",
        "id:ALLOW_ONCE",
        "id: allow_once",
        "id:allow_always",  # not offered for a path outside the workspace: an id of another prompt
        "id:yes",
    ],
)
async def test_an_answer_that_was_not_offered_is_a_rejection(tmp_path: Path, answer: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "pwned.txt"
    model = ScriptedModel(
        [Reply(calls=[Call("write_file", {"path": str(target), "content": "pwned"}, id="w1")]), Reply("Done.")]
    )
    async with scripted_agent(tmp_path, model, editor=True) as (client, session, editor):
        assert editor is not None
        editor.permission_answers = [answer]
        await client.prompt(session, "write outside")
        request = editor.permission_requests[0]
        offered = [option["optionId"] for option in request["options"]]
    assert "allow_always" not in offered
    shown = [c["content"]["text"] for c in request["toolCall"]["content"] if c["type"] == "content"]
    assert any(text.startswith("Asking because") and "outside the workspace" in text for text in shown)
    assert not target.exists()
    assert "The user rejected this call" in tool_results(model)[0]


async def test_a_stale_always_is_neither_allowed_nor_remembered(tmp_path: Path) -> None:
    """The second prompt offers no "always" (the file is outside); an "always allow" answer to it is rejected and
    remembers nothing, so the third write asks again."""
    outside = tmp_path / "outside"
    outside.mkdir()
    model = ScriptedModel(
        [
            Reply(calls=[Call("write_file", {"path": "inside.txt", "content": "ok"}, id="w1")]),
            Reply(calls=[Call("write_file", {"path": str(outside / "a.txt"), "content": "pwned"}, id="w2")]),
            Reply(calls=[Call("write_file", {"path": str(outside / "b.txt"), "content": "pwned"}, id="w3")]),
            Reply("Done."),
        ]
    )
    async with scripted_agent(tmp_path, model, editor=True) as (client, session, editor):
        assert editor is not None
        editor.permission_answers = ["allow_always", "id:allow_always", "reject_once"]
        await client.prompt(session, "write")
        assert len(editor.permission_requests) == 3
    assert (tmp_path / "work" / "inside.txt").read_text() == "ok"
    first = editor.permission_requests[0]["toolCall"]["content"]
    assert not any("Asking because" in str(c) for c in first), "the mode alone asks: nothing to point out"
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize(
    ("outcome", "read"),
    [
        ({"outcome": "selected"}, "The user rejected this call"),  # selected, but nothing: no offered option
        ({"outcome": "selected", "optionId": None}, "The user rejected this call"),
        ({"outcome": "allowed", "optionId": "allow_once"}, "malformed"),
        ({"optionId": "allow_once"}, "malformed"),
        ("allow_once", "malformed"),
        (None, "malformed"),
    ],
)
async def test_a_malformed_answer_never_runs_the_call(tmp_path: Path, outcome: Any, read: str) -> None:
    model = ScriptedModel([Reply(calls=[Call("write_file", {"path": "a.txt", "content": "x"}, id="w1")]), Reply("ok")])
    async with scripted_agent(tmp_path, model, editor=True) as (client, session, editor):
        assert editor is not None

        async def answer(params: dict[str, Any]) -> Any:
            return {"outcome": outcome} if outcome is not None else {}

        client.handlers["session/request_permission"] = answer
        client.lenient_answers.add("session/request_permission")
        stop = await client.prompt(session, "write")
    assert stop == "end_turn"
    assert not (tmp_path / "work" / "a.txt").exists()
    assert read in tool_results(model)[0]


CHOICES = [Choice("allow_once", "Allow"), Choice("reject_once", "Reject")]


@pytest.mark.parametrize("answer", ["deny", "", "allow_always", "Allow", None, 1, "allow_once\x00"])
def test_chosen_names_only_what_was_offered(answer: object) -> None:
    assert chosen(CHOICES, answer) == "reject_once"


def test_chosen_keeps_an_offered_answer() -> None:
    assert chosen(CHOICES, "allow_once") == "allow_once"


async def test_the_local_bridge_holds_its_answer_to_the_choices() -> None:
    async def careless(call: ToolCallUpdate, choices: Any) -> Any:
        return "allow_always"  # not among the choices

    bridge = LocalBridge(answer=careless)
    call = ToolCallUpdate(tool_call_id="c1", status="pending")
    assert await bridge.request_permission(call, CHOICES) == "reject_once"
