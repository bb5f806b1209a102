"""The seam between a session and whatever answers its prompts: the `TurnRunner` protocol.

A runner gets the session and the prompt's content blocks, streams its progress to the client through
`session.client`, and returns the turn's stop reason. Cancellation arrives as anyio cancellation of the
task running the turn; the session turns that into the `cancelled` stop reason, so a runner only has to
clean up (in `finally` blocks, shielded where it must still talk to the client).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from coder_agent.protocol.content import ContentBlock, TextContent
from coder_agent.protocol.schema import AgentMessageChunk, StopReason

if TYPE_CHECKING:
    from coder_agent.session import Session


class TurnRunner(Protocol):
    """Runs the prompt turns of sessions."""

    async def open_session(self, session: Session) -> None:
        """Prepare a new session (config, credentials); raise an RpcError to refuse it."""
        ...

    async def authenticate(self) -> None:
        """Check the credentials again (the client's `authenticate`); raise AuthRequired if still missing."""
        ...

    async def session_ready(self, session: Session) -> None:
        """Runs just after the client got the session's id: announce commands and the like."""
        ...

    async def run_turn(self, session: Session, prompt: Sequence[ContentBlock]) -> StopReason:
        """Run one turn and return its stop reason."""
        ...


class EchoTurnRunner:
    """A runner with no model: it says what it received. Useful to check an editor's wiring."""

    async def open_session(self, session: Session) -> None:
        return None

    async def authenticate(self) -> None:
        return None

    async def session_ready(self, session: Session) -> None:
        return None

    async def run_turn(self, session: Session, prompt: Sequence[ContentBlock]) -> StopReason:
        texts = [block.text for block in prompt if isinstance(block, TextContent)]
        reply = "coder-agent received: " + (" ".join(texts) or f"{len(prompt)} content block(s)")
        await session.client.update(AgentMessageChunk(content=TextContent(text=reply)))
        return "end_turn"
