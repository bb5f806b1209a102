"""Context compaction: summarise the older part of a conversation with the model and keep the recent tail.

The tail starts at the last user message, so a tool call is never separated from its result; if the
whole history is one turn, the tail is the last assistant message and its results. The summary is streamed
(`on_text`), so the user can watch it being written (`agent.compaction` shows it); the call is billed by the
model it is given (a metered one: its report is awaited before the summary is returned).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from coder_agent import prompts
from coder_agent.model.base import Message, ModelTurn, StreamSink, settled

MAX_PART_CHARS = 2_000
SUMMARY_WORDS = 600
SUMMARY_PREFIX = "[Summary of the earlier part of this conversation, written when the context was compacted]"


Text = Callable[[str], Awaitable[None]]


class Summarizer(Protocol):
    async def stream(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], sink: StreamSink
    ) -> ModelTurn: ...


@dataclass(frozen=True)
class Compacted:
    messages: list[Message]
    summary: str
    removed: int


async def _ignore(_: str) -> None:
    return None


def split_point(messages: list[Message]) -> int:
    """Index where the kept tail starts; 0 means there is nothing to compact."""
    user_turns = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    if user_turns and user_turns[-1] > 0:
        return user_turns[-1]
    assistants = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    return assistants[-1] if assistants and assistants[-1] > 0 else 0


async def compact(
    model: Summarizer,
    messages: list[Message],
    focus: str | None = None,
    *,
    on_text: Text = _ignore,
    on_retry: Text = _ignore,
) -> Compacted | None:
    """Replace everything before the tail with one summary; None when there is nothing to compact.

    `focus` (from `/compact <focus>`) tells the summariser what matters most; the summary streams to `on_text`.
    """
    cut = split_point(messages)
    if cut == 0:
        return None
    head, tail = messages[:cut], messages[cut:]
    instructions = prompts.render("compact.md", max_words=SUMMARY_WORDS)
    if focus:
        instructions += f"\n\nThe user asked the summary to focus on: {focus}"
    request = [
        {"role": "system", "content": instructions},
        {"role": "user", "content": "Conversation to summarise:\n\n" + transcript(head)},
    ]
    turn = await model.stream(request, (), StreamSink(on_text=on_text, on_thought=_ignore, on_retry=on_retry))
    await settled(turn)
    summary = turn.text.strip() or "(the summary came back empty)"
    kept: list[Message] = [
        {"role": "user", "content": f"{SUMMARY_PREFIX}\n\n{summary}"},
        {"role": "assistant", "content": "Understood; I will continue from this summary."},
        *tail,
    ]
    return Compacted(kept, summary, len(head))


def transcript(messages: list[Message]) -> str:
    """A plain-text rendering of messages for the summariser, with long parts cut."""
    lines = []
    for message in messages:
        role = message.get("role", "?")
        content = _content_text(message.get("content"))
        if content:
            lines.append(f"{role.upper()}: {_cut(content)}")
        for call in message.get("tool_calls") or []:
            function = call.get("function", {})
            lines.append(f"TOOL CALL {function.get('name')}: {_cut(str(function.get('arguments')))}")
    return "\n\n".join(lines)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "[image]") if isinstance(p, dict) else str(p) for p in content)
    return "" if content is None else json.dumps(content)


def _cut(text: str) -> str:
    if len(text) <= MAX_PART_CHARS:
        return text
    half = MAX_PART_CHARS // 2
    return f"{text[:half]}\n[… {len(text) - MAX_PART_CHARS} characters omitted …]\n{text[-half:]}"
