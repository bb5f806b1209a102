"""Steering: messages the user sends while a model turn runs, for the turn to take at its next model request.

A `SteeringInbox` belongs to an open session. It is open while a model turn runs (the turn opens and closes it):
a message offered then (`offer`) waits in it as a `Steer`, and the turn takes what waits before each model request
(`take`), so the model reads it next, after the tool calls already running, without cancelling anything. When the
turn would end with messages waiting, it carries on with them instead (`close_unless_waiting`). A message still
waiting when the turn ends otherwise is settled `ended` (it reached no model: its sender treats it as a new prompt)
or, when the turn was cancelled, `cancelled` (it must not reach the model). Offered while no turn runs, a message
is refused at once (`offer` gives None). Everything here happens in one event loop, between awaits, so a message is
either taken by the turn or settled by its end, never both and never neither.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import anyio

from coder_agent.protocol.content import ContentBlock
from coder_agent.protocol.schema import new_message_id

Outcome = Literal["waiting", "taken", "ended", "cancelled"]


@dataclass(eq=False)
class Steer:
    """One message sent into a running turn; its sender awaits `settled`."""

    prompt: Sequence[ContentBlock]
    message_id: str = field(default_factory=new_message_id)
    withdrawn: bool = False
    outcome: Outcome = "waiting"
    settled: anyio.Event = field(default_factory=anyio.Event)

    def settle(self, outcome: Outcome) -> None:
        self.outcome = outcome
        self.settled.set()


class SteeringInbox:
    """The messages waiting for the running turn of one session."""

    def __init__(self) -> None:
        self._open = False
        self._waiting: list[Steer] = []

    @property
    def is_open(self) -> bool:
        return self._open

    def open(self) -> None:
        """A model turn begins: messages may be sent into it."""
        self._open = True

    def offer(self, prompt: Sequence[ContentBlock]) -> Steer | None:
        """The message, waiting for the running turn; None if no turn takes messages now."""
        if not self._open:
            return None
        steer = Steer(prompt)
        self._waiting.append(steer)
        return steer

    def take(self) -> list[Steer]:
        """What waits, in the order it was sent (the turn settles each as it puts it in the conversation)."""
        taken, self._waiting = self._waiting, []
        return taken

    def withdraw(self, message_id: str) -> bool:
        """Take a waiting message back before the turn takes it (it is settled `cancelled`); False if none waits."""
        for steer in self._waiting:
            if steer.message_id == message_id:
                self._waiting.remove(steer)
                steer.withdrawn = True
                steer.settle("cancelled")
                return True
        return False

    def close_unless_waiting(self) -> bool:
        """The turn is about to end: closed, unless messages wait (then False, and the turn goes on with them)."""
        if self._waiting:
            return False
        self._open = False
        return True

    def close(self, outcome: Outcome) -> None:
        """The turn ended: no more messages, and those still waiting are settled with `outcome`."""
        self._open = False
        for steer in self.take():
            steer.settle(outcome)
