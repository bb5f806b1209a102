"""The `[hooks]` section: commands the agent runs on events of a session (`session.hooks` runs them).

Each event has a list of hooks, written in TOML as arrays of tables:

    [[hooks.before_tool]]
    command = "python3 ~/bin/guard.py"   # bash -c; the event as JSON on stdin
    tools = ["run_command"]              # tool names (globs); none: every tool
    timeout = 30

A project file's hooks are kept apart (`Config.project_hooks`): they run only once the user trusts them. Standard
library and pydantic only: the config is loaded on the startup path.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

HookEvent = Literal["session_start", "before_tool", "after_tool", "after_edit", "turn_end", "notification"]
HOOK_EVENTS: tuple[HookEvent, ...] = (
    "session_start",
    "before_tool",
    "after_tool",
    "after_edit",
    "turn_end",
    "notification",
)
TOOL_EVENTS = frozenset({"before_tool", "after_tool", "after_edit"})
"""Events of a tool call: their hooks may name the tools they are for."""


class HookCommand(BaseModel):
    """One command run on an event."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str = Field(min_length=1)
    """A bash command line, run in the session's folder inside its sandbox; the event's JSON comes on stdin."""

    tools: list[str] = Field(default_factory=list)
    """For tool events: the tool names it runs for, as globs (`run_command`, `mcp__github__*`); none: every tool."""

    timeout: float = Field(default=30.0, gt=0, le=600)
    """The most seconds it may run; it is killed after that (for `before_tool`, the call is then blocked)."""

    @field_validator("command")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the command is empty")
        return value


class HooksConfig(BaseModel):
    """Commands run on a session's events, in the order listed (see README: Hooks)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    session_start: list[HookCommand] = Field(default_factory=list)
    before_tool: list[HookCommand] = Field(default_factory=list)
    after_tool: list[HookCommand] = Field(default_factory=list)
    after_edit: list[HookCommand] = Field(default_factory=list)
    turn_end: list[HookCommand] = Field(default_factory=list)
    notification: list[HookCommand] = Field(default_factory=list)

    def of(self, event: HookEvent) -> list[HookCommand]:
        hooks: list[HookCommand] = getattr(self, event)
        return hooks

    @property
    def empty(self) -> bool:
        return not any(self.of(event) for event in HOOK_EVENTS)

    def commands(self) -> list[str]:
        """Every command, once, in the order of the events."""
        return list(dict.fromkeys(hook.command for event in HOOK_EVENTS for hook in self.of(event)))


class ProjectHooks(BaseModel):
    """The hooks of a project file (`.coder-agent/config.toml`): repository content, run only once trusted."""

    model_config = ConfigDict(frozen=True)

    file: Path
    hooks: HooksConfig

    @property
    def digest(self) -> str:
        """What the user's trust is remembered for: the hooks as written (another command asks again)."""
        text = json.dumps(self.hooks.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()
