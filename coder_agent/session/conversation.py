"""`Conversation`: what the model has been told and answered (OpenAI-style messages, the system prompt apart),
and `Spending`: what the session's model calls cost.

Both are part of a session's saved state and change only through their methods here: the turn appends to the
history and repairs it, a compaction replaces it, `/clear` empties it, and the metered model (`agent.metering`)
is the one caller of `Spending.add` and of `Conversation.measure`. The context size counts only from the
latest model call of this conversation: a report that arrives late (a later call, a compaction or a `/clear`
came first) no longer describes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from coder_agent.model.base import Message
from coder_agent.session.call_repair import answer_pending_calls


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

    # ---- the history ----------------------------------------------------------------------------

    def append(self, message: Message) -> None:
        self.messages.append(message)

    def cut(self, start: int) -> None:
        """Drop the messages from `start` on (a turn the provider refused to answer)."""
        del self.messages[start:]

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
        self.restart_prompt()

    def clear(self) -> None:
        """Forget everything the model was told (`/clear`); the same object, so views of it stay valid."""
        self.messages.clear()
        self.context_tokens = 0
        self.calls += 1
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
    """Money and tokens spent by a session's model calls: the turns', compactions', and MCP servers' samplings."""

    cost: float = 0.0
    """USD, where the price is known (stored)."""
    input_tokens: int = 0
    """Input tokens of the calls since the session opened (not stored), and those read from the prompt cache."""
    cached_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    """Model calls counted."""

    def add(self, cost: float | None, input_tokens: int, cached_tokens: int, output_tokens: int = 0) -> None:
        if cost:
            self.cost += cost
        self.input_tokens += input_tokens
        self.cached_tokens += cached_tokens
        self.output_tokens += output_tokens
        self.calls += 1
