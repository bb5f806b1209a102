"""`ModelRunner`: the `TurnRunner` backed by a model — each prompt is a slash command or a model turn.

It builds the turn's model from the session's config (credentials checked each time, so a key added
to the environment or a `/model` switch takes effect at once), records the prompt in the replay log,
titles a session after its first prompt, and hands the prompt to `commands` or to a `Turn`; `resume_turn` has a
`Turn` go on from the calls it stopped at for want of permission. A turn's `task` calls run as sub-agents
(`agent.subagents`), whose models it makes too.

With litellm (no `model_factory`), building the runner starts litellm's import in the background: the
agent is built right after it spawns, so the import overlaps `initialize` and `session/new` instead of
starting after them. `warm` then gets litellm ready for a session's model.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import anyio

from coder_agent.agent import commands
from coder_agent.agent.config_source import ConfigSource
from coder_agent.agent.metering import MeteredModel
from coder_agent.agent.subagents import Subagents
from coder_agent.agent.turn import Turn
from coder_agent.agent.user_message import shown_blocks
from coder_agent.config import Config
from coder_agent.errors import ConfigInvalid
from coder_agent.model import providers
from coder_agent.model.base import Model, ModelSettings
from coder_agent.protocol.content import ContentBlock, TextContent
from coder_agent.protocol.schema import SessionInfoUpdate, StopReason, UserMessageChunk
from coder_agent.session.session import Session
from coder_agent.session.turn_runner import TurnReport
from coder_agent.store import utc_now
from coder_agent.tools.executor import ToolExecutor

TITLE_CHARS = 60
PERSIST_TIMEOUT = 5.0

ModelFactory = Callable[[ModelSettings], Model]


class ModelRunner:
    """Runs prompts with a model; `model_factory` defaults to litellm."""

    def __init__(self, source: ConfigSource, *, model_factory: ModelFactory | None = None) -> None:
        self.source = source
        self._model_factory = model_factory
        if model_factory is None:
            from coder_agent.model.litellm_loader import start_background_import

            start_background_import()

    def check(self, config: Config) -> None:
        """AuthRequired or ConfigInvalid, naming the fix, unless a turn can run with this config."""
        self.source.model_settings(config)
        if self._model_factory is None:
            problem = providers.check_model(config.model or "")
            if problem is not None:
                raise ConfigInvalid(problem, {"model": config.model})

    def warm(self, session: Session) -> None:
        model = session.state.config.model
        if self._model_factory is None and model:
            from coder_agent.model.litellm_loader import warm

            warm(model)  # a prompt is coming: have the model library ready for it

    def make_model(self, settings: ModelSettings) -> Model:
        if self._model_factory is not None:
            return self._model_factory(settings)
        from coder_agent.model.litellm_model import LitellmModel

        return LitellmModel(settings)

    def sampling_model(self, session: Session, max_tokens: int) -> Model:
        """The session's model, its output capped at what the server asked for (and the config's own cap), billed
        to the session."""
        settings = self.source.model_settings(session.state.config)
        cap = min(max_tokens, settings.max_tokens) if settings.max_tokens else max_tokens
        model = self.make_model(dataclasses.replace(settings, max_tokens=max(cap, 1)))
        return MeteredModel(model, session.turn_context(), measures=False)

    def _model_turn(self, session: Session, report: TurnReport) -> Turn:
        """A turn of the session's model, billed to `report` too, whose `task` calls run as sub-agents."""
        ctx = session.turn_context()
        model = MeteredModel(self.make_model(self.source.model_settings(ctx.config)), ctx, bills=(report.spent,))
        ctx = dataclasses.replace(ctx, delegate=Subagents(session, ctx, model, self._subagent_model))
        return Turn(ctx, model, ToolExecutor(ctx, model.accepts_images))

    def _subagent_model(self, config: Config) -> Model:
        """A sub-agent's model (the config names it); AuthRequired or ConfigInvalid when it cannot answer."""
        self.check(config)
        return self.make_model(self.source.model_settings(config))

    async def run_turn(self, session: Session, prompt: Sequence[ContentBlock], report: TurnReport) -> StopReason:
        turn = self._model_turn(session, report)
        ctx = turn.ctx
        for block in shown_blocks(prompt):
            chunk = UserMessageChunk(content=block, message_id=report.user_message_id)
            if report.show_prompt:
                await ctx.bridge.update(chunk)
            else:
                ctx.bridge.record(chunk)
        command = commands.parse(prompt)
        if command is not None:
            try:
                return await commands.run(
                    commands.CommandContext(session, turn, self.check, report.user_message_id), *command
                )
            finally:
                session.save_soon()
                with anyio.CancelScope(shield=True), anyio.move_on_after(PERSIST_TIMEOUT):
                    await session.flush()
        await _name_session(session, prompt)
        return await turn.run(prompt, report.user_message_id)

    async def resume_turn(self, session: Session, report: TurnReport) -> StopReason:
        return await self._model_turn(session, report).resume()


async def _name_session(session: Session, prompt: Sequence[ContentBlock]) -> None:
    """Title a session after its first prompt's first text (what follows it is context: a run's piped input, a
    pasted file), and tell the client."""
    if session.state.title is not None:
        return
    text = next((block.text for block in prompt if isinstance(block, TextContent) and block.text.strip()), "").strip()
    if not text:
        return
    first_line = " ".join(text.split())
    title = first_line if len(first_line) <= TITLE_CHARS else first_line[: TITLE_CHARS - 1].rstrip() + "…"
    session.state.set_title(title)
    await session.services.bridge.update(SessionInfoUpdate(title=title, updated_at=utc_now()))
