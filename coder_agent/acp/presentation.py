"""ACP presentation of the permission layer: session modes and permission options.

The policy (`coder_agent.permissions`) holds plain data; this module turns it into the wire's objects.
"""

from __future__ import annotations

from coder_agent.permissions import Choice, available_modes
from coder_agent.protocol.schema import (
    PermissionOption,
    SessionMode,
    SessionModeState,
)


def session_modes(sandboxed: bool) -> list[SessionMode]:
    """The modes offered: `auto` only to a session whose commands run inside a sandbox."""
    return [SessionMode(id=m.id, name=m.name, description=m.description) for m in available_modes(sandboxed)]


def mode_state(current: str, sandboxed: bool) -> SessionModeState:
    return SessionModeState(current_mode_id=current, available_modes=session_modes(sandboxed))


def permission_options(choices: list[Choice]) -> list[PermissionOption]:
    return [PermissionOption(option_id=c.option_id, name=c.label, kind=c.kind) for c in choices]
