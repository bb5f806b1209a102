"""The redacting bridge is the one place what leaves a session is redacted: updates, the replay log, notices,
permission requests (the call and its choices' labels, never the rules they remember) and questions; files
and commands pass through as they are."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from coder_agent.permissions import Choice, ChoiceKind
from coder_agent.protocol.content import TextContent
from coder_agent.protocol.schema import (
    AgentMessageChunk,
    SessionInfoUpdate,
    SessionUpdate,
    ToolCallStart,
    ToolCallUpdate,
)
from coder_agent.session.local_bridge import LocalBridge
from coder_agent.session.redacting_bridge import RedactingBridge
from coder_agent.session.replay import ReplayLog
from coder_agent.session.user_questions import Answer, FormQuestion, Question, UrlQuestion

pytestmark = pytest.mark.anyio

KEY = "sk-test-0123456789abcdefghijklmnop"


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


class Seen:
    """What reached the bridge underneath."""

    def __init__(self) -> None:
        self.updates: list[SessionUpdate] = []
        self.permissions: list[tuple[ToolCallUpdate, list[Choice]]] = []
        self.questions: list[Question] = []

    async def sink(self, update: SessionUpdate) -> None:
        self.updates.append(update)

    async def answer(self, call: ToolCallUpdate, choices: Sequence[Choice]) -> ChoiceKind | None:
        self.permissions.append((call, list(choices)))
        return "allow_once"

    async def ask(self, question: Question) -> Answer:
        self.questions.append(question)
        return Answer("decline")


def bridges() -> tuple[RedactingBridge, Seen, ReplayLog]:
    seen, replay = Seen(), ReplayLog()
    return RedactingBridge(LocalBridge(seen.sink, seen.answer, seen.ask), replay), seen, replay


def said(text: str) -> AgentMessageChunk:
    return AgentMessageChunk(content=TextContent(text=text), message_id="m1")


async def test_updates_and_the_replay_log_never_hold_the_key() -> None:
    bridge, seen, replay = bridges()
    await bridge.update(said(f"the key is {KEY}"))
    await bridge.update(said(f"live {KEY}"), live_only=True)
    bridge.record(ToolCallUpdate(tool_call_id="c1", status="failed", content=None, raw_input={"k": KEY}))
    assert len(seen.updates) == 2
    assert all(KEY not in str(update.wire()) for update in seen.updates)
    assert "[redacted OPENAI_API_KEY]" in str(seen.updates[0].wire())
    assert KEY not in str(replay.events)
    assert len(replay.events) == 2, "the live-only update is not replayed; the recorded one is"


async def test_notices_permissions_and_questions_are_redacted() -> None:
    bridge, seen, _ = bridges()
    await bridge.notice("warning", f"title {KEY}", f"description {KEY}")
    rule = f"execute:=curl -H {KEY}"
    choices = [Choice("allow_once", "Allow"), Choice("allow_always", f"Always allow exactly `curl -H {KEY}`", (rule,))]
    call = ToolCallUpdate(tool_call_id="c1", status="pending", title=f"Run curl -H {KEY}", raw_input={"k": KEY})
    assert await bridge.request_permission(call, choices) == "allow_once"
    await bridge.ask(FormQuestion(f"form {KEY}", {"type": "object", "properties": {}}))
    await bridge.ask(UrlQuestion(f"url {KEY}", "https://example.com/", "e1"))
    shown_call, shown_choices = seen.permissions[0]
    assert KEY not in str(seen.updates[0].wire())
    assert KEY not in str(shown_call.wire()) and all(KEY not in c.label for c in shown_choices)
    assert shown_choices[1].rules == (rule,), "the rule it remembers is what the command is, unredacted"
    assert all(KEY not in q.message for q in seen.questions)


async def test_files_and_commands_pass_through(tmp_path: Path) -> None:
    bridge, _, _ = bridges()
    path = tmp_path / "config.env"
    await bridge.write_text_file(path, f"KEY={KEY}\n")
    assert await bridge.read_text_file(path) == f"KEY={KEY}\n"

    async def show(content: Any) -> None:
        return None

    result = await bridge.run_command(f"printf %s {KEY}", cwd=tmp_path, timeout=10, show=show)
    assert result.output == KEY, "the command ran as written (its output is the model's to read, redacted there)"


async def test_titles_are_shown_with_hidden_characters_escaped() -> None:
    bridge, seen, replay = bridges()
    hidden = "Write a\u202etxt.exe\x1b[2K\u200b"
    shown = "Write a\\u202etxt.exe\\x1b[2K\\u200b"
    await bridge.update(ToolCallStart(tool_call_id="c1", title=hidden))
    await bridge.update(ToolCallUpdate(tool_call_id="c1", title=hidden, status="pending"))
    await bridge.update(SessionInfoUpdate(title=hidden))
    await bridge.notice("warning", hidden)
    await bridge.request_permission(ToolCallUpdate(tool_call_id="c1", title=hidden), [Choice("allow_once", "Allow")])
    titles = [getattr(update, "title", None) for update in seen.updates]
    assert titles[:3] == [shown] * 3
    assert seen.permissions[0][0].title == shown
    assert hidden not in str(replay.events) and "\u202e" not in str([u.wire() for u in seen.updates])
