"""`Turn`: one prompt's model ↔ tools loop.

The prompt becomes a user message (after an environment update, when something changed: see
`agent.system_prompt`); the model streams its answer (text as `agent_message_chunk`, reasoning as
`agent_thought_chunk`); tool calls go to the turn's `ToolSet` and their results back to the model; this
repeats until the model stops asking for tools or a limit is hit. Every request starts with the same
bytes as the one before it: the conversation's fixed system prompt, the tools in a fixed order (built-ins,
then MCP tools by name), the history. The model is metered (`agent.metering`): after every call the client
gets a `usage_update` when the provider's usage report arrives, which the turn awaits in the background, so
the next tool call does not wait for it; before the turn ends it waits for the reports still on their way (at
most `USAGE_WAIT`, the tail of the last answer's stream), so the prompt's response carries the turn's whole
usage. Near the context window, and when the provider says the request no longer fits, older turns are
compacted into a summary.

A turn that changed files and ends without having checked them may get one follow-up first (`agent.finish_check`).

A message the user sends while the turn runs (`_session/steering`: `session.steering`) reaches the model at
its next request: after the tool calls of the answer before, as a user message shown in its place; a turn that
would end with one waiting carries on with it. A cancel leaves what waits out of the conversation.

A turn sees its session only through its `TurnContext`. The history stays valid whatever happens: a cancel
or a failure mid-turn keeps the streamed text and answers every pending tool call, so the next prompt can
carry on. A call whose permission no one could give (a run without a terminal) stops the turn, and the model
is told so; `resume` runs such calls once the user allows them, and the turn goes on. A sub-agent's run is a turn
too (`run_task`), on a context of its own; the `task` calls of one reply run side by side. The session's hooks
(`session.hooks`) run at the first turn's start (`session_start`) and at each turn's end (`turn_end`).
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio

from coder_agent.agent import call_groups, finish_check, system_prompt
from coder_agent.agent.compaction import compact_session
from coder_agent.agent.metering import MeteredModel
from coder_agent.agent.user_message import shown_blocks, to_user_message
from coder_agent.errors import AuthRequired, InvalidParams, ModelUnavailable
from coder_agent.model.base import (
    ContextWindowExceeded,
    Message,
    ModelAuthError,
    ModelError,
    ModelTurn,
    Spend,
    StreamCut,
    StreamSink,
    ToolCallRequest,
)
from coder_agent.protocol.content import ContentBlock, EmbeddedResource, ImageContent, TextContent
from coder_agent.protocol.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    StopReason,
    UserMessageChunk,
    new_message_id,
)
from coder_agent.session.telemetry import tracing
from coder_agent.session.turn_context import TurnContext
from coder_agent.tools.calls import LEAVING_NEEDS_PERMISSION, StoppedForPermission, ToolResult, ToolSet, TurnCancelled

log = logging.getLogger(__name__)

USAGE_WAIT = 3.0
"""The longest a turn's end waits for usage reports still on their way (they come right after the answer)."""
DOOM_LOOP_REPEATS = 3
"""Identical tool call + identical result this many times in a row stops the turn."""

TOOL_IMAGES_NOTE = "Images returned by the tool calls above:"
CANCELLED_TOOL_RESULT = "The user cancelled the turn before this tool call ran."
WAITING_FOR_ANSWER = "Not run: the turn ended to wait for the user's answer to your question."
NEEDS_PERMISSION = (
    "Not run: this call needs the user's permission, and no one could be asked (the agent runs without a terminal "
    "or an editor to ask on). The turn stops here; once the user allows it, the call runs and the turn goes on."
)
NOT_RUN_AFTER_STOP = "Not run: the turn stopped at an earlier call that needs the user's permission."
STOPPED_RESULTS = (NEEDS_PERMISSION, NOT_RUN_AFTER_STOP)


