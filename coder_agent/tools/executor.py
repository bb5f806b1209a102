"""`SessionTools`: how every tool call of a session's turn is shown, permitted, run and reported.

One call goes: parse the arguments → `tool_call` (pending, kind, title, rawInput) → prepare (check paths,
compute the diff; a failing edit fails here, before anyone is asked) → `tool_call_update` with locations
and content → the permission policy (deny, allow, or `session/request_permission` with the diff) →
`in_progress` → run → `completed` or `failed` with content. Every failure becomes a result the model
reads; only a user's cancel from the permission prompt ends the turn. Paths are resolved and contained
here (`path`), once: the tool acts on the place that was checked, and refuses to write if a symlink was
swapped in since. The values of model keys are redacted from everything shown, stored or returned. The
tools are the built-in ones (`tools.builtin`) and the session's MCP servers' (`tools.mcp_tools`).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import anyio
from pydantic import ValidationError

from coder_agent import secrets
from coder_agent.acp.presentation import permission_options
from coder_agent.checkpoints import CheckpointError
from coder_agent.errors import ClientError
from coder_agent.model.base import ToolCallRequest
from coder_agent.permissions import Action, PermissionPolicy, Place, analyse, offer, resolve, still_there
from coder_agent.protocol.content import PlanEntry, TextContent, ToolCallContent, ToolKind
from coder_agent.protocol.schema import AgentMessageChunk, PlanUpdate, ToolCallStart, ToolCallUpdate
from coder_agent.session.replay import replace_content
from coder_agent.session.session import Session
from coder_agent.tools.base import (
    Prepared,
    Tool,
    ToolError,
    ToolResult,
    TurnCancelled,
    describe_validation,
    text_content,
)
from coder_agent.tools.builtin import BUILTIN_NAMES, PLAN_TOOL, TOOLS, PlanParams, builtin_specs
from coder_agent.tools.file_view import content_hash
from coder_agent.tools.files import FileAccess

log = logging.getLogger(__name__)


class SessionTools:
    """The `ToolSet` of a session's turn: the built-in tools, shown and permitted through the client."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.client = session.client
        self.policy: PermissionPolicy = session.permissions
        self.files = FileAccess(session.client)
        self._call_id = ""

    @property
    def tools(self) -> dict[str, Tool]:
        """The built-in tools, then the MCP servers' (asked again each time: their list can change)."""
        tools: dict[str, Tool] = {tool.name: tool for tool in TOOLS}
        hub = self.session.mcp_hub
        if hub is not None:
            from coder_agent.tools.mcp_tools import McpToolCall

            tools.update({t.qualified_name: McpToolCall(t, hub) for t in hub.tools() if t.qualified_name not in tools})
        return tools

    def specs(self) -> list[dict[str, Any]]:
        hub = self.session.mcp_hub
        if hub is None:
            return builtin_specs()
        from coder_agent.tools.mcp_tools import McpToolCall

        extra = [McpToolCall(t, hub).spec() for t in hub.tools() if t.qualified_name not in BUILTIN_NAMES]
        return [*builtin_specs(), *extra]

    async def run(self, call: ToolCallRequest) -> ToolResult:
        if call.name == PLAN_TOOL:
            return await self._update_plan(call)
        self._call_id = call.id
        try:
            result = await self._run(call)
            return ToolResult(secrets.redact_data(result.output), failed=result.failed)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True), anyio.move_on_after(2):
                await self._update(status="failed", content=[text_content("Cancelled by the user.")])
            raise

    async def _run(self, call: ToolCallRequest) -> ToolResult:
        tool = self.tools.get(call.name)
        raw_input = _raw_input(call.arguments)
        if tool is None:
            await self._start(call.id, f"Unknown tool {call.name}", "other", raw_input)
            return await self._fail(f"There is no tool named {call.name!r}. Use one of: {', '.join(self._names())}.")
        try:
            params = tool.parse(call.arguments)
        except ToolError as exc:
            await self._start(call.id, tool.name, tool.kind, raw_input)
            return await self._fail(str(exc))
        await self._start(call.id, tool.title(params, self), tool.kind, raw_input)
        try:
            prepared = await tool.prepare(params, self)
        except ToolError as exc:
            return await self._fail(str(exc))
        await self._update(title=prepared.title, locations=prepared.locations, content=prepared.preview or None)
        refusal = await self._permit(prepared, raw_input)
        if refusal is not None:
            return await self._fail(refusal)
        await self._update(status="in_progress")
        try:
            outcome = await prepared.run()
        except ToolError as exc:
            return await self._fail(str(exc))
        await self._update(status="failed" if outcome.failed else "completed", content=outcome.display or None)
        if outcome.replay is not None:
            replace_content(self.session.events, call.id, secrets.redact_data([c.wire() for c in outcome.replay]))
        return ToolResult(outcome.output, failed=outcome.failed)

    # ---- helpers for the tools ----------------------------------------------------------------

    def path(self, raw: str | Path) -> Place:
        """Where `raw` really lies (symlinks and `..` resolved), held against the session's roots."""
        return resolve(raw, self.session.roots)

    def display(self, path: Path) -> str:
        cwd = self.session.cwd
        return path.relative_to(cwd).as_posix() if path.is_relative_to(cwd) and path != cwd else str(path)

    def action(self, kind: ToolKind, place: Place) -> Action:
        return Action(kind, places=(place,))

    def command_action(self, command: str) -> Action:
        """A command line, parsed, with the files it visibly writes resolved against the roots."""
        line = analyse(command)
        writes = {target for c in line.commands for target in c.writes if target}
        return Action("execute", command=line, writes=tuple(self.path(target) for target in sorted(writes)))

    def still_there(self, place: Place) -> None:
        """Refuse to act if the path no longer resolves to what was checked (a symlink swapped in since)."""
        if not still_there(place):
            raise ToolError(f"{place.path} changed since it was checked (it now leads elsewhere); nothing was done.")

    def remember(self, path: Path, text: str) -> None:
        self.session.file_hashes[str(path)] = content_hash(text)

    def check_fresh(self, path: Path, text: str, verb: str) -> None:
        """Refuse to change a file the model has not read, or that changed since it did."""
        known = self.session.file_hashes.get(str(path))
        if known is None:
            raise ToolError(f"Read {path} with read_file before you {verb} it.")
        if known != content_hash(text):
            raise ToolError(
                f"{path} has changed since you last read it (edited by the user or another program). "
                "Read it again, then make your change against the current text."
            )

    async def check_unchanged(self, path: Path, expected: str | None) -> None:
        """Refuse to write if the file changed while the user was being asked."""
        current = await self.files.read_text(path) if await self.files.exists(path) else None
        if current != expected:
            raise ToolError(f"{path} changed while waiting for permission; read it again and redo the change.")

    async def write(self, place: Place, old: str | None, new: str) -> None:
        """Write a file the model changed: re-check it, snapshot it for /undo, write, remember the new text."""
        self.still_there(place)
        path = place.path
        await self.check_unchanged(path, old)
        checkpoints = self.session.checkpoints
        try:
            await checkpoints.before_change(path, old)
        except CheckpointError as exc:
            log.warning("no undo snapshot of %s: %s", path, exc)
        await self.files.write_text(path, new)
        checkpoints.after_change(path, new)
        self.remember(path, new)

    async def progress(self, content: list[ToolCallContent]) -> None:
        await self._update(content=list(content))

    # ---- the call's lifecycle -----------------------------------------------------------------

    def _names(self) -> list[str]:
        return [*self.tools, PLAN_TOOL]

    async def _start(self, call_id: str, title: str, kind: ToolKind, raw_input: Any) -> None:
        title, raw_input = secrets.redact(title), secrets.redact_data(raw_input)
        await self.client.update(
            ToolCallStart(tool_call_id=call_id, title=title, kind=kind, status="pending", raw_input=raw_input)
        )

    async def _update(self, **fields: Any) -> None:
        await self.client.update(_redacted(ToolCallUpdate(tool_call_id=self._call_id, **fields)))

    async def _fail(self, message: str) -> ToolResult:
        with anyio.CancelScope(shield=True):
            await self._update(status="failed", content=[text_content(message)])
        return ToolResult(message, failed=True)

    async def _permit(self, prepared: Prepared, raw_input: Any) -> str | None:
        """None if the call may run; else why not (for the model). Raises TurnCancelled on a cancel.

        The request shows the whole call: its full arguments (`rawInput`), the preview (the diff, the whole
        command line), and why it asks when the reason is not simply the mode.
        """
        action = prepared.action
        verdict = self.policy.decide(action)
        if verdict.decision == "allow":
            return None
        if verdict.decision == "deny":
            return f"Not allowed: {verdict.reason}. Do not retry this; tell the user or find another way."
        content = list(prepared.preview)
        if not verdict.reason.endswith("asks in this mode"):
            content.append(text_content(f"Asking because {verdict.reason}."))
        request = ToolCallUpdate(
            tool_call_id=self._call_id,
            title=prepared.title,
            kind=action.kind,
            status="pending",
            content=content or None,
            locations=prepared.locations or None,
            raw_input=raw_input,
        )
        choices = offer(self.policy, action)
        try:
            outcome = await self.client.request_permission(_redacted(request), permission_options(choices.choices()))
        except ClientError as exc:
            return f"The permission request failed ({exc.message}); the call was not run."
        if outcome.outcome == "cancelled" or outcome.option_id is None:
            await self._fail("Cancelled by the user.")
            raise TurnCancelled
        rules = choices.rules(outcome.option_id)
        if rules:
            allow = outcome.option_id == "allow_always"
            added = self.policy.remember(rules, allow=allow)
            listed = ", ".join(f"`{rule}`" for rule in added)
            log.info("session %s remembers %s (%s)", self.session.id, listed, outcome.option_id)
            section = "allow" if allow else "deny"
            quoted = ", ".join(json.dumps(str(rule)) for rule in added)
            if added:
                await self.client.update(
                    AgentMessageChunk(
                        content=TextContent(
                            text=secrets.redact(
                                f"\n\n_Remembered for this session: {section} {listed}. To keep it, add "
                                f"`{quoted}` to `permissions.{section}` in your coder-agent config._\n\n"
                            )
                        )
                    )
                )
        if outcome.option_id.startswith("reject"):
            return (
                "The user rejected this call. Do not retry it; ask the user what they want instead, "
                "or take another approach."
            )
        return None

    async def _update_plan(self, call: ToolCallRequest) -> ToolResult:
        try:
            params = PlanParams.model_validate_json(call.arguments or "{}")
        except ValidationError as exc:
            return ToolResult(f"Invalid arguments for {PLAN_TOOL}: {describe_validation(exc)}", failed=True)
        entries = [PlanEntry(content=e.content, status=e.status, priority=e.priority) for e in params.entries]
        await self.client.update(PlanUpdate(entries=entries))
        done = sum(e.status == "completed" for e in params.entries)
        return ToolResult(f"Plan updated: {done} of {len(entries)} steps completed.")


def _redacted(update: ToolCallUpdate) -> ToolCallUpdate:
    """The update with key values redacted from every text it carries (a no-op when no key is set)."""
    if not secrets.secret_values():
        return update
    return ToolCallUpdate.model_validate(secrets.redact_data(update.model_dump(by_alias=True, exclude_none=True)))


def _raw_input(arguments: str) -> Any:
    try:
        return json.loads(arguments or "{}")
    except ValueError:
        return {"unparsed": arguments}
