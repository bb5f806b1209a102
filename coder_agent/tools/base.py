"""The seam between the agent loop and the tools: what a tool set offers the model and what a call returns.

A `ToolSet` announces each call to the client, asks permission, runs it and reports it: the loop only
hands it the model's call and feeds the result back. Failures the model should see (bad arguments, a
rejected permission, a failed command) are results with `failed=True`, never exceptions; `TurnCancelled`
is the one exception, for a user who cancelled from the permission prompt.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from coder_agent.model.types import ToolCallRequest


@dataclass(frozen=True)
class ToolResult:
    """What the model reads back: text, or OpenAI-style content parts (text and images)."""

    output: str | list[dict[str, Any]]
    failed: bool = False

    def text(self) -> str:
        if isinstance(self.output, str):
            return self.output
        return "\n".join(str(part.get("text", "")) for part in self.output if part.get("type") == "text")


class TurnCancelled(Exception):
    """The user cancelled the turn (for example from a permission prompt)."""


class ToolSet(Protocol):
    """The tools of one turn."""

    def specs(self) -> list[dict[str, Any]]:
        """OpenAI-style function tool schemas, in a stable order."""
        ...

    async def run(self, call: ToolCallRequest) -> ToolResult:
        """Run one call end to end, reporting it to the client; raise TurnCancelled only on a user cancel."""
        ...


class NoTools:
    """A tool set with nothing in it."""

    def specs(self) -> list[dict[str, Any]]:
        return []

    async def run(self, call: ToolCallRequest) -> ToolResult:
        return ToolResult(f"There is no tool named {call.name!r}.", failed=True)
