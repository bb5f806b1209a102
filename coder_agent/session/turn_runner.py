"""The seam between sessions and whatever answers their prompts: the `TurnRunner` protocol.

A runner gets the session, the prompt's content blocks and the turn's `TurnReport`, streams its progress to the
client through `session.services.bridge`, and returns the turn's stop reason. The report says what the prompt's
response tells besides it: the id the user message got (the runner records the prompt under it) and what the
turn's model calls spent (the runner counts it there). Cancellation arrives as anyio cancellation of the task
running the turn; the session turns that into the `cancelled` stop reason, so a runner only has to clean up (in
`finally` blocks, shielded where it must still talk to the client).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from coder_agent.config import Config
from coder_agent.model.base import Model
from coder_agent.protocol.content import ContentBlock
from coder_agent.protocol.schema import StopReason, new_message_id
from coder_agent.session.conversation import Spending
from coder_agent.session.session import Session


@dataclass
class TurnReport:
    """One prompt's turn, as its response reports it."""

    user_message_id: str = field(default_factory=new_message_id)
    stop_reason: StopReason = "cancelled"
    spent: Spending = field(default_factory=Spending)
    """The turn's model calls whose bill came in before the turn ended (a compaction's included)."""
    by_user: bool = True
    """The user sent the prompt (False: the agent started the turn itself, and gives way to the user's prompts)."""
    show_prompt: bool = False
    """The client has not shown the prompt (a queued message, a wake): the runner shows it, not only records it."""


class TurnRunner(Protocol):
    """Runs the prompt turns of sessions."""

    def check(self, config: Config) -> None:
        """Raise an RpcError (AuthRequired, naming what to set) if turns cannot run with this config."""
        ...

    def warm(self, session: Session) -> None:
        """`session` opened and a prompt is coming: start getting ready for it (returns at once)."""
        ...

    async def run_turn(self, session: Session, prompt: Sequence[ContentBlock], report: TurnReport) -> StopReason:
        """Run one turn and return its stop reason (its user message recorded, its spending counted, in `report`)."""
        ...

    async def resume_turn(self, session: Session, report: TurnReport) -> StopReason:
        """Go on from a turn that stopped at a call no one could permit (run it now); its stop reason, its spending
        counted in `report`. An RpcError if the session did not stop so."""
        ...

    def sampling_model(self, session: Session, max_tokens: int) -> Model | None:
        """The session's model for an MCP server's sampling request (at most `max_tokens` out); None if this runner
        has no model (the request is refused). Raises an RpcError if the credentials are missing."""
        ...
