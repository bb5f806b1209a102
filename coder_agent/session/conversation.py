"""`Conversation`: what the model has been told and answered (OpenAI-style messages, the system prompt apart),
`Spending`: what the session's model calls cost, and `SystemPromptAddition`: the session's own instructions,
which the system prompt is built with.

Both are part of a session's saved state and change only through their methods here: the turn appends to the
history and repairs it, a compaction replaces it, `/clear` empties it, and the metered model (`agent.metering`)
is the one caller of `Spending.add` and of `Conversation.measure`. The context size counts only from the
latest model call of this conversation: a report that arrives late (a later call, a compaction or a `/clear`
came first) no longer describes it.

The conversation also keeps a `Mark` for each message the client was shown (by its `messageId`): how much of
the history it ends, and the turn it belongs to. That is where `session/fork` can cut the conversation at a
message. The marks go with the history they point into: a compaction or `/clear` drops them (those messages
can no longer be forked at), and a cut moves the marks beyond it back to it. The session's cursors
(`session.cursors`) live here too, for the same reason: they point into this history.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from coder_agent.model.base import Message, Usage
from coder_agent.session import cursors as cursor_rules
from coder_agent.session.call_repair import answer_pending_calls
from coder_agent.session.cursors import Cursor


@dataclass(frozen=True)
class SystemPromptAddition:
    """Instructions a session was given for its system prompt (by the editor: ACP's `systemPrompt`; or the command
    line): added after the agent's own, or, with `replaces`, in place of its instructions on how to work (the
    environment, the project's AGENTS.md files, the tools and the permission rules stay)."""

    text: str
    replaces: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "mode": "override" if self.replaces else "append"}

    @classmethod
    def from_dict(cls, data: Any) -> SystemPromptAddition | None:
        """The stored form back; None for anything else (a record without one, or a malformed one)."""
        if not isinstance(data, dict) or not isinstance(data.get("text"), str) or not data["text"].strip():
            return None
        return cls(data["text"], replaces=data.get("mode") == "override")


@dataclass(frozen=True)
class Mark:
    """Where a message the client was shown ends in the history, and the turn it belongs to."""

    end: int
    """How many history messages the conversation had when the message was complete."""
    turn: str | None
    """The undo checkpoints' turn it was shown in (None outside a model turn)."""

    def stored(self) -> list[Any]:
        return [self.end, self.turn]

    @classmethod
    def from_stored(cls, value: Any, length: int) -> Mark | None:
        """A stored mark back, if it makes sense for a history of `length` messages; else None."""
        match value:
            case [int() as end, str() | None as turn] if not isinstance(end, bool) and 0 <= end <= length:
                return cls(end, turn)
        return None


