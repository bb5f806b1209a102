"""Turn runners without a model, for protocol tests of the session machinery."""

from __future__ import annotations

from collections.abc import Sequence

from coder_agent.config import Config
from coder_agent.model.base import Model
from coder_agent.protocol.content import ContentBlock, TextContent
from coder_agent.protocol.schema import AgentMessageChunk, StopReason, new_message_id
from coder_agent.session.session import Session
from coder_agent.session.turn_runner import TurnReport


class EchoTurnRunner:
    """A runner with no model: it says what it received."""

    def check(self, config: Config) -> None:
        return None

    def warm(self, session: Session) -> None:
        return None

    def sampling_model(self, session: Session, max_tokens: int) -> Model | None:
        return None

    async def run_turn(self, session: Session, prompt: Sequence[ContentBlock], report: TurnReport) -> StopReason:
        texts = [block.text for block in prompt if isinstance(block, TextContent)]
        reply = "coder-agent received: " + (" ".join(texts) or f"{len(prompt)} content block(s)")
        chunk = AgentMessageChunk(content=TextContent(text=reply), message_id=new_message_id())
        await session.services.bridge.update(chunk)
        return "end_turn"

    async def resume_turn(self, session: Session, report: TurnReport) -> StopReason:
        chunk = AgentMessageChunk(content=TextContent(text="coder-agent goes on"), message_id=new_message_id())
        await session.services.bridge.update(chunk)
        return "end_turn"
