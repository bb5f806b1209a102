"""ACP presentation of the permission layer: session modes, the mode config option, permission options.

The policy (`coder_agent.permissions`) holds plain data; this module turns it into the wire's objects.
"""

from __future__ import annotations

from coder_agent.permissions import MODES, Choice
from coder_agent.protocol.schema import (
    PermissionOption,
    SelectOption,
    SessionConfigOption,
    SessionMode,
    SessionModeState,
)


def session_modes() -> list[SessionMode]:
    return [SessionMode(id=m.id, name=m.name, description=m.description) for m in MODES.values()]


def mode_state(current: str) -> SessionModeState:
    return SessionModeState(current_mode_id=current, available_modes=session_modes())


def mode_config_option(current: str) -> SessionConfigOption:
    return SessionConfigOption(
        id="mode",
        name="Mode",
        description="How much the agent may do without asking.",
        category="mode",
        current_value=current,
        options=[SelectOption(value=m.id, name=m.name, description=m.description) for m in MODES.values()],
    )


def permission_options(choices: list[Choice]) -> list[PermissionOption]:
    return [PermissionOption(option_id=c.kind, name=c.label, kind=c.kind) for c in choices]
