"""The seam between sessions and whatever answers their prompts: the `TurnRunner` protocol.

A runner gets the session and the prompt's content blocks, streams its progress to the client through
`session.services.bridge`, and returns the turn's stop reason. Cancellation arrives as anyio cancellation of the
task running the turn; the session turns that into the `cancelled` stop reason, so a runner only has to
clean up (in `finally` blocks, shielded where it must still talk to the client).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from coder_agent.config import Config
from coder_agent.model.base import Model
from coder_agent.protocol.content import ContentBlock
from coder_agent.protocol.schema import StopReason
from coder_agent.session.session import Session


class TurnRunner(Protocol):
    """Runs the prompt turns of sessions."""

    def check(self, config: Config) -> None:
        """Raise an RpcError (AuthRequired, naming what to set) if turns cannot run with this config."""
        ...

    def warm(self, session: Session) -> None:
        """`session` opened and a prompt is coming: start getting ready for it (returns at once)."""
        ...

    async def run_turn(self, session: Session, prompt: Sequence[ContentBlock]) -> StopReason:
        """Run one turn and return its stop reason."""
        ...

    async def resume_turn(self, session: Session) -> StopReason:
        """Go on from a turn that stopped at a call no one could permit (run it now); its stop reason. An RpcError
        if the session did not stop so."""
        ...

    def sampling_model(self, session: Session, max_tokens: int) -> Model | None:
        """The session's model for an MCP server's sampling request (at most `max_tokens` out); None if this runner
        has no model (the request is refused). Raises an RpcError if the credentials are missing."""
        ...
