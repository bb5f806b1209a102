"""`AgentLoop`: the turn runner that drives the model ↔ tools loop of each prompt through litellm.

One turn: the prompt becomes a user message; the model streams its answer (text as
`agent_message_chunk`, reasoning as `agent_thought_chunk`); tool calls go to the session's `ToolSet`
and their results back to the model; this repeats until the model stops asking for tools or a limit is
hit. After every model call the client gets a `usage_update`. Near the context window, and when the
provider says the request no longer fits, older turns are compacted into a summary.

The history stays valid whatever happens: a cancel or a failure mid-turn keeps the streamed text and
answers every pending tool call, so the next prompt can carry on.
"""

from __future__ import annotations

import hashlib
import logging
import os
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio

from coder_agent import commands, environment, persistence, prompts, secrets
from coder_agent.checkpoints import Checkpoints
from coder_agent.compaction import compact
from coder_agent.config import CliOverrides, Config, ConfigError, load_config, resolve_api_key
from coder_agent.errors import AuthRequired, InternalError
from coder_agent.model import providers
from coder_agent.model.litellm_model import LitellmModel, ModelSettings, start_background_import
from coder_agent.model.types import (
    ContextWindowExceeded,
    Message,
    ModelAuthError,
    ModelError,
    ModelTurn,
    StreamCut,
    StreamSink,
    ToolCallRequest,
)
from coder_agent.options import config_options
from coder_agent.permissions import PermissionPolicy, Rule
from coder_agent.prompt_content import to_user_message
from coder_agent.protocol.content import ContentBlock, EmbeddedResource, ImageContent, TextContent
from coder_agent.protocol.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AvailableCommandsUpdate,
    CompactionUpdate,
    ConfigOptionUpdate,
    Cost,
    SessionInfoUpdate,
    StopReason,
    UsageUpdate,
)
from coder_agent.session import Session
from coder_agent.store import utc_now
from coder_agent.tools.base import NoTools, ToolResult, ToolSet, TurnCancelled

log = logging.getLogger(__name__)

TITLE_CHARS = 60
PERSIST_TIMEOUT = 5.0
MCP_CONNECT_TIMEOUT = 20.0

DOOM_LOOP_REPEATS = 3
"""Identical tool call + identical result this many times in a row stops the turn."""

TOOL_IMAGES_NOTE = "Images returned by the tool calls above:"
CANCELLED_TOOL_RESULT = "The user cancelled the turn before this tool call ran."

ToolSetFactory = Callable[[Session], ToolSet]
ModelFactory = Callable[[ModelSettings], LitellmModel]


