"""`ToolExecutor`: how every tool call of a turn is shown, permitted, run and reported — and nothing else.

One call goes: parse the arguments → prepare (resolve and contain paths, compute the diff; a failing edit
fails here, before anyone is asked) → `tool_call` (pending, with the tool's name, kind, title, rawInput, and
what prepare found: locations, the diff or the whole command) → the `before_tool` hooks (one that fails blocks
the call) → the permission policy (deny, allow, or `session/request_permission` through the bridge) →
`in_progress` → run → `completed` or `failed` → the `after_edit` and `after_tool` hooks (`tools.call_hooks`).

Every update carries the call's status and only what changed. Every failure is a result: the user reads a short
sentence, the model may read more (why, and what to do instead); an unexpected error in a tool is logged
and becomes a failed result too. A call the user cancelled while it ran (a command the agent killed) gets its final
status at once, `failed` with "Cancelled." (a client that does not mark it itself would show it running forever);
one that had not started (it waited for permission) gets no status after the cancel, since the client marks it
cancelled itself and a later status would override that (Zed's "Canceled"); the replay ends both `failed`
"Cancelled.". A call that stopped the turn because no one could be asked its permission gets its status live too
(the turn's history says so to the model, and `Turn.resume` runs it later). Everything shown goes through the
session's redacting bridge; what the model reads back is redacted here (`ToolResult` output), its one boundary.
A call that runs beside others of its reply (`agent.call_groups`) is given `before_asking`, awaited before its
permission question, so questions come one at a time, in the model's order.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio

from coder_agent import secrets
from coder_agent.errors import CallFailed
from coder_agent.extensions import SKILLS_FACT
from coder_agent.model.base import ToolCallRequest
from coder_agent.permissions import ALLOWING, Choice, kind_of, offer
from coder_agent.protocol.content import TextContent, ToolCallContent, ToolCallLocation, ToolCallStatus, ToolKind
from coder_agent.protocol.schema import AgentMessageChunk, ToolCallStart, ToolCallUpdate, new_message_id
from coder_agent.session.bridge import LEAVES_SANDBOX_META, BridgeError, NoOneToAsk
from coder_agent.session.telemetry import ToolSpan, current_turn
from coder_agent.session.turn_context import TurnContext
from coder_agent.tools.call_hooks import after_call, call_facts
from coder_agent.tools.calls import (
    LEAVING_NEEDS_PERMISSION,
    REFUSED_BY_MODE,
    BeforeAsking,
    Prepared,
    StoppedForPermission,
    ToolResult,
    TurnCancelled,
    text_content,
)
from coder_agent.tools.context import AcceptsImages, ToolContext
from coder_agent.tools.registry import BUILTIN_NAMES, edit_tool_for, session_specs, session_tools
from coder_agent.tools.tool import Tool

log = logging.getLogger(__name__)

CANCELLED_UPDATE_TIMEOUT = 5.0
"""How long the final status of a cancelled call may take to send before the cancel goes on without it."""
REJECTED_FOR_MODEL = (
    "The user rejected this call. Do not retry it; ask the user what they want instead, or take another approach."
)


class ToolExecutor:
    """The `ToolSet` of a session's turns: its tools, shown and permitted through the session's bridge."""

    def __init__(
        self, ctx: TurnContext, accepts_images: AcceptsImages | None = None, only: frozenset[str] | None = None
    ) -> None:
        self.ctx = ctx
        self.accepts_images = accepts_images
        """Whether the turn's model takes images (a read_file of an image sends it only then)."""
        self.only = only
        """The built-in tools offered, when not all of them (a sub-agent's); MCP tools come with the context's hub."""

    def specs(self) -> list[dict[str, Any]]:
        skills = SKILLS_FACT in self.ctx.conversation.environment
        specs = session_specs(self.ctx.mcp, edit_tool_for(self.ctx.config), skills)
        return [spec for spec in specs if self._offers(spec["function"]["name"])]

    def parallel(self, name: str) -> bool:
        tool = session_tools(self.ctx.mcp).get(name)
        return tool is not None and tool.runs_in_parallel and self._offers(name)

    def read_only(self, name: str) -> bool:
        tool = session_tools(self.ctx.mcp).get(name)
        return tool is not None and tool.read_only and tool.announced and self._offers(name)

    def changes_files(self, name: str) -> bool:
        tool = session_tools(self.ctx.mcp).get(name)
        return name in BUILTIN_NAMES and tool is not None and tool.kind in ("edit", "delete", "move")

    def _offers(self, name: str) -> bool:
        return self.only is None or name in self.only or name not in BUILTIN_NAMES

    async def run(self, call: ToolCallRequest, before_asking: BeforeAsking | None = None) -> ToolResult:
        tools = {name: tool for name, tool in session_tools(self.ctx.mcp).items() if self._offers(name)}
        tool = tools.get(call.name)
        if tool is not None and not tool.announced:
            return await self._run_quietly(tool, call)
        return await self._run_shown(tools, tool, call, before_asking)

    async def run_tool(self, tool: Tool, call: ToolCallRequest) -> ToolResult:
        """Run a call of a tool the model does not have (an MCP server's sampling request), the same way."""
        return await self._run_shown({tool.name: tool}, tool, call)

    async def _run_shown(
        self,
        tools: dict[str, Tool],
        tool: Tool | None,
        call: ToolCallRequest,
        before_asking: BeforeAsking | None = None,
    ) -> ToolResult:
        shown = _Call(self.ctx, call.id, before_asking)
        trace = current_turn()
        span = None if trace is None else trace.tool_call(call.name, _kind(tool), call.id, _raw_input(call.arguments))
        try:
            result = await self._run(tools, tool, call, shown)
        except anyio.get_cancelled_exc_class():
            _ended(span, "cancelled", shown)
            await shown.cancelled()
            raise
        except StoppedForPermission as stopped:
            _ended(span, "cancelled", shown, "no one could be asked")
            why = "Not run outside the sandbox" if stopped.for_model else "Not run"
            await shown.cancelled(f"{why}: it needs permission, and no one could be asked.", live=True)
            raise
        except TurnCancelled:
            _ended(span, "cancelled", shown)
            await shown.cancelled()
            raise
        _ended(span, "failed" if result.failed else "completed", shown, output=result.text())
        return ToolResult(secrets.redact_data(result.output), failed=result.failed, ends_turn=result.ends_turn)

    async def _run(self, tools: dict[str, Tool], tool: Tool | None, call: ToolCallRequest, shown: _Call) -> ToolResult:
        raw_input = _raw_input(call.arguments)
        if tool is None:
            await shown.start(f"Unknown tool {call.name}", call.name, "other", raw_input)
            names = ", ".join(tools)
            return await shown.fail(f"There is no tool named {call.name!r}. Use one of: {names}.", "Unknown tool.")
        try:
            params = tool.parse(call.arguments)
        except CallFailed as exc:
            await shown.start(tool.name, tool.name, tool.kind, raw_input)
            return await shown.fail(str(exc), exc.shown)
        ctx = ToolContext(
            self.ctx,
            lambda content: shown.update(content=content),
            call.id,
            lambda why: self._ask_outside(shown, why),
            self.accepts_images,
            lambda content, choices: self._choose(shown, content, choices),
        )
        try:
            prepared = await tool.prepare(params, ctx)
        except CallFailed as exc:
            await shown.start(tool.title(params, ctx), tool.name, tool.kind, raw_input)
            return await shown.fail(str(exc), exc.shown)
        await shown.start(
            prepared.title, tool.name, tool.kind, raw_input, locations=prepared.locations, content=prepared.preview
        )
        hooks, facts = self.ctx.hooks, call_facts(tool, prepared, call.id, raw_input)
        if hooks is not None and (blocked := await hooks.before_tool(facts)) is not None:
            shown.permission = "blocked by a before_tool hook"
            return await shown.fail(blocked, "Blocked by a before_tool hook.")
        refusal = await self._permit(prepared, raw_input, shown)
        if refusal is not None:
            for_model, for_user, mode = refusal
            meta = {"coder-agent": {REFUSED_BY_MODE: mode}} if mode is not None else None
            return await shown.fail(for_model, for_user, meta)
        await shown.update(status="in_progress")
        try:
            outcome = await prepared.run()
        except CallFailed as exc:
            return await shown.fail(str(exc), exc.shown)
        except TurnCancelled:  # the user cancelled from a question the call asked
            raise
        except NoOneToAsk:  # a question the call asked that no one can answer: the turn stops at the call
            raise StoppedForPermission from None
        except Exception as exc:  # a tool's own bug or an unforeseen failure: the model reads it, the turn goes on
            log.exception("tool %s failed", tool.name)
            return await shown.fail(f"The tool failed unexpectedly: {exc}", "The tool failed unexpectedly.")
        status: ToolCallStatus = "failed" if outcome.failed else "completed"
        await shown.update(status=status, content=outcome.display or None)
        if outcome.replay is not None:  # what a reloaded session shows instead (a terminal is gone by then)
            self.ctx.bridge.record(ToolCallUpdate(tool_call_id=call.id, status=status, content=outcome.replay))
        result = ToolResult(outcome.output, failed=outcome.failed, ends_turn=outcome.ends_turn)
        return result if hooks is None else await after_call(hooks, facts, outcome, result)

    async def _run_quietly(self, tool: Tool, call: ToolCallRequest) -> ToolResult:
        """A tool that shows itself its own way (the plan): no tool call on the wire, no permission asked."""
        ctx = ToolContext(self.ctx, _nothing)
        try:
            prepared = await tool.prepare(tool.parse(call.arguments), ctx)
            outcome = await prepared.run()
        except CallFailed as exc:
            return ToolResult(str(exc), failed=True)
        return ToolResult(outcome.output, failed=outcome.failed)

    async def _permit(self, prepared: Prepared, raw_input: Any, shown: _Call) -> tuple[str, str, str | None] | None:
        """None if the call may run; else why not, for the model and for the user, and the mode when the mode alone
        refused it. TurnCancelled on a cancel.

        The request shows the whole call: its full arguments (`rawInput`), the preview (the diff, the whole
        command line), and why it asks when the reason is not simply the mode.
        """
        policy = self.ctx.policy
        action = prepared.action
        verdict = policy.decide(action)
        shown.permission = f"{'allowed' if verdict.decision == 'allow' else 'denied'}: {verdict.reason}"
        if verdict.decision == "allow":
            return None
        if verdict.decision == "deny":
            why = f"Not allowed: {verdict.reason}."
            return (
                f"{why} Do not retry this; tell the user or find another way.",
                why,
                policy.mode if verdict.by_mode else None,
            )
        if shown.before_asking is not None:  # a call running beside others asks in its turn
            await shown.before_asking()
        content = list(prepared.preview)
        if not verdict.by_mode:
            content.append(text_content(f"Asking because {verdict.reason}."))
        request = ToolCallUpdate(
            tool_call_id=shown.call_id,
            title=prepared.title,
            kind=action.kind,
            status="pending",
            content=content or None,
            locations=prepared.locations or None,
            raw_input=raw_input,
        )
        if action.outside_because is not None:
            request.meta = LEAVES_SANDBOX_META
        offered = offer(policy, action)
        choices = offered.choices()
        try:
            answer = await self.ctx.bridge.request_permission(request, choices)
        except BridgeError as exc:
            return str(exc), str(exc), None
        except NoOneToAsk:
            raise StoppedForPermission from None
        if answer is None:
            raise TurnCancelled
        kind = kind_of(choices, answer)  # the bridges map answers onto the choices; an id not offered rejects
        shown.permission = f"asked: {kind}"
        rules = offered.rules(kind)
        if rules:
            await self._remember(rules, allow=kind == "allow_always")
        if kind not in ALLOWING:
            return REJECTED_FOR_MODEL, "Rejected.", None
        return None

    async def _ask_outside(self, shown: _Call, why: str) -> bool:
        """Ask whether a command that seems to have hit the sandbox's walls may run again outside it (allow once or
        reject: no "always" leaves the sandbox). TurnCancelled on a cancel; StoppedForPermission when no one can be
        asked (the turn stops at the call, to run it outside once the user allows it)."""
        note = (
            f"It seems to have hit the sandbox's walls: {why}\n\nAllowed, it runs again outside the sandbox, with "
            "your account's rights."
        )
        choices = [Choice("allow_once", "Run it outside the sandbox"), Choice("reject_once", "Keep it inside")]
        try:
            answer = await self._choose(shown, [*shown.preview, text_content(note)], choices, LEAVES_SANDBOX_META)
        except BridgeError:
            return False
        except NoOneToAsk:
            raise StoppedForPermission(
                f"{LEAVING_NEEDS_PERMISSION} inside it, the command seems to have hit the sandbox's walls ({why}), and "
                "running it outside needs the user's permission, which no one could be asked for (the agent runs "
                "without a terminal or an editor to ask on). The turn stops here; once the user allows it, the "
                "command runs again outside the sandbox and the turn goes on."
            ) from None
        return answer == "allow_once"

    async def _choose(
        self,
        shown: _Call,
        content: list[ToolCallContent],
        choices: list[Choice],
        meta: dict[str, Any] | None = None,
    ) -> str:
        """Ask the user to pick one of `choices` about a running call, as a permission request showing `content`;
        the id picked (an answer that names none is a rejection). TurnCancelled on a cancel; BridgeError if the
        client failed to answer; NoOneToAsk when no one can."""
        request = ToolCallUpdate(
            tool_call_id=shown.call_id,
            title=shown.title,
            kind=shown.kind,
            status="pending",
            content=content,
            raw_input=shown.raw_input,
        )
        request.meta = meta
        running = shown.sent.get("status")
        shown.sent["status"] = "pending"  # the request shows the call waiting, as the client now does
        try:
            answer = await self.ctx.bridge.request_permission(request, choices)
        except (BridgeError, NoOneToAsk):
            shown.sent["status"] = running
            raise
        if answer is None:
            raise TurnCancelled
        await shown.update(status="in_progress")
        return answer

    async def _remember(self, rules: Any, *, allow: bool) -> None:
        added = self.ctx.policy.remember(rules, allow=allow)
        if not added:
            return
        listed = ", ".join(f"`{rule}`" for rule in added)
        section = "allow" if allow else "deny"
        log.info("session %s remembers %s (%s)", self.ctx.session_id, listed, section)
        quoted = ", ".join(json.dumps(str(rule)) for rule in added)
        text = (
            f"\n\n_Remembered for this session: {section} {listed}. To keep it, add "
            f"`{quoted}` to `permissions.{section}` in your coder-agent config._\n\n"
        )
        await self.ctx.bridge.update(AgentMessageChunk(content=TextContent(text=text), message_id=new_message_id()))


