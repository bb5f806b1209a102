"""The seam between the `task` tool and the sub-agents that carry tasks out: what is delegated (`Delegation`), what
comes back (`Delegated`), and who does it (`Delegate`, given to a turn in its `TurnContext`).

The tool lives below the agent layer that runs models and turns, so it only sees this protocol; the agent layer
(`agent.subagents`) implements it. A sub-agent's own context has no delegate: sub-agents cannot start sub-agents.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from coder_agent.protocol.content import ToolCallContent

TaskKind = Literal["explore", "general"]
ShowProgress = Callable[[list[ToolCallContent]], Awaitable[None]]
"""Replace what the delegating tool call shows (the sub-agent's plan and steps, as they happen)."""


@dataclass(frozen=True)
class Delegation:
    """A self-contained task for a sub-agent."""

    kind: TaskKind
    """`explore`: read-only tools; `general`: the parent's tools (no sub-agents, no questions, no plan proposal)."""
    description: str
    """A few words naming it, shown to the user."""
    prompt: str
    """The task itself, all the sub-agent is told."""


@dataclass(frozen=True)
class Delegated:
    """What a sub-agent came back with."""

    answer: str
    """For the parent model: the sub-agent's final answer (capped), or why there is none."""
    failed: bool
    shown: list[ToolCallContent]
    """For the user: the sub-agent's work in short, and its answer."""


class Delegate(Protocol):
    """Runs a delegated task as a sub-agent and returns what it found (however it ended)."""

    async def __call__(self, task: Delegation, progress: ShowProgress) -> Delegated: ...
