"""The seam between the `task` tool and the sub-agents that carry tasks out: what is delegated (`Delegation`), what
comes back (`Delegated`), and who does it (`Delegate`, given to a turn in its `TurnContext`).

The tool lives below the agent layer that runs models and turns, so it only sees this protocol; the agent layer
(`agent.subagents`) implements it. A sub-agent's own context has no delegate: sub-agents cannot start sub-agents.
An isolated task's changes come back through the delegating call (`ParentCall`): asked about there, and written
through it like any edit of the session's (checked again, snapshotted for `/undo`, through the editor).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from coder_agent.permissions import Choice, Place
from coder_agent.protocol.content import ToolCallContent
from coder_agent.protocol.schema import SubagentState
from coder_agent.session.user_questions import Answer, Question

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
    isolate: bool = False
    """Work in a place of its own (a worktree or a copy); its changes come back as one merge the user reviews."""


@dataclass(frozen=True)
class Delegated:
    """What a sub-agent came back with."""

    answer: str
    """For the parent model: the sub-agent's final answer (capped), or why there is none."""
    failed: bool
    shown: list[ToolCallContent]
    """For the user: the sub-agent's work in short, and its answer."""
    state: SubagentState = "completed"
    """How it ended."""


FileEdit = tuple[Place, str | None, str | None]
"""A change of one of the session's files: where, its text now (None: it does not exist) and after (None: delete)."""


@dataclass(frozen=True)
class ParentCall:
    """What a delegate may do through the call that delegated: ask the user about it (a permission request showing
    some content, the id of the choice picked; a form), read a file of the session as the editor has it (None: there
    is none), and change the session's files, all or none (ToolError when one changed since it was read)."""

    call_id: str | None
    choose: Callable[[list[ToolCallContent], list[Choice]], Awaitable[str]]
    ask: Callable[[Question], Awaitable[Answer]]
    read: Callable[[Place], Awaitable[str | None]]
    write: Callable[[Sequence[FileEdit]], Awaitable[None]]


class Delegate(Protocol):
    """Runs a delegated task as a sub-agent and returns what it found (however it ended); `call` is the delegating
    call, through which an isolated task's changes come back."""

    async def __call__(self, task: Delegation, progress: ShowProgress, call: ParentCall | None = None) -> Delegated: ...
