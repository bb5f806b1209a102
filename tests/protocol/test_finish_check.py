"""The check before finishing (`agent.finish_check`), on the scripted model with a fake editor: a turn that changed
files and ends without a command that checks them gets one follow-up, shown as a short note, in the modes that work
on their own, at most once per turn, unless the config turns it off; a check run after the last edit owes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from coder_agent import prompts
from coder_agent.agent.finish_check import NOTE
from coder_agent.model.scripted import Call, Reply, ScriptedModel
from tests.support.scripted_agent import tool_agent

pytestmark = pytest.mark.anyio

FOLLOW_UP = prompts.load("check_before_finishing.md")


def write(name: str) -> Reply:
    return Reply(calls=[Call("write_file", {"path": name, "content": "x = 1\n"})])


def command(line: str) -> Reply:
    return Reply(calls=[Call("run_command", {"command": line})])


def follow_ups(model: ScriptedModel) -> int:
    """How many follow-ups the model was sent (in its last request's history)."""
    return sum(1 for m in model.last_request.messages if m["role"] == "user" and m["content"] == FOLLOW_UP)


async def turn(tmp_path: Path, replies: list[Reply], **options: Any) -> tuple[ScriptedModel, str]:
    model = ScriptedModel(replies)
    async with tool_agent(tmp_path, model, **options) as (client, _, session, _):
        assert await client.prompt(session, "change it") == "end_turn"
        said = client.agent_text(session)
    return model, said


async def test_a_change_nothing_checked_gets_one_follow_up_shown_as_a_note(tmp_path: Path) -> None:
    replies = [write("a.py"), Reply("Done."), write("b.py"), Reply("Done, and I cannot test it: no tests here.")]
    model, said = await turn(tmp_path, replies, mode="full-auto")
    assert len(model.requests) == 4, "the answer after the follow-up ends the turn, though b.py is unchecked too"
    assert model.requests[2].messages[-1] == {"role": "user", "content": FOLLOW_UP}
    assert follow_ups(model) == 1
    assert said.count(NOTE) == 1


async def test_a_check_after_the_last_change_owes_nothing_and_a_change_after_it_does(tmp_path: Path) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    checked = [write("a.py"), command("make check"), Reply("Done.")]
    model, said = await turn(tmp_path / "one", checked, mode="full-auto")
    assert follow_ups(model) == 0 and NOTE not in said
    changed_after = [write("a.py"), command("pytest -q"), write("b.py"), Reply("Done."), Reply("Checked.")]
    model, said = await turn(tmp_path / "two", changed_after, mode="full-auto")
    assert follow_ups(model) == 1 and NOTE in said


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"mode": "full-auto"}, 1),
        ({"mode": "full-auto", "check_before_finishing": False}, 0),
        ({"mode": "default"}, 0),
        ({"mode": "accept-edits"}, 0),  # someone watches the editor: the model is not told to work on its own
    ],
)
async def test_only_where_the_agent_works_on_its_own_and_unless_turned_off(
    tmp_path: Path, options: dict[str, Any], expected: int
) -> None:
    model, _ = await turn(tmp_path, [write("a.py"), Reply("Done."), Reply("Checked.")], **options)
    assert follow_ups(model) == expected


async def test_a_turn_that_changed_nothing_or_whose_edit_failed_owes_nothing(tmp_path: Path) -> None:
    failed_edit = Reply(calls=[Call("edit_file", {"path": "missing.py", "old_string": "a", "new_string": "b"})])
    model, said = await turn(tmp_path, [Reply(calls=[Call("read_file", {"path": "."})]), failed_edit, Reply("Done.")])
    assert follow_ups(model) == 0 and NOTE not in said