@dataclass
class Conversation:
    """The history the model sees, its fixed system prompt, and the facts of the environment it was told."""

    messages: list[Message] = field(default_factory=list)
    context_tokens: int = 0
    """Tokens in the context after the last model call."""
    system: str | None = None
    """The system prompt, fixed for the conversation (None until its first turn builds it)."""
    environment: dict[str, str] = field(default_factory=dict)
    """The facts about the environment the model was last told (date, git state, AGENTS.md files, mode)."""
    calls: int = 0
    """Model calls counted so far (not stored): a usage report counts for the context only if it is the latest."""
    marks: dict[str, Mark] = field(default_factory=dict)
    """Message id -> where it ends, in the order the messages were first shown."""
    cursors: dict[str, Cursor] = field(default_factory=dict)
    """Cursor id -> the point of the session it stands for, in the order they were made."""

    # ---- the history ----------------------------------------------------------------------------

    def append(self, message: Message) -> None:
        self.messages.append(message)

    def cut(self, start: int) -> None:
        """Drop the messages from `start` on (a turn the provider refused to answer)."""
        del self.messages[start:]
        for message_id, mark in self.marks.items():
            if mark.end > start:
                self.marks[message_id] = Mark(start, mark.turn)
        for cursor_id in [key for key, c in self.cursors.items() if not c.stash and c.messages > start]:
            del self.cursors[cursor_id]

    def add_cursor(self, cursor: Cursor) -> None:
        self.cursors[cursor.id] = cursor

    def checkpoints_left(self, count: int) -> None:
        """Undo checkpoints were taken back (`/undo`): `count` are left, and no cursor counts more."""
        cursor_rules.clamp(self.cursors, count)

    def take_back(self, messages: list[Message], marks: dict[str, Mark], cursors: dict[str, Cursor]) -> None:
        """The history of an earlier point (a rewind): its messages, marks and cursors; measured again next call."""
        self.messages[:] = messages
        self.marks = dict(marks)
        self.cursors = dict(cursors)
        self.context_tokens = 0
        self.calls += 1

    def mark(self, message_id: str, turn: str | None) -> None:
        """The message `message_id` ends here (shown now, or complete now: a later mark of it moves it)."""
        self.marks[message_id] = Mark(len(self.messages), turn)

    def reopen_calls(self, call_ids: set[str]) -> None:
        """Take back the answers of these calls at the end of the history (they are about to run after all)."""
        while self.messages and self.messages[-1].get("role") == "tool":
            if self.messages[-1].get("tool_call_id") not in call_ids:
                break
            self.messages.pop()

    def answer_pending(self, result: str) -> int:
        """Answer every tool call left without a result (after a cancel or a failure); returns how many."""
        return answer_pending_calls(self.messages, result)

    def compacted(self, messages: list[Message]) -> None:
        """The history after a compaction: a summary and the tail; the prompt and the size start over."""
        self.messages[:] = messages
        self.context_tokens = 0
        self.calls += 1  # a usage report still on its way describes the context before the compaction
        self.marks.clear()
        self.cursors.clear()
        self.restart_prompt()

    def clear(self) -> None:
        """Forget everything the model was told (`/clear`); the same object, so views of it stay valid."""
        self.messages.clear()
        self.context_tokens = 0
        self.calls += 1
        self.marks.clear()
        self.cursors.clear()
        self.restart_prompt()

    # ---- the system prompt and the environment --------------------------------------------------

    def fix_prompt(self, system: str, environment: dict[str, str]) -> None:
        """Fix the system prompt for this conversation, with the facts it states."""
        self.system = system
        self.environment = dict(environment)

    def told(self, environment: dict[str, str]) -> None:
        """The model has now been told these facts (an environment update)."""
        self.environment = dict(environment)

    def restart_prompt(self) -> None:
        """Have the next turn build the system prompt anew (after /compact or a model switch)."""
        self.system = None
        self.environment = {}

    # ---- measuring ------------------------------------------------------------------------------

    def next_call(self) -> int:
        """A model call of this conversation has answered; its number, for `measure`."""
        self.calls += 1
        return self.calls

    def measure(self, number: int, tokens: int) -> bool:
        """The context size as call `number` reported it, if it is still the latest; True if it was taken."""
        if number != self.calls:
            return False
        self.context_tokens = tokens
        return True


@dataclass
class Spending:
    """Money and tokens spent by model calls: a session's (the turns', compactions', and MCP servers' samplings),
    or one turn's (what its prompt response reports)."""

    cost: float = 0.0
    """USD, where the price is known (a session's is stored)."""
    input_tokens: int = 0
    """Input tokens of the calls counted so far (a session's are stored with its cost), those read from and written
    to the prompt cache included; then those read from it, those written to it, and output tokens."""
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    """Model calls whose bill was counted."""

    def stored(self) -> dict[str, int]:
        """The tokens and requests as a session's record keeps them (`SessionRecord.tokens`)."""
        return {
            "input": self.input_tokens,
            "cached": self.cached_tokens,
            "cache_write": self.cache_write_tokens,
            "output": self.output_tokens,
            "requests": self.requests,
        }

    @classmethod
    def restored(cls, cost: float, tokens: dict[str, int]) -> Spending:
        """A session's spending as its record kept it."""
        return cls(
            cost=cost,
            input_tokens=int(tokens.get("input", 0)),
            cached_tokens=int(tokens.get("cached", 0)),
            cache_write_tokens=int(tokens.get("cache_write", 0)),
            output_tokens=int(tokens.get("output", 0)),
            requests=int(tokens.get("requests", 0)),
        )

    def add(self, cost: float | None, usage: Usage) -> None:
        if cost:
            self.cost += cost
        self.input_tokens += usage.prompt_tokens
        self.cached_tokens += usage.cached_tokens
        self.cache_write_tokens += usage.cache_write_tokens
        self.output_tokens += usage.completion_tokens
        self.requests += 1