class AgentLoop:
    """A `TurnRunner` backed by an LLM."""

    def __init__(
        self,
        cli: CliOverrides | None = None,
        *,
        tools: ToolSetFactory | None = None,
        environ: dict[str, str] | None = None,
        user_config_path: Path | None = None,
        model_factory: ModelFactory = LitellmModel,
    ) -> None:
        self.cli = cli or CliOverrides()
        self.make_tools: ToolSetFactory = tools or _builtin_tools
        self.environ = environ
        self.user_config_path = user_config_path
        self.model_factory = model_factory

    # ---- TurnRunner ---------------------------------------------------------------------------

    async def open_session(self, session: Session) -> None:
        session.config = self._load_config(session.cwd)
        self._settings(session.config)
        session.permissions = _policy(session.cwd, session.config)
        session.checkpoints = Checkpoints(session.cwd, session_id=session.id)
        if session.mcp_servers:
            await _connect_mcp(session)

    async def authenticate(self) -> None:
        self._settings(self._load_config(None))

    async def session_ready(self, session: Session) -> None:
        start_background_import()  # a prompt is coming: have the model library ready for it
        if session.mcp_hub is not None:
            session.mcp_prompts = await session.mcp_hub.list_prompts()
        await session.client.update(AvailableCommandsUpdate(available_commands=commands.advertised(session)))
        if session.mcp_hub is not None:
            failed = [status for status in session.mcp_hub.statuses() if status.state == "failed"]
            if failed:
                lines = "\n".join(f"- **{status.name}**: {status.error}" for status in failed)
                text = f"Some MCP servers could not be started; their tools are missing:\n\n{lines}\n"
                await session.client.update(AgentMessageChunk(content=TextContent(text=text)), live_only=True)

    async def run_turn(self, session: Session, prompt: Sequence[ContentBlock]) -> StopReason:
        if session.config is None:
            session.config = self._load_config(session.cwd)
        config = session.config
        model = self.model_factory(self._settings(config))
        turn = Turn(session, config, model, self.make_tools(session), self._settings)
        for block in prompt:
            persistence.record_update(session.events, {"sessionUpdate": "user_message_chunk", "content": block.wire()})
        command = commands.parse(prompt)
        if command is not None:
            try:
                return await commands.run(turn, *command)
            finally:
                session.save_soon()
                with anyio.CancelScope(shield=True), anyio.move_on_after(PERSIST_TIMEOUT):
                    await session.flush()
        await _name_session(session, prompt)
        return await turn.run(prompt)

    # ---- config and credentials ---------------------------------------------------------------

    def _load_config(self, cwd: Path | None) -> Config:
        try:
            return load_config(cwd, self.cli, self.environ, self.user_config_path)
        except ConfigError as exc:
            raise InternalError(str(exc)) from None

    def _settings(self, config: Config) -> ModelSettings:
        """The model settings, or AuthRequired naming what to set."""
        if not config.model:
            raise AuthRequired(
                "No model is configured. Set CODER_AGENT_MODEL to a litellm model string "
                "(for example anthropic/claude-sonnet-4-5, openai/gpt-4.1, or openai/<name> with "
                "CODER_AGENT_API_BASE for a self-hosted server), or `model` in a config file."
            )
        key = resolve_api_key(config, self.environ)
        if key is None:
            environ = self.environ if self.environ is not None else _os_environ()
            provider_vars = providers.key_variables(config.model)
            has_provider_key = any(environ.get(name) for name in provider_vars)
            if not has_provider_key and providers.needs_key(config.model, config.api_base):
                names = " or ".join([*provider_vars, "CODER_AGENT_API_KEY"])
                raise AuthRequired(f"No API key for {config.model}: set {names} in the agent's environment.")
            if not has_provider_key and config.api_base is not None:
                key = "no-key"  # self-hosted servers often need none, but the OpenAI client insists on one
        return ModelSettings(
            model=config.model,
            api_key=key,
            api_base=config.api_base,
            temperature=config.temperature,
            max_tokens=config.max_tokens,
            reasoning_effort=config.reasoning_effort,
            context_window=config.context_window,
            request_timeout=config.request_timeout,
            idle_timeout=config.idle_timeout,
            retries=config.retries,
            extra_params=dict(config.extra_params),
        )


def _builtin_tools(session: Session) -> ToolSet:
    from coder_agent.tools.executor import SessionTools

    return SessionTools(session) if session.permissions is not None else NoTools()


def _policy(cwd: Path, config: Config) -> PermissionPolicy:
    """The session's permission policy from the config's mode and rules."""
    secrets.add_key_variable(config.api_key_env)
    try:
        allow = [Rule.parse(text) for text in config.permissions.allow]
        deny = [Rule.parse(text) for text in config.permissions.deny]
    except ValueError as exc:
        raise InternalError(f"Invalid config: permissions: {exc}") from None
    return PermissionPolicy(cwd=cwd, mode=config.default_mode, allow=allow, deny=deny)


async def _connect_mcp(session: Session) -> None:
    """Start the session's MCP servers, all at once; a server that fails is reported, not fatal."""
    if session.tasks is None:
        log.warning("session %s: no task group for MCP servers; they are not started", session.id)
        return
    from coder_agent.mcp_hub import McpHub, McpServerSpec

    hub = McpHub(task_group=session.tasks, roots=session.roots)
    session.mcp_hub = hub
    session.closers.append(hub.aclose)
    specs = [McpServerSpec.from_acp(server, cwd=session.cwd) for server in session.mcp_servers]
    statuses = await hub.connect(specs, timeout=MCP_CONNECT_TIMEOUT)
    for status in statuses:
        log.info("session %s: MCP server %s %s (%s)", session.id, status.name, status.state, status.error or "ok")


async def _name_session(session: Session, prompt: Sequence[ContentBlock]) -> None:
    """Title a session after its first prompt, and tell the client."""
    if session.title is not None:
        return
    text = " ".join(block.text for block in prompt if isinstance(block, TextContent)).strip()
    if not text:
        return
    first_line = " ".join(text.split())
    session.title = first_line if len(first_line) <= TITLE_CHARS else first_line[: TITLE_CHARS - 1].rstrip() + "…"
    await session.client.update(SessionInfoUpdate(title=session.title, updated_at=utc_now()))


def _os_environ() -> dict[str, str]:
    return dict(os.environ)