class _Call:
    """What the client has been shown of one call, so each update carries only what changed."""

    def __init__(self, ctx: TurnContext, call_id: str, before_asking: BeforeAsking | None = None) -> None:
        self.client = ctx.bridge
        self.call_id = call_id
        self.before_asking = before_asking
        self.sent: dict[str, Any] = {}
        self.title = ""
        self.kind: ToolKind = "other"
        self.raw_input: Any = None
        self.preview: list[ToolCallContent] = []
        self.permission = "not reached"
        """How its permission went, in words (for its telemetry span)."""

    async def start(
        self,
        title: str,
        name: str,
        kind: ToolKind,
        raw_input: Any,
        *,
        locations: list[ToolCallLocation] | None = None,
        content: list[ToolCallContent] | None = None,
    ) -> None:
        start = ToolCallStart(
            tool_call_id=self.call_id,
            title=title,
            name=name,
            kind=kind,
            status="pending",
            raw_input=raw_input,
            locations=locations or None,
            content=content or None,
        )
        self.sent = {"status": "pending", "content": content or None}
        self.title, self.kind, self.raw_input, self.preview = title, kind, raw_input, list(content or [])
        await self.client.update(start)

    async def update(self, **fields: Any) -> None:
        """Send what changed, always with the call's status (clients render a status-less update poorly)."""
        changed = {k: v for k, v in fields.items() if v is not None and self.sent.get(k) != v}
        if not changed:
            return
        self.sent.update(changed)
        status = self.sent["status"]
        await self.client.update(ToolCallUpdate(tool_call_id=self.call_id, **{"status": status, **changed}))

    async def fail(self, for_model: str, for_user: str, meta: dict[str, Any] | None = None) -> ToolResult:
        with anyio.CancelScope(shield=True):
            await self.update(status="failed", content=[text_content(for_user)], meta=meta)
        return ToolResult(for_model, failed=True)

    async def cancelled(self, why: str = "Cancelled.", *, live: bool = False) -> None:
        """The user cancelled (or no one could be asked): the call ends `failed` with `why`, replayed so; shown at
        once (bounded) if it was running or `live`, else only recorded (the client marks a call that never started
        cancelled itself, and a status sent after the cancel would override it)."""
        if self.sent and self.sent.get("status") not in ("completed", "failed"):
            note: list[ToolCallContent] = [text_content(why)]
            if not live and self.sent.get("status") != "in_progress":
                self.client.record(ToolCallUpdate(tool_call_id=self.call_id, status="failed", content=note))
                return
            with anyio.CancelScope(shield=True), anyio.move_on_after(CANCELLED_UPDATE_TIMEOUT):
                try:
                    await self.update(status="failed", content=note)
                except Exception as exc:  # the client is gone: the replay log has the status all the same
                    log.debug("the final status of cancelled call %s was not sent: %s", self.call_id, exc)


def _kind(tool: Tool | None) -> str:
    return tool.kind if tool is not None else "other"


def _ended(span: ToolSpan | None, status: str, shown: _Call, permission: str | None = None, output: str = "") -> None:
    """End a call's telemetry span (when telemetry is on)."""
    if span is not None:
        span.end(status, permission or shown.permission, output)


async def _nothing(content: list[ToolCallContent]) -> None:
    return None


def _raw_input(arguments: str) -> Any:
    try:
        return json.loads(arguments or "{}")
    except ValueError:
        return {"unparsed": arguments}
