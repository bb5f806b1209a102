"""`BuiltinTools`: the agent's own tools, and how every call is shown, permitted and run.

One call goes: parse the arguments → `tool_call` (pending, kind, title, rawInput) → prepare (check paths,
compute the diff; a failing edit fails here, before anyone is asked) → `tool_call_update` with locations
and content → the permission policy (deny, allow, or `session/request_permission` with the diff) →
`in_progress` → run → `completed` or `failed` with content. Every failure becomes a result the model
reads; only a user's cancel from the permission prompt ends the turn.

Model-facing names and arguments are a contract: read_file, write_file, edit_file, glob, grep,
run_command, fetch, update_plan. Their descriptions live in `prompts/tools/<name>.md`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol

import anyio
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from coder_agent import prompts
from coder_agent.acp.content import (
    ContentToolCallContent,
    DiffContent,
    PlanEntry,
    TerminalContent,
    TextContent,
    ToolCallContent,
    ToolCallLocation,
    ToolKind,
)
from coder_agent.acp.schema import AgentMessageChunk, PlanUpdate, ToolCallStart, ToolCallUpdate
from coder_agent.checkpoints import CheckpointError
from coder_agent.errors import ClientError
from coder_agent.model.types import ToolCallRequest
from coder_agent.permissions import Action, PermissionPolicy, is_inside, resolve_path
from coder_agent.persistence import replace_content
from coder_agent.session import Session
from coder_agent.tools import search, shell
from coder_agent.tools.base import ToolResult, TurnCancelled
from coder_agent.tools.file_view import content_hash, format_lines, truncate_middle
from coder_agent.tools.files import FileAccess, ToolError
from coder_agent.tools.text_edit import Edit, EditError, apply_edits

log = logging.getLogger(__name__)

MAX_COMMAND_OUTPUT_CHARS = 30_000
DEFAULT_COMMAND_TIMEOUT_MS = 120_000
MAX_COMMAND_TIMEOUT_MS = 600_000
MAX_LOCATIONS = 20


@dataclass
class Outcome:
    """A finished call: what the model reads, what the user sees, and whether it failed."""

    output: str | list[dict[str, Any]]
    display: list[ToolCallContent] = field(default_factory=list)
    failed: bool = False
    replay: list[ToolCallContent] | None = None
    """What a reloaded session shows instead of `display` (a terminal's output once the terminal is gone)."""


@dataclass
class Prepared:
    """A call that passed its checks, ready to be permitted and run."""

    action: Action
    title: str
    run: Callable[[], Awaitable[Outcome]]
    locations: list[ToolCallLocation] = field(default_factory=list)
    preview: list[ToolCallContent] = field(default_factory=list)


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Tool(Protocol):
    """What the executor needs of a tool: the built-in ones below, and MCP servers' (`tools.mcp_tools`)."""

    name: str
    kind: ToolKind

    def spec(self) -> dict[str, Any]: ...

    def parse(self, arguments: str) -> Any:
        """The call's arguments, checked; ToolError if they do not fit."""
        ...

    def title(self, params: Any, tools: BuiltinTools) -> str: ...

    async def prepare(self, params: Any, tools: BuiltinTools) -> Prepared: ...


class BuiltinTool:
    """One built-in tool: its name, kind and parameters, and how to prepare a call."""

    name: str
    kind: ToolKind
    params: ClassVar[type[Params]]

    def parse(self, arguments: str) -> Any:
        try:
            return self.params.model_validate_json(arguments or "{}")
        except ValidationError as exc:
            raise ToolError(f"Invalid arguments for {self.name}: {_describe(exc)}") from None

    def spec(self) -> dict[str, Any]:
        schema = _clean_schema(self.params.model_json_schema())
        return {
            "type": "function",
            "function": {"name": self.name, "description": prompts.load(f"tools/{self.name}.md"), "parameters": schema},
        }

    def title(self, params: Any, tools: BuiltinTools) -> str:
        return self.name

    async def prepare(self, params: Any, tools: BuiltinTools) -> Prepared:
        raise NotImplementedError


# ---- the tools ------------------------------------------------------------------------------------


class ReadParams(Params):
    path: str = Field(description="The file to read: absolute, or relative to the working directory.")
    offset: int | None = Field(default=None, ge=1, description="The first line to read (1-based).")
    limit: int | None = Field(default=None, ge=1, description="How many lines to read (default 2000).")


class ReadFile(BuiltinTool):
    name = "read_file"
    kind = "read"
    params = ReadParams

    def title(self, params: ReadParams, tools: BuiltinTools) -> str:
        where = tools.display(tools.path(params.path))
        if params.offset or params.limit:
            first = params.offset or 1
            return (
                f"Read {where} (from line {first})"
                if not params.limit
                else f"Read {where} ({first}–{first + params.limit - 1})"
            )
        return f"Read {where}"

    async def prepare(self, params: ReadParams, tools: BuiltinTools) -> Prepared:
        path = tools.path(params.path)

        async def run() -> Outcome:
            text = await tools.files.read_text(path)
            tools.remember(path, text)
            return Outcome(format_lines(text, params.offset or 1, params.limit))

        location = ToolCallLocation(path=str(path), line=params.offset or 1)
        return Prepared(tools.action("read", path), self.title(params, tools), run, [location])


class WriteParams(Params):
    path: str = Field(description="The file to create or overwrite: absolute, or relative to the working directory.")
    content: str = Field(description="The whole new content of the file.")


class WriteFile(BuiltinTool):
    name = "write_file"
    kind = "edit"
    params = WriteParams

    def title(self, params: WriteParams, tools: BuiltinTools) -> str:
        return f"Write {tools.display(tools.path(params.path))}"

    async def prepare(self, params: WriteParams, tools: BuiltinTools) -> Prepared:
        path = tools.path(params.path)
        old: str | None = None
        if await tools.files.exists(path):
            old = await tools.files.read_text(path)
            tools.check_fresh(path, old, "overwrite")
        diff = DiffContent(path=str(path), old_text=old, new_text=params.content)

        async def run() -> Outcome:
            await tools.write(path, old, params.content)
            lines = params.content.count("\n") + (0 if params.content.endswith("\n") or not params.content else 1)
            verb = "Created" if old is None else "Overwrote"
            return Outcome(f"{verb} {path} ({lines} lines).", [diff])

        return Prepared(
            tools.action("edit", path), self.title(params, tools), run, [ToolCallLocation(path=str(path))], [diff]
        )


class EditItem(Params):
    old_string: str = Field(description="The exact text to replace (unique in the file unless replace_all).")
    new_string: str = Field(description="The text to put in its place.")
    replace_all: bool = Field(default=False, description="Replace every occurrence of old_string.")


class EditParams(Params):
    path: str = Field(description="The file to edit: absolute, or relative to the working directory.")
    old_string: str | None = Field(default=None, description="The exact text to replace.")
    new_string: str | None = Field(default=None, description="The text to put in its place.")
    replace_all: bool = Field(default=False, description="Replace every occurrence of old_string.")
    edits: list[EditItem] | None = Field(
        default=None, description="Several edits to apply in order, all or none (instead of old_string/new_string)."
    )

    def to_edits(self) -> list[Edit]:
        edits = [Edit(e.old_string, e.new_string, e.replace_all) for e in self.edits or []]
        if self.old_string is not None or self.new_string is not None:
            if self.old_string is None or self.new_string is None:
                raise ToolError("Give both old_string and new_string (or an edits list).")
            edits.insert(0, Edit(self.old_string, self.new_string, self.replace_all))
        if not edits:
            raise ToolError("Nothing to do: give old_string and new_string, or an edits list.")
        return edits


class EditFile(BuiltinTool):
    name = "edit_file"
    kind = "edit"
    params = EditParams

    def title(self, params: EditParams, tools: BuiltinTools) -> str:
        return f"Edit {tools.display(tools.path(params.path))}"

    async def prepare(self, params: EditParams, tools: BuiltinTools) -> Prepared:
        path = tools.path(params.path)
        edits = params.to_edits()
        if not await tools.files.exists(path):
            raise ToolError(f"{path} does not exist. Use write_file to create a new file.")
        old = await tools.files.read_text(path)
        tools.check_fresh(path, old, "edit")
        try:
            result = apply_edits(old, edits)
        except EditError as exc:
            raise ToolError(str(exc)) from None
        diff = DiffContent(path=str(path), old_text=old, new_text=result.new_text)
        ranges = result.changed_ranges()
        locations = [ToolCallLocation(path=str(path), line=r.first) for r in ranges[:MAX_LOCATIONS]]

        async def run() -> Outcome:
            await tools.write(path, old, result.new_text)
            return Outcome(result.message(str(path)), [diff])

        return Prepared(tools.action("edit", path), self.title(params, tools), run, locations, [diff])


class GlobParams(Params):
    pattern: str = Field(description='A glob such as "**/*.py" or "src/**/test_*.ts".')
    path: str | None = Field(default=None, description="The folder to search (default: the working directory).")


class Glob(BuiltinTool):
    name = "glob"
    kind = "search"
    params = GlobParams

    def title(self, params: GlobParams, tools: BuiltinTools) -> str:
        where = f" in {tools.display(tools.path(params.path))}" if params.path else ""
        return f"Find `{params.pattern}`{where}"

    async def prepare(self, params: GlobParams, tools: BuiltinTools) -> Prepared:
        root = tools.path(params.path) if params.path else tools.session.cwd

        async def run() -> Outcome:
            try:
                found = await search.glob_files(params.pattern, tools.session.cwd, path=root)
            except search.SearchError as exc:
                raise ToolError(str(exc)) from None
            return Outcome(found.text, [_text(found.text)])

        return Prepared(tools.action("search", root), self.title(params, tools), run)


class GrepParams(Params):
    pattern: str = Field(description="A regular expression (ripgrep syntax).")
    path: str | None = Field(default=None, description="A file or folder to search (default: the working directory).")
    glob: str | None = Field(default=None, description='Only files matching this glob, e.g. "*.py".')
    ignore_case: bool = Field(default=False, description="Match case-insensitively.")
    output_mode: Literal["files_with_matches", "content", "count"] = Field(
        default="files_with_matches",
        description="files_with_matches (default): the files; content: the matching lines; count: per file.",
    )
    context: int = Field(default=0, ge=0, le=20, description="Lines of context around matches (content mode).")


class Grep(BuiltinTool):
    name = "grep"
    kind = "search"
    params = GrepParams

    def title(self, params: GrepParams, tools: BuiltinTools) -> str:
        where = f" in {tools.display(tools.path(params.path))}" if params.path else ""
        only = f" ({params.glob})" if params.glob else ""
        return f"Search `{params.pattern}`{where}{only}"

    async def prepare(self, params: GrepParams, tools: BuiltinTools) -> Prepared:
        root = tools.path(params.path) if params.path else tools.session.cwd

        async def run() -> Outcome:
            try:
                found = await search.grep(
                    params.pattern,
                    tools.session.cwd,
                    path=root,
                    glob=params.glob,
                    ignore_case=params.ignore_case,
                    output_mode=params.output_mode,
                    context=params.context,
                )
            except search.SearchError as exc:
                raise ToolError(str(exc)) from None
            return Outcome(found.text, [_text(found.text)])

        return Prepared(tools.action("search", root), self.title(params, tools), run)


class CommandParams(Params):
    command: str = Field(description="The shell command line to run (bash), in the working directory.")
    timeout_ms: int | None = Field(
        default=None, ge=1000, le=MAX_COMMAND_TIMEOUT_MS, description="Time limit in milliseconds (default 120000)."
    )
    description: str | None = Field(default=None, description="A few words saying what the command does.")


class RunCommand(BuiltinTool):
    name = "run_command"
    kind = "execute"
    params = CommandParams

    def title(self, params: CommandParams, tools: BuiltinTools) -> str:
        command = " ".join(params.command.split())
        return command if len(command) <= 120 else command[:117] + "…"

    async def prepare(self, params: CommandParams, tools: BuiltinTools) -> Prepared:
        cwd = tools.session.cwd
        timeout = (params.timeout_ms or DEFAULT_COMMAND_TIMEOUT_MS) / 1000

        async def run() -> Outcome:
            display: list[ToolCallContent] = []
            if tools.client.has_terminal:

                async def show(terminal_id: str) -> None:
                    display.append(TerminalContent(terminal_id=terminal_id))
                    await tools.progress(display)

                result = await shell.run_in_terminal(tools.client, params.command, cwd, timeout, show)
                replay: list[ToolCallContent] = [_output_block(result.output)]
                return Outcome(_command_report(result, timeout), display, result.exit_code != 0, replay)
            result = await shell.run_locally(params.command, cwd, timeout)
            display.append(_output_block(result.output))
            return Outcome(_command_report(result, timeout), display, failed=result.exit_code != 0)

        return Prepared(Action("execute", command=params.command), self.title(params, tools), run)


class FetchParams(Params):
    url: str = Field(description="The http:// or https:// URL to get.")


class Fetch(BuiltinTool):
    name = "fetch"
    kind = "fetch"
    params = FetchParams

    def title(self, params: FetchParams, tools: BuiltinTools) -> str:
        return f"Fetch {params.url}"

    async def prepare(self, params: FetchParams, tools: BuiltinTools) -> Prepared:
        from coder_agent.tools.fetch import FetchError, check_url, fetch

        try:
            check_url(params.url)
        except FetchError as exc:
            raise ToolError(str(exc)) from None

        async def run() -> Outcome:
            try:
                page = await fetch(params.url)
            except FetchError as exc:
                raise ToolError(str(exc)) from None
            header = f"{page.url} (HTTP {page.status}, {page.content_type or 'unknown type'})"
            summary = f"Fetched {header}: {len(page.text):,} characters"
            return Outcome(f"{header}\n\n{page.text}", [_text(summary)], failed=page.status >= 400)

        return Prepared(Action("fetch", tool=None), self.title(params, tools), run)


class PlanItem(Params):
    content: str = Field(description="What the step is.")
    status: Literal["pending", "in_progress", "completed"] = Field(description="Its state.")
    priority: Literal["high", "medium", "low"] = Field(default="medium", description="How important it is.")


class PlanParams(Params):
    entries: list[PlanItem] = Field(description="The whole plan, every step, in order (it replaces the last one).")


TOOLS: tuple[BuiltinTool, ...] = (ReadFile(), WriteFile(), EditFile(), Glob(), Grep(), RunCommand(), Fetch())
PLAN_TOOL = "update_plan"
BUILTIN_NAMES = frozenset([*(tool.name for tool in TOOLS), PLAN_TOOL])


@cache
def _builtin_specs() -> list[dict[str, Any]]:
    """The built-in tools' schemas, built once (the model sees the same bytes every call: good for caching)."""
    plan = {
        "type": "function",
        "function": {
            "name": PLAN_TOOL,
            "description": prompts.load(f"tools/{PLAN_TOOL}.md"),
            "parameters": _clean_schema(PlanParams.model_json_schema()),
        },
    }
    return [*(tool.spec() for tool in TOOLS), plan]


# ---- the executor ---------------------------------------------------------------------------------


class BuiltinTools:
    """The `ToolSet` of a session's turn: the built-in tools, shown and permitted through the client."""

    def __init__(self, session: Session) -> None:
        assert session.permissions is not None, "the session was opened without a permission policy"
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
            return _builtin_specs()
        from coder_agent.tools.mcp_tools import McpToolCall

        extra = [McpToolCall(t, hub).spec() for t in hub.tools() if t.qualified_name not in BUILTIN_NAMES]
        return [*_builtin_specs(), *extra]

    async def run(self, call: ToolCallRequest) -> ToolResult:
        if call.name == PLAN_TOOL:
            return await self._update_plan(call)
        self._call_id = call.id
        try:
            return await self._run(call)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True), anyio.move_on_after(2):
                await self._update(status="failed", content=[_text("Cancelled by the user.")])
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
        refusal = await self._permit(prepared)
        if refusal is not None:
            return await self._fail(refusal)
        await self._update(status="in_progress")
        try:
            outcome = await prepared.run()
        except ToolError as exc:
            return await self._fail(str(exc))
        await self._update(status="failed" if outcome.failed else "completed", content=outcome.display or None)
        if outcome.replay is not None:
            replace_content(self.session.events, call.id, [c.wire() for c in outcome.replay])
        return ToolResult(outcome.output, failed=outcome.failed)

    # ---- helpers for the tools ----------------------------------------------------------------

    def path(self, raw: str) -> Path:
        return resolve_path(raw, self.session.cwd)

    def display(self, path: Path) -> str:
        cwd = self.session.cwd
        return path.relative_to(cwd).as_posix() if path.is_relative_to(cwd) and path != cwd else str(path)

    def action(self, kind: ToolKind, path: Path) -> Action:
        return Action(kind, paths=(path,), outside=not is_inside(path, self.session.roots))

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

    async def write(self, path: Path, old: str | None, new: str) -> None:
        """Write a file the model changed: re-check it, snapshot it for /undo, write, remember the new text."""
        await self.check_unchanged(path, old)
        checkpoints = self.session.checkpoints
        if checkpoints is not None:
            try:
                await checkpoints.before_change(path, old)
            except CheckpointError as exc:
                log.warning("no undo snapshot of %s: %s", path, exc)
        await self.files.write_text(path, new)
        if checkpoints is not None:
            checkpoints.after_change(path, new)
        self.remember(path, new)

    async def progress(self, content: list[ToolCallContent]) -> None:
        await self._update(content=list(content))

    # ---- the call's lifecycle -----------------------------------------------------------------

    def _names(self) -> list[str]:
        return [*self.tools, PLAN_TOOL]

    async def _start(self, call_id: str, title: str, kind: ToolKind, raw_input: Any) -> None:
        await self.client.update(
            ToolCallStart(tool_call_id=call_id, title=title, kind=kind, status="pending", raw_input=raw_input)
        )

    async def _update(self, **fields: Any) -> None:
        await self.client.update(ToolCallUpdate(tool_call_id=self._call_id, **fields))

    async def _fail(self, message: str) -> ToolResult:
        with anyio.CancelScope(shield=True):
            await self._update(status="failed", content=[_text(message)])
        return ToolResult(message, failed=True)

    async def _permit(self, prepared: Prepared) -> str | None:
        """None if the call may run; else why not (for the model). Raises TurnCancelled on a cancel."""
        decision, reason = self.policy.decide(prepared.action)
        if decision == "allow":
            return None
        if decision == "deny":
            return f"Not allowed: {reason}. Do not retry this; tell the user or find another way."
        request = ToolCallUpdate(
            tool_call_id=self._call_id,
            title=prepared.title,
            kind=prepared.action.kind,
            status="pending",
            content=prepared.preview or None,
            locations=prepared.locations or None,
        )
        try:
            outcome = await self.client.request_permission(request, self.policy.options(prepared.action))
        except ClientError as exc:
            return f"The permission request failed ({exc.message}); the call was not run."
        if outcome.outcome == "cancelled" or outcome.option_id is None:
            await self._fail("Cancelled by the user.")
            raise TurnCancelled
        if outcome.option_id in ("allow_always", "reject_always"):
            allow = outcome.option_id == "allow_always"
            rule = self.policy.remember(prepared.action, allow=allow)
            log.info("session %s remembers the rule %s (%s)", self.session.id, rule, outcome.option_id)
            section = "allow" if allow else "deny"
            await self.client.update(
                AgentMessageChunk(
                    content=TextContent(
                        text=f"\n\n_Remembered for this session: {section} `{rule}`. To keep it, add "
                        f'`"{rule}"` to `permissions.{section}` in your coder-agent config._\n\n'
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
            return ToolResult(f"Invalid arguments for {PLAN_TOOL}: {_describe(exc)}", failed=True)
        entries = [PlanEntry(content=e.content, status=e.status, priority=e.priority) for e in params.entries]
        await self.client.update(PlanUpdate(entries=entries))
        done = sum(e.status == "completed" for e in params.entries)
        return ToolResult(f"Plan updated: {done} of {len(entries)} steps completed.")


def _text(text: str) -> ContentToolCallContent:
    return ContentToolCallContent(content=TextContent(text=text))


def _output_block(output: str) -> ContentToolCallContent:
    return _text(f"```\n{truncate_middle(output, 10_000)}\n```" if output else "(no output)")


def _raw_input(arguments: str) -> Any:
    try:
        return json.loads(arguments or "{}")
    except ValueError:
        return {"unparsed": arguments}


def _describe(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors(include_url=False, include_input=False):
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        problems.append(f"{where}: {error['msg']}")
    return "; ".join(problems)


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON schema without pydantic's titles, with $defs inlined (some providers reject $ref)."""
    defs = schema.pop("$defs", {})

    def clean(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return clean(dict(defs[node["$ref"].rsplit("/", 1)[-1]]))
            if "anyOf" in node and any(branch == {"type": "null"} for branch in node["anyOf"]):
                others = [branch for branch in node["anyOf"] if branch != {"type": "null"}]
                if len(others) == 1:
                    merged = {**{k: v for k, v in node.items() if k != "anyOf"}, **others[0]}
                    merged.pop("default", None)
                    return clean(merged)
            return {key: clean(value) for key, value in node.items() if key != "title"}
        if isinstance(node, list):
            return [clean(item) for item in node]
        return node

    cleaned: dict[str, Any] = clean(schema)
    return cleaned


def _command_report(result: shell.CommandResult, timeout: float) -> str:
    if result.timed_out:
        status = f"Timed out after {timeout:g} s and was killed."
    elif result.signal:
        status = f"Killed by {result.signal}."
    else:
        status = f"Exit code: {result.exit_code}"
    note = " (earlier output was dropped: it passed the output limit)" if result.truncated else ""
    output = truncate_middle(result.output, MAX_COMMAND_OUTPUT_CHARS) if result.output else "(no output)"
    return f"{status}{note}\n{output}"