class Turn:
    """The state of one running prompt turn."""

    def __init__(
        self,
        session: Session,
        config: Config,
        model: LitellmModel,
        tools: ToolSet,
        settings: Callable[[Config], ModelSettings],
    ) -> None:
        self.session = session
        self.settings = settings
        self.client = session.client
        self.config = config
        self.model = model
        self.tools = tools
        self.history = session.conversation.messages
        self.streamed: list[str] = []  # text shown to the user during the model call in flight
        self.recent_calls: list[str] = []

    async def run(self, prompt: Sequence[ContentBlock]) -> StopReason:
        user = to_user_message(prompt, images=await self.model.accepts_images() if _has_images(prompt) else None)
        for note in user.notes:
            await self.say(f"_{note}_\n\n")
        turn_start = len(self.history)
        self.history.append(user.message)
        checkpoints = self.session.checkpoints
        if checkpoints is not None:
            checkpoints.begin_turn(f"turn_{uuid.uuid4().hex[:12]}")
        self.session.save_soon()
        system = await self.system_message()
        try:
            return await self.loop(system, turn_start)
        finally:
            self.repair_history()
            if checkpoints is not None:
                checkpoints.end_turn()
            self.session.save_soon()  # not awaited: the answer does not wait on the disk (aclose flushes)

    async def loop(self, system: Message, turn_start: int) -> StopReason:
        compacted_for_overflow = False
        for _ in range(self.config.max_turn_requests):
            await self.maybe_compact()
            try:
                turn = await self.call_model(system)
            except ContextWindowExceeded as exc:
                if compacted_for_overflow or not await self.compact_now():
                    await self.say(f"\n\n**The conversation no longer fits the model's context window:** {exc}\n")
                    return "end_turn"
                compacted_for_overflow = True
                continue
            except StreamCut as exc:
                self.streamed.clear()
                self.history.append(exc.partial.message)
                await self.say(f"\n\n**{exc}** The partial answer above is kept; send a message to continue.\n")
                return "end_turn"
            except ModelAuthError as exc:
                raise AuthRequired(f"The model provider rejected the credentials: {exc}") from None
            except ModelError as exc:
                await self.say(f"\n\n**The model call failed:** {exc}\n")
                return "end_turn"
            compacted_for_overflow = False
            self.history.append(turn.message)
            await self.report_usage(turn)
            self.session.save_soon()
            if turn.finish_reason == "content_filter":
                del self.history[turn_start:]
                await self.say("\n\n_The model declined to answer (content filter)._\n")
                return "refusal"
            if turn.finish_reason == "length":
                for call in turn.tool_calls:
                    self.add_tool_result(call.id, "Not run: the model's output was cut at max_tokens.")
                return "max_tokens"
            if not turn.tool_calls:
                return "end_turn"
            images: list[dict[str, Any]] = []
            for call in turn.tool_calls:
                try:
                    result = await self.tools.run(call)
                except TurnCancelled:
                    return "cancelled"
                images += self.add_tool_result(call.id, result.output)
                self.session.save_soon()
                if self.repeating(call, result):
                    await self.say(
                        f"\n\n**Stopped:** the model made the same `{call.name}` call with the same result "
                        f"{DOOM_LOOP_REPEATS} times in a row. Rephrase the request or give it a hint.\n"
                    )
                    return "end_turn"
            if images:  # tool messages carry text only: images follow in a user message
                self.history.append({"role": "user", "content": [_text_part(TOOL_IMAGES_NOTE), *images]})
        await self.say(
            f"\n\n**Stopped after {self.config.max_turn_requests} model requests** (the `max_turn_requests` limit). "
            "Send a message to let it continue.\n"
        )
        return "max_turn_requests"

    # ---- model --------------------------------------------------------------------------------

    async def call_model(self, system: Message) -> ModelTurn:
        self.streamed.clear()
        sink = StreamSink(on_text=self.on_text, on_thought=self.on_thought, on_retry=self.on_retry)
        turn = await self.model.stream([system, *self.history], self.tools.specs(), sink)
        self.streamed.clear()
        return turn

    async def on_text(self, text: str) -> None:
        self.streamed.append(text)
        await self.client.update(AgentMessageChunk(content=TextContent(text=text)))

    async def on_thought(self, text: str) -> None:
        await self.client.update(AgentThoughtChunk(content=TextContent(text=text)))

    async def on_retry(self, note: str) -> None:
        await self.client.update(AgentThoughtChunk(content=TextContent(text=f"\n{note}\n")))

    async def say(self, text: str) -> None:
        """A message from the agent itself (not the model); shown, and not added to the history."""
        await self.client.update(AgentMessageChunk(content=TextContent(text=text)))

    async def system_message(self) -> Message:
        env = await environment.describe(self.session.cwd, self.session.additional_directories)
        return {"role": "system", "content": prompts.render("system.md", **env.template_values())}

    async def report_usage(self, turn: ModelTurn) -> None:
        conversation = self.session.conversation
        if turn.cost:
            conversation.cost += turn.cost
        conversation.context_tokens = turn.usage.total_tokens
        cost = Cost(amount=round(conversation.cost, 6)) if conversation.cost else None
        size = await self.model.context_window()
        await self.client.update(UsageUpdate(used=conversation.context_tokens, size=size, cost=cost))

    # ---- compaction ---------------------------------------------------------------------------

    async def maybe_compact(self) -> None:
        used = self.session.conversation.context_tokens
        if used and used >= self.config.compact_threshold * await self.model.context_window():
            await self.compact_now()

    async def switch_model(self, name: str) -> str:
        """`/model`: show the model and the configured ones, or switch this session to another."""
        config = self.config
        if not name:
            others = [m for m in dict.fromkeys(config.models) if m != config.model]
            listed = "".join(f"\n- `{m}`" for m in others) or " none (list them under `models` in the config)"
            return f"The model is `{config.model}`. Other configured models:{listed}\n"
        updated = config.model_copy(update={"model": name})
        try:
            self.settings(updated)
        except AuthRequired as exc:
            return f"Cannot switch to `{name}`: {exc.message}\n"
        self.session.config = updated
        await self.client.update(ConfigOptionUpdate(config_options=config_options(self.session)))
        return f"Switched this session to `{name}`.\n"

    async def compact_now(self, focus: str | None = None) -> bool:
        """Summarise the older history; tell the user. False if there was nothing to compact."""
        compaction_id = f"compaction_{uuid.uuid4().hex[:12]}"
        visible = self.client.supports_compaction_updates
        if visible:
            await self.client.update(CompactionUpdate(compaction_id=compaction_id, status="in_progress"))
        try:
            result = await compact(self.model, self.history, focus)
        except ModelError as exc:
            if visible:
                await self.client.update(CompactionUpdate(compaction_id=compaction_id, status="failed", error=str(exc)))
            else:
                await self.say(f"\n\n_Compacting the conversation failed: {exc}_\n\n")
            return False
        if result is None:
            if visible:
                await self.client.update(CompactionUpdate(compaction_id=compaction_id, status="cancelled"))
            return False
        self.history[:] = result.messages
        self.session.conversation.context_tokens = 0
        if visible:
            summary: list[ContentBlock] = [TextContent(text=result.summary)]
            await self.client.update(CompactionUpdate(compaction_id=compaction_id, status="completed", summary=summary))
        else:
            await self.say(f"\n\n_Context compacted: {result.removed} earlier messages were summarised._\n\n")
        return True

    # ---- tools --------------------------------------------------------------------------------

    def add_tool_result(self, call_id: str, output: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Answer a tool call; returns the images of the result, which the tool message cannot carry."""
        if isinstance(output, str):
            self.history.append({"role": "tool", "tool_call_id": call_id, "content": output})
            return []
        images = [part for part in output if part.get("type") == "image_url"]
        text = "\n".join(str(part.get("text", "")) for part in output if part.get("type") == "text")
        if images:
            text += f"\n[{len(images)} image(s) in the next message]"
        self.history.append({"role": "tool", "tool_call_id": call_id, "content": text.strip() or "(no output)"})
        return images

    def repeating(self, call: ToolCallRequest, result: ToolResult) -> bool:
        fingerprint = hashlib.sha256(f"{call.name}\0{call.arguments}\0{result.text()}".encode()).hexdigest()
        self.recent_calls.append(fingerprint)
        last = self.recent_calls[-DOOM_LOOP_REPEATS:]
        return len(last) == DOOM_LOOP_REPEATS and len(set(last)) == 1

    def repair_history(self) -> None:
        """After a cancel or failure: keep text the user saw, answer every tool call left without a result."""
        if self.streamed:
            self.history.append({"role": "assistant", "content": "".join(self.streamed) + "\n[interrupted]"})
            self.streamed.clear()
        answered = {m.get("tool_call_id") for m in self.history if m.get("role") == "tool"}
        for index in range(len(self.history) - 1, -1, -1):
            message = self.history[index]
            if message.get("role") == "assistant" and message.get("tool_calls"):
                missing = [c["id"] for c in message["tool_calls"] if c["id"] not in answered]
                position = index + 1
                while position < len(self.history) and self.history[position].get("role") == "tool":
                    position += 1
                for call_id in missing:
                    self.history.insert(
                        position, {"role": "tool", "tool_call_id": call_id, "content": CANCELLED_TOOL_RESULT}
                    )
                    position += 1
                break


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _has_images(prompt: Sequence[ContentBlock]) -> bool:
    def is_image(block: ContentBlock) -> bool:
        if isinstance(block, ImageContent):
            return True
        mime = block.resource.mime_type if isinstance(block, EmbeddedResource) else None
        return (mime or "").startswith("image/")

    return any(is_image(block) for block in prompt)
