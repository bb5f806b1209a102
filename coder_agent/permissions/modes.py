"""The session modes as plain data: one `ModeName` Literal, what each mode means in words a user reads, and which
ones are autonomous (`AUTONOMOUS_MODES`) or change nothing (`NO_CHANGE_MODES`).

The config's `default_mode`, the policy, `session/set_mode` and the editor's mode picker are all built from
this table (`acp.presentation` turns it into ACP objects). The descriptions say exactly what holds; the
README's modes table says the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeGuard, get_args

ModeName = Literal["read-only", "plan", "default", "accept-edits", "auto", "full-auto"]
DEFAULT_MODE: ModeName = "default"


@dataclass(frozen=True)
class ModeInfo:
    id: ModeName
    name: str
    description: str


MODES: dict[ModeName, ModeInfo] = {
    info.id: info
    for info in (
        ModeInfo(
            "read-only",
            "Read only",
            "Reads and searches in the workspace; edits and commands are refused, fetches ask.",
        ),
        ModeInfo(
            "plan",
            "Plan",
            "Explores read-only and proposes a plan; nothing is edited and no command runs until you approve the "
            "plan and pick the mode to go on in.",
        ),
        ModeInfo(
            "default", "Ask", "Reads and searches in the workspace freely; asks before every edit, command and fetch."
        ),
        ModeInfo(
            "accept-edits",
            "Accept edits",
            "Edits files in the workspace without asking (but asks for .git/ and .coder-agent/); asks before "
            "commands and fetches.",
        ),
        ModeInfo(
            "auto",
            "Auto (sandboxed)",
            "Edits in the workspace and commands inside the sandbox run without asking; a command that needs to "
            "leave the sandbox, fetches and MCP tools ask. Offered where commands can be sandboxed.",
        ),
        ModeInfo(
            "full-auto",
            "Full auto (no sandbox)",
            "Edits, commands and fetches run without asking, and commands run outside the sandbox: they can reach "
            "anything your account can. File tools, fetches of local addresses and visible command writes outside "
            "the workspace still ask.",
        ),
    )
}
assert set(MODES) == set(get_args(ModeName)), "every mode has one row"


SANDBOXED_MODES: frozenset[ModeName] = frozenset({"auto"})
"""Modes offered only where the session's commands can be sandboxed."""
NO_CHANGE_MODES: frozenset[ModeName] = frozenset({"read-only", "plan"})
"""Modes where nothing but reading, searching and fetching runs (`plan` ends with the plan the user approves)."""
AUTONOMOUS_MODES: frozenset[ModeName] = frozenset({"auto", "full-auto"})
"""The modes where the agent works on its own (nothing it does waits for the user): the model is told to finish
the task without stopping to ask. The one place this question is answered."""


def is_mode(value: str) -> TypeGuard[ModeName]:
    return value in MODES


def available_modes(sandboxed: bool) -> list[ModeInfo]:
    """The modes a session may be in: `auto` only where its commands run inside a sandbox."""
    return [m for m in MODES.values() if sandboxed or m.id not in SANDBOXED_MODES]


def is_autonomous(mode: str) -> bool:
    """Whether the agent works on its own in this mode (see `AUTONOMOUS_MODES`)."""
    return mode in AUTONOMOUS_MODES
