"""ACP presentation of the permission layer (session modes, permission options) and of a turn's spending.

The policy (`coder_agent.permissions`) and the bill (`session.conversation.Spending`) hold plain data; this module
turns them into the wire's objects.
"""

from __future__ import annotations

from coder_agent.permissions import Choice, available_modes
from coder_agent.protocol.schema import (
    PermissionOption,
    SessionMode,
    SessionModeState,
    TurnUsage,
)
from coder_agent.session.conversation import Spending

USAGE_META = "coder-agent"
"""The `_meta` key of a prompt response's `usage`: the turn's cost (USD, where the price is known) and requests."""


def session_modes(sandboxed: bool) -> list[SessionMode]:
    """The modes offered: `auto` only to a session whose commands run inside a sandbox."""
    return [SessionMode(id=m.id, name=m.name, description=m.description) for m in available_modes(sandboxed)]


def mode_state(current: str, sandboxed: bool) -> SessionModeState:
    return SessionModeState(current_mode_id=current, available_modes=session_modes(sandboxed))


def permission_options(choices: list[Choice]) -> list[PermissionOption]:
    return [PermissionOption(option_id=c.option_id, name=c.label, kind=c.kind) for c in choices]


def turn_usage(spent: Spending) -> TurnUsage | None:
    """A prompt response's `usage`: the turn's tokens, and in `_meta` its cost and model requests; None if the turn
    made no model call whose bill came in."""
    if not spent.requests:
        return None
    usage = TurnUsage(
        total_tokens=spent.input_tokens + spent.output_tokens,
        input_tokens=spent.input_tokens,
        output_tokens=spent.output_tokens,
        cached_read_tokens=spent.cached_tokens,
        cached_write_tokens=spent.cache_write_tokens,
    )
    cost = {"amount": round(spent.cost, 6), "currency": "USD"} if spent.cost else None
    usage.meta = {USAGE_META: {"requests": spent.requests, **({"cost": cost} if cost else {})}}
    return usage
