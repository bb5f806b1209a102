"""A sub-agent's bridge and view on their own, over the local bridge: what goes to the parent, named for the child,
and what the parent's call shows of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from coder_agent.agent.subagents import ChildBridge, ChildView
from coder_agent.model.base import Usage
from coder_agent.permissions import Choice
from coder_agent.protocol.content import PlanEntry, ToolCallContent
from coder_agent.protocol.schema import NoticeUpdate, PlanUpdate, SessionUpdate, ToolCallStart, ToolCallUpdate
from coder_agent.session.conversation import Spending
from coder_agent.session.local_bridge import LocalBridge
from coder_agent.session.user_questions import FormQuestion

pytestmark = pytest.mark.anyio


async def test_the_child_bridge_names_the_child_to_the_parent(tmp_path: Path) -> None:
    sent: list[SessionUpdate] = []
    shown: list[list[ToolCallContent]] = []

    async def sink(update: SessionUpdate) -> None:
        sent.append(update)

    async def progress(content: list[ToolCallContent]) -> None:
        shown.append(content)

    async def answer(call: ToolCallUpdate, choices: object) -> str:
        return "allow_once" if call.title == "explore-1: rm x" else "reject_once"

    parent = LocalBridge(sink=sink, answer=answer)
    view = ChildView("explore-1", "Look", progress)
    bridge = ChildBridge(parent, None, view, "explore-1")
    assert bridge.supports_compaction_updates and bridge.subagent_bridge("x") is None
    await bridge.notice("warning", "The model call failed; retrying")
    assert sent == [NoticeUpdate(severity="warning", title="explore-1: The model call failed; retrying")]
    choices = [Choice("allow_once", "Allow"), Choice("reject_once", "Reject")]
    assert await bridge.request_permission(ToolCallUpdate(tool_call_id="c", title="rm x"), choices) == "allow_once"
    question = FormQuestion("Name?", {"type": "object", "properties": {}}, tool_call_id=None)
    assert (await bridge.ask(question)).unasked
    await bridge.url_done("e1")
    (tmp_path / "a.txt").write_text("hi\n")
    assert await bridge.read_text_file(tmp_path / "a.txt") == "hi\n"
    await bridge.write_text_file(tmp_path / "b.txt", "new\n")
    assert (tmp_path / "b.txt").read_text() == "new\n"
    await bridge.update(PlanUpdate(entries=[PlanEntry(content="Look", status="in_progress", priority="high")]))
    await bridge.update(ToolCallStart(tool_call_id="c1", title="Find `*.py`", status="pending"))
    await bridge.update(ToolCallUpdate(tool_call_id="c1", status="completed"))
    assert shown[-1][0].content.text == "**explore-1** · Look\nPlan: ▸ Look\n- ✓ Find `*.py`"  # type: ignore[union-attr]


def test_the_view_ends_with_the_bill_and_the_answer_and_keeps_the_latest_steps() -> None:
    async def progress(content: list[ToolCallContent]) -> None:
        return None

    view = ChildView("general-2", "Fix it", progress)
    for n in range(12):
        view.steps[f"c{n}"] = [f"step {n}", "completed"]
    view.tally = Spending()
    view.tally.add(0.25, Usage(prompt_tokens=12_000, completion_tokens=300, cached_tokens=2_000))
    done = view.ended("completed", "", "Fixed in a.py:3")
    assert done.answer == "Fixed in a.py:3" and not done.failed
    text = done.shown[0].content.text  # type: ignore[union-attr]
    assert "(4 earlier steps)" in text and "step 11" in text and "step 3" not in text
    assert text.endswith("1 model request · 12,000 tokens in (2,000 cached), 300 out · $0.2500")
    assert done.shown[1].content.text == "Fixed in a.py:3"  # type: ignore[union-attr]
    failed = view.ended("failed", "It ran out of time.", "")
    assert failed.failed and failed.answer == "It ran out of time."
