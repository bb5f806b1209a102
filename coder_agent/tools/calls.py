"""The seam between the agent loop and the tools: what a tool set offers the model and what a call returns.

A `ToolSet` announces each call to the client, asks permission, runs it and reports it: the loop only
hands it the model's call and feeds the result back. A prepared call (`Prepared`) says what it will do,
for the permission policy, and how to run it, giving an `Outcome`. Failures the model should see (bad
arguments, a rejected permission, a failed command) are results with `failed=True`, never exceptions;
`TurnCancelled` is the one exception, for a user who cancelled from the permission prompt.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from coder_agent.errors import CallFailed
from coder_agent.model.base import ToolCallRequest
from coder_agent.permissions import Action
from coder_agent.protocol.content import (
    ContentToolCallContent,
    TextContent,
    ToolCallContent,
    ToolCallLocation,
)


@dataclass(frozen=True)
class ToolResult:
    """What the model reads back: text, or OpenAI-style content parts (text and images)."""

    output: str | list[dict[str, Any]]
    failed: bool = False
    ends_turn: bool = False
    """The turn stops after this call: the user's next prompt answers it (a question no one could be asked)."""

    def text(self) -> str:
        if isinstance(self.output, str):
            return self.output
        return "\n".join(str(part.get("text", "")) for part in self.output if part.get("type") == "text")


class ToolError(CallFailed):
    """A tool's own failure, for the model to read and act on (see `errors.CallFailed`)."""


class TurnCancelled(Exception):
    """The user cancelled the turn (for example from a permission prompt)."""


LEAVING_NEEDS_PERMISSION = "Not run again outside the sandbox:"
"""How the model's result of a command starts when it hit the sandbox's walls and no one could let it leave them (a
turn stopped so goes on from that call: `agent.turn.stopped_calls`)."""


REFUSED_BY_MODE = "refusedByMode"
"""In the `_meta["coder-agent"]` of a call's final update: the mode that refused it (nothing else did), so a run
without an editor can count what its mode kept from being done."""


def refused_by_mode(meta: dict[str, Any] | None) -> str | None:
    """The mode that refused a call, from its final update's `_meta` (None: not refused by a mode)."""
    ours = (meta or {}).get("coder-agent")
    mode = ours.get(REFUSED_BY_MODE) if isinstance(ours, dict) else None
    return mode if isinstance(mode, str) else None


class StoppedForPermission(TurnCancelled):
    """The call needs a permission no one could give: the turn stops at it, to run it once the user allows it.
    `for_model` says what happened when it is more than that the call did not run (it ran inside the sandbox and
    hit its walls, and leaving them is what needs the permission)."""

    def __init__(self, for_model: str | None = None) -> None:
        super().__init__(for_model or "")
        self.for_model = for_model


BeforeAsking = Callable[[], Awaitable[None]]
"""What a call running beside others waits for before it asks the user: its turn (the calls before it done)."""


class ToolSet(Protocol):
    """The tools of one turn."""

    def specs(self) -> list[dict[str, Any]]:
        """OpenAI-style function tool schemas, in a stable order."""
        ...

    def parallel(self, name: str) -> bool:
        """Whether calls of this tool in one reply run side by side (consecutive ones: see `agent.call_groups`)."""
        ...

    def read_only(self, name: str) -> bool:
        """Whether calls of this tool only read: consecutive ones run side by side (see `agent.call_groups`)."""
        ...

    def changes_files(self, name: str) -> bool:
        """Whether a call of this tool that succeeds changed files (a built-in edit: see `agent.finish_check`)."""
        ...

    async def run(self, call: ToolCallRequest, before_asking: BeforeAsking | None = None) -> ToolResult:
        """Run one call end to end, reporting it to the client; raise TurnCancelled only on a user cancel.
        `before_asking` is awaited before the call asks the user's permission, if it does."""
        ...


@dataclass
class Outcome:
    """A finished call: what the model reads, what the user sees, and whether it failed."""

    output: str | list[dict[str, Any]]
    display: list[ToolCallContent] = field(default_factory=list)
    failed: bool = False
    replay: list[ToolCallContent] | None = None
    """What a reloaded session shows instead of `display` (a terminal's output once the terminal is gone)."""
    ends_turn: bool = False
    """Stop the turn after this call (see `ToolResult.ends_turn`)."""


@dataclass
class Prepared:
    """A call that passed its checks, ready to be permitted and run."""

    action: Action
    title: str
    run: Callable[[], Awaitable[Outcome]]
    locations: list[ToolCallLocation] = field(default_factory=list)
    preview: list[ToolCallContent] = field(default_factory=list)


def text_content(text: str) -> ContentToolCallContent:
    return ContentToolCallContent(content=TextContent(text=text))
