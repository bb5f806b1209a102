"""What the loop tells telemetry, without knowing OpenTelemetry: a trace per turn, with a span per model request and
per tool call (`agent.otel` implements it, imported only when telemetry is on).

The turn's trace is in force where the turn runs (`current_turn`, a context variable: the model requests and tool
calls of the turn, its sub-agents' included, find it without being handed it); with telemetry off there is none,
and nothing here costs more than a lookup.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol

from coder_agent.model.base import Usage


class ModelSpan(Protocol):
    """One model request."""

    def first_token(self) -> None:
        """The first of its answer arrived (the time to first token)."""

    def end(self, usage: Usage | None, cost: float | None, answer: str | None = None, error: str | None = None) -> None:
        """It ended: what it used and cost (None: not known), its answer (kept only where prompts are), or why not."""


class ToolSpan(Protocol):
    """One tool call."""

    def end(self, status: str, permission: str, output: str | None = None) -> None:
        """It ended (`completed`, `failed`, `cancelled`), with how its permission went and what the model read."""


class TurnTrace(Protocol):
    """One prompt's turn."""

    def model_request(self, model: str) -> ModelSpan: ...

    def tool_call(self, name: str, kind: str, call_id: str, arguments: Any) -> ToolSpan: ...

    def end(self, stop_reason: str) -> None: ...


class Telemetry(Protocol):
    """Where a session's turns are traced."""

    def turn(self, session_id: str, mode: str, model: str | None, prompt: str | None) -> TurnTrace: ...


_current: ContextVar[TurnTrace | None] = ContextVar("coder_agent_turn_trace", default=None)


def current_turn() -> TurnTrace | None:
    """The trace of the turn running here, if telemetry is on."""
    return _current.get()


@contextmanager
def tracing(trace: TurnTrace | None) -> Iterator[None]:
    """Make `trace` the current turn's for the block (what the block starts inherits it)."""
    token = _current.set(trace)
    try:
        yield
    finally:
        _current.reset(token)