class Turn:
    """The state of one running prompt turn."""

    def __init__(self, ctx: TurnContext, model: MeteredModel, tools: ToolSet) -> None:
        self.ctx = ctx
        self.conversation = ctx.conversation
        self.client = ctx.bridge
        self.config = ctx.config
        self.model = model
        self.tools = tools
        self.streamed: list[str] = []  # text shown to the user during the model call in flight
        self.recent_calls: list[str] = []
        self.bills: list[anyio.Event] = []  # set as each call's usage report is counted
        self.reply_id = new_message_id()
        """The `messageId` of the model's answer (and, apart, of its thoughts) in the call in flight."""
        self.thought_id = new_message_id()
        self.looped = False
        """The turn stopped because the model kept making the same call with the same result."""
        self.finish_check = finish_check.FinishCheck(ctx, tools)

    @property
    def history(self) -> list[Message]:
        """The conversation the model sees (read it here; it changes through `self.conversation`)."""
        return self.conversation.messages

    async def run(self, prompt: Sequence[ContentBlock], user_message_id: str) -> StopReason:
        """The turn of `prompt`, whose user message (recorded by the caller) has the id `user_message_id`; traced
        when telemetry is on."""
        text = " ".join(block.text for block in prompt if isinstance(block, TextContent))
        return await self.traced(text, lambda: self._run(prompt, user_message_id))

    async def traced(self, prompt: str | None, turn: Callable[[], Awaitable[StopReason]]) -> StopReason:
        """Run `turn` inside the turn's trace (when telemetry is on: `session.telemetry`)."""
        telemetry = self.ctx.telemetry
        if telemetry is None:
            return await turn()
        trace = telemetry.turn(self.ctx.session_id, self.ctx.policy.mode, self.config.model, prompt)
        stop_reason: str = "error"
        with tracing(trace):
            try:
                stop_reason = await turn()
            except anyio.get_cancelled_exc_class():
                stop_reason = "cancelled"
                raise
            finally:
                trace.end(stop_reason)
        return stop_reason

    async def _run(self, prompt: Sequence[ContentBlock], user_message_id: str) -> StopReason:
        await self.client.turn_starting()
        if self.ctx.hooks is not None:
            await self.ctx.hooks.session_start(self.config.model)
        user = to_user_message(prompt, images=await self.model.accepts_images() if _has_images(prompt) else None)
        for note in user.notes:
            await self.say(f"_{note}_\n\n")
        _, update = await system_prompt.begin_turn(self.ctx)
        if update is not None:
            self.conversation.append(update)
        turn_start = len(self.history)
        self.conversation.append(user.message)
        self.ctx.checkpoints.begin_turn(f"turn_{uuid.uuid4().hex[:12]}")
        self.mark(user_message_id)
        self.ctx.save_soon()  # the prompt survives a kill while the model answers
        steering = self.ctx.steering
        steering.open()
        try:
            stop_reason = await self.loop(turn_start)
        except BaseException as exc:  # a failure or a cancel: save what is left now, there is no answer to wait for
            steering.close("cancelled" if isinstance(exc, anyio.get_cancelled_exc_class()) else "ended")
            self.finish_turn()
            self.ctx.save_soon()
            raise
        steering.close("cancelled" if stop_reason == "cancelled" else "ended")
        self.finish_turn()
        await self.bills_in()
        await self.ended(stop_reason)
        self.ctx.after_response(self._save)  # the answer does not wait on the disk (aclose flushes)
        return stop_reason

    async def ended(self, stop_reason: StopReason) -> None:
        """The turn ended (not cancelled or failed): the `turn_end` hooks."""
        if self.ctx.hooks is not None:
            await self.ctx.hooks.turn_end(stop_reason, self.last_answer)

    async def run_task(self, task: str) -> StopReason:
        """A sub-agent's whole run: its task is the first message, and the loop goes until it answers (no undo
        checkpoint of its own: its edits belong to its parent's turn)."""
        self.conversation.append({"role": "user", "content": task})
        try:
            return await self.loop(0)
        finally:
            self.repair_history()

    @property
    def last_answer(self) -> str:
        """The text of the model's last message (a sub-agent's answer)."""
        for message in reversed(self.history):
            if message.get("role") == "assistant":
                return str(message.get("content") or "").strip()
        return ""

    def finish_turn(self) -> None:
        self.repair_history()
        self.ctx.checkpoints.end_turn()

    async def loop(self, turn_start: int) -> StopReason:
        compacted_for_overflow = False
        for _ in range(self.config.max_turn_requests):
            await self.maybe_compact()
            await self.take_steering()
            try:
                turn = await self.call_model()
            except ContextWindowExceeded as exc:
                if compacted_for_overflow or not await self.compact_now():
                    await self.say(f"\n\n**The conversation no longer fits the model's context window:** {exc}\n")
                    return "end_turn"
                compacted_for_overflow = True
                continue
            except StreamCut as exc:
                self.streamed.clear()
                self.conversation.append(exc.partial.message)
                self.mark(self.reply_id, self.thought_id)
                await self.say(f"\n\n**{exc}** The partial answer above is kept; send a message to continue.\n")
                return "end_turn"
            except ModelAuthError as exc:
                raise AuthRequired(f"The model provider rejected the credentials: {exc}") from None
            except ModelError as exc:
                raise ModelUnavailable(f"The model call failed: {exc}") from None
            compacted_for_overflow = False
            self.conversation.append(turn.message)
            self.mark(self.reply_id, self.thought_id)
            self.settle(turn)
            self.ctx.save_soon()
            if turn.finish_reason == "content_filter":
                self.conversation.cut(turn_start)
                await self.say("\n\n_The model declined to answer (content filter)._\n")
                return "refusal"
            if turn.finish_reason == "length":
                for call in turn.tool_calls:
                    self.add_tool_result(call.id, "Not run: the model's output was cut at max_tokens.")
                return "max_tokens"
            if not turn.tool_calls:
                if (follow_up := self.finish_check.follow_up()) is not None:  # files changed, nothing checked them
                    await self.say(f"\n\n{finish_check.NOTE}\n\n")
                    self.conversation.append({"role": "user", "content": follow_up})
                    continue
                if self.ctx.steering.close_unless_waiting():
                    return "end_turn"
                continue  # the user said more meanwhile: the model answers that too
            stopped = await self.run_calls(turn.tool_calls)
            if stopped == "end_turn" and not self.ctx.steering.close_unless_waiting():
                continue  # the turn would end here, but the user said more meanwhile
            if stopped is not None:
                return stopped
        await self.say(
            f"\n\n**Stopped after {self.config.max_turn_requests} model requests** (the `max_turn_requests` limit). "
            "Send a message to let it continue.\n"
        )
        return "max_turn_requests"

    async def resume(self) -> StopReason:
        """Go on from a turn that stopped at a call no one could permit: run its stopped calls now (asking again,
        under the policy as it is now), then let the model go on. InvalidParams if the session did not stop so."""
        return await self.traced(None, self._resume)

    async def _resume(self) -> StopReason:
        calls = stopped_calls(self.history)
        if not calls:
            raise InvalidParams(
                "The session did not stop at a call that needs permission, so there is nothing to go on with: "
                "give a prompt."
            )
        self.conversation.reopen_calls({call.id for call in calls})
        if self.ctx.hooks is not None:
            await self.ctx.hooks.session_start(self.config.model)
        self.ctx.checkpoints.begin_turn(f"turn_{uuid.uuid4().hex[:12]}")
        turn_start = len(self.history)
        try:
            stop_reason = await self.run_calls(calls)
            if stop_reason is None:
                _, update = await system_prompt.begin_turn(self.ctx)  # the mode may be another one now
                if update is not None:
                    self.conversation.append(update)
                stop_reason = await self.loop(turn_start)
        except BaseException:
            self.finish_turn()
            self.ctx.save_soon()
            raise
        self.finish_turn()
        await self.ended(stop_reason)
        self.ctx.after_response(self._save)
        return stop_reason

    async def run_calls(self, calls: Sequence[ToolCallRequest]) -> StopReason | None:
        """Run the model's tool calls and answer each, in the model's order; consecutive `task` calls, and
        consecutive read-only calls, run side by side (`agent.call_groups`). The stop reason if the turn ends with
        them."""
        images: list[dict[str, Any]] = []
        waiting = False  # for the user's answer to a question: the turn ends after this batch
        done = 0
        for group in call_groups.groups(calls, self.tools):
            if waiting:
                for call in group.calls:
                    self.add_tool_result(call.id, WAITING_FOR_ANSWER)
                continue
            outcomes = await call_groups.run_group(group, self.tools)
            done += len(group.calls)
            for index, (call, outcome) in enumerate(zip(group.calls, outcomes, strict=True)):
                if isinstance(outcome, StoppedForPermission):
                    self.stop_for_permission(list(zip(group.calls, outcomes, strict=True))[index:], calls[done:])
                    return "cancelled"
                if isinstance(outcome, TurnCancelled):
                    return "cancelled"
                images += self.add_tool_result(call.id, outcome.output)
                self.finish_check.saw(call, outcome)
                self.ctx.save_soon()
                waiting = waiting or outcome.ends_turn
                if self.repeating(call, outcome):
                    self.looped = True
                    await self.say(
                        f"\n\n**Stopped:** the model made the same `{call.name}` call with the same result "
                        f"{DOOM_LOOP_REPEATS} times in a row. Rephrase the request or give it a hint.\n"
                    )
                    return "end_turn"
        if images:  # tool messages carry text only: images follow in a user message
            self.conversation.append({"role": "user", "content": [_text_part(TOOL_IMAGES_NOTE), *images]})
        if (note := system_prompt.jobs_note(self.ctx)) is not None:  # background jobs that ended meanwhile
            self.conversation.append(note)
        return "end_turn" if waiting else None

    def stop_for_permission(
        self, stopped_and_after: list[tuple[ToolCallRequest, call_groups.Outcome]], later: Sequence[ToolCallRequest]
    ) -> None:
        """Answer the call that stopped for want of permission, the others of its group and the calls after them.
        A read beside it that finished keeps its result, answered first: the stopped calls' answers end the
        history, where `resume` finds them and takes them back."""
        finished = [(call, outcome) for call, outcome in stopped_and_after if isinstance(outcome, ToolResult)]
        for call, result in finished:
            self.add_tool_result(call.id, result.output)
        for call, outcome in stopped_and_after:
            if isinstance(outcome, StoppedForPermission):
                self.add_tool_result(call.id, outcome.for_model or NEEDS_PERMISSION)
            elif not isinstance(outcome, ToolResult):
                self.add_tool_result(call.id, NOT_RUN_AFTER_STOP)
        for call in later:
            self.add_tool_result(call.id, NOT_RUN_AFTER_STOP)

    # ---- model --------------------------------------------------------------------------------

    async def call_model(self) -> ModelTurn:
        self.streamed.clear()
        self.reply_id, self.thought_id = new_message_id(), new_message_id()
        system = await system_prompt.current_system_message(self.ctx)
        sink = StreamSink(on_text=self.on_text, on_thought=self.on_thought, on_retry=self.on_retry)
        turn = await self.model.stream([system, *self.history], self.tool_specs(), sink)
        self.streamed.clear()
        return turn

    async def on_text(self, text: str) -> None:
        self.streamed.append(text)
        await self.client.update(AgentMessageChunk(content=TextContent(text=text), message_id=self.reply_id))

    async def on_thought(self, text: str) -> None:
        await self.client.update(AgentThoughtChunk(content=TextContent(text=text), message_id=self.thought_id))

    async def on_retry(self, note: str) -> None:
        await self.client.notice("warning", "The model call failed; retrying", note)

    async def say(self, text: str) -> None:
        """A message from the agent itself (not the model), with an id of its own; shown, not added to the history."""
        await self.client.update(AgentMessageChunk(content=TextContent(text=text), message_id=new_message_id()))

    def mark(self, *message_ids: str) -> None:
        """These messages are complete: those the client was shown end where the history is now (a fork at one
        keeps all of it)."""
        for message_id in message_ids:
            if message_id in self.conversation.marks:
                self.conversation.mark(message_id, self.ctx.checkpoints.current_turn)

    def tool_specs(self) -> list[dict[str, Any]]:
        """The tools in a fixed order (the registry's: the built-ins as listed, then MCP tools by name)."""
        return self.tools.specs()

    async def system_message(self) -> Message:
        return await system_prompt.current_system_message(self.ctx)

    def settle(self, turn: ModelTurn) -> None:
        """Have the call's usage report counted when it arrives (`agent.metering`), beside the turn: the tools
        the model asked for run meanwhile, and the end of the turn waits for it (`bills_in`)."""
        settle = turn.settle
        if settle is None:
            return
        counted = anyio.Event()
        self.bills.append(counted)
        self.ctx.tasks.start_soon(self._settle, settle, counted)

    async def bills_in(self) -> None:
        """Wait for the usage reports still on their way, at most `USAGE_WAIT` (a late one is still counted)."""
        with anyio.move_on_after(USAGE_WAIT):
            for counted in self.bills:
                await counted.wait()

    async def _save(self) -> None:
        self.ctx.save_soon()

    async def _settle(self, settle: Callable[[], Awaitable[Spend]], counted: anyio.Event) -> None:
        try:
            await settle()
        except Exception:
            session = self.ctx.session_id
            log.warning("session %s: the usage of a model call could not be reported", session, exc_info=True)
            return
        finally:
            counted.set()
        self.ctx.save_soon()

    async def take_steering(self) -> None:
        """Put the messages the user sent meanwhile into the conversation, each shown as a user message here."""
        for steer in self.ctx.steering.take():
            prompt = steer.prompt
            user = to_user_message(prompt, images=await self.model.accepts_images() if _has_images(prompt) else None)
            self.conversation.append(user.message)
            for block in shown_blocks(prompt):
                await self.client.update(UserMessageChunk(content=block, message_id=steer.message_id))
            self.mark(steer.message_id)
            steer.settle("taken")
            for note in user.notes:
                await self.say(f"_{note}_\n\n")

    # ---- compaction ---------------------------------------------------------------------------

    async def maybe_compact(self) -> None:
        if not self.ctx.auto_compact:
            return
        used = self.conversation.context_tokens
        if used and used >= self.config.compact_threshold * await self.model.context_window():
            await self.compact_now()

    async def compact_now(self, focus: str | None = None) -> bool:
        """Summarise the older history; tell the user. False if there was nothing to compact."""
        return await compact_session(self.ctx, self.model.side_calls(), focus, self.on_retry)

    # ---- tools --------------------------------------------------------------------------------

    def add_tool_result(self, call_id: str, output: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Answer a tool call; returns the images of the result, which the tool message cannot carry."""
        if isinstance(output, str):
            self.conversation.append({"role": "tool", "tool_call_id": call_id, "content": output})
            return []
        images = [part for part in output if part.get("type") == "image_url"]
        text = "\n".join(str(part.get("text", "")) for part in output if part.get("type") == "text")
        if images:
            text += f"\n[{len(images)} image(s) in the next message]"
        self.conversation.append({"role": "tool", "tool_call_id": call_id, "content": text.strip() or "(no output)"})
        return images

    def repeating(self, call: ToolCallRequest, result: ToolResult) -> bool:
        fingerprint = hashlib.sha256(f"{call.name}\0{call.arguments}\0{result.text()}".encode()).hexdigest()
        self.recent_calls.append(fingerprint)
        last = self.recent_calls[-DOOM_LOOP_REPEATS:]
        return len(last) == DOOM_LOOP_REPEATS and len(set(last)) == 1

    def repair_history(self) -> None:
        """After a cancel or failure: keep text the user saw, answer every tool call left without a result."""
        if self.streamed:
            self.conversation.append({"role": "assistant", "content": "".join(self.streamed) + "\n[interrupted]"})
            self.streamed.clear()
            self.mark(self.reply_id, self.thought_id)
        self.conversation.answer_pending(CANCELLED_TOOL_RESULT)


def stopped_calls(history: Sequence[Message]) -> list[ToolCallRequest]:
    """The calls a turn stopped at for want of permission (and those after them), if that is how the history ends."""
    stopped: dict[str, bool] = {}
    for message in reversed(history):
        if message.get("role") != "tool":
            if message.get("role") != "assistant" or not stopped:
                return []
            calls = message.get("tool_calls") or []
            return [
                ToolCallRequest(call["id"], call["function"]["name"], call["function"].get("arguments") or "")
                for call in calls
                if stopped.get(call.get("id"))
            ]
        content = message.get("content")
        stopped[str(message.get("tool_call_id"))] = content in STOPPED_RESULTS or (
            isinstance(content, str) and content.startswith(LEAVING_NEEDS_PERMISSION)
        )
    return []


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _has_images(prompt: Sequence[ContentBlock]) -> bool:
    def is_image(block: ContentBlock) -> bool:
        if isinstance(block, ImageContent):
            return True
        mime = block.resource.mime_type if isinstance(block, EmbeddedResource) else None
        return (mime or "").startswith("image/")

    return any(is_image(block) for block in prompt)
