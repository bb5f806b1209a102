"""The agent's own tools: read_file, write_file, edit_file, glob, grep, run_command, fetch, update_plan.

Model-facing names and arguments are a contract (prompts, permission rules and users' habits rely on
them); their descriptions live in `prompts/tools/<name>.md`. Each tool checks its call and says what it
will do (`prepare`): the resolved places it touches, the parsed command line, the resolved fetch target,
as an `Action` for the policy; `tools.executor` shows, permits and runs it. A tool acts on the very place
the policy judged, never on the raw path again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import cache
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from coder_agent import prompts
from coder_agent.permissions import Action, Place
from coder_agent.protocol.content import (
    ContentToolCallContent,
    DiffContent,
    TerminalContent,
    ToolCallContent,
    ToolCallLocation,
)
from coder_agent.tools import search, shell
from coder_agent.tools.base import BuiltinTool, Outcome, Params, Prepared, ToolError, clean_schema, text_content
from coder_agent.tools.file_view import format_lines, truncate_middle
from coder_agent.tools.text_edit import Edit, EditError, apply_edits

if TYPE_CHECKING:
    from coder_agent.tools.executor import SessionTools

MAX_COMMAND_OUTPUT_CHARS = 30_000
DEFAULT_COMMAND_TIMEOUT_MS = 120_000
MAX_COMMAND_TIMEOUT_MS = 600_000
MAX_LOCATIONS = 20
MAX_TITLE = 120


class ReadParams(Params):
    path: str = Field(description="The file to read: absolute, or relative to the working directory.")
    offset: int | None = Field(default=None, ge=1, description="The first line to read (1-based).")
    limit: int | None = Field(default=None, ge=1, description="How many lines to read (default 2000).")


class ReadFile(BuiltinTool):
    name = "read_file"
    kind = "read"
    params = ReadParams

    def title(self, params: ReadParams, tools: SessionTools) -> str:
        where = tools.display(tools.path(params.path).path)
        if params.offset or params.limit:
            first = params.offset or 1
            return (
                f"Read {where} (from line {first})"
                if not params.limit
                else f"Read {where} ({first}–{first + params.limit - 1})"
            )
        return f"Read {where}"

    async def prepare(self, params: ReadParams, tools: SessionTools) -> Prepared:
        place = tools.path(params.path)
        path = place.path

        async def run() -> Outcome:
            tools.still_there(place)
            text = await tools.files.read_text(path)
            tools.remember(path, text)
            return Outcome(format_lines(text, params.offset or 1, params.limit))

        location = ToolCallLocation(path=str(path), line=params.offset or 1)
        return Prepared(tools.action("read", place), self.title(params, tools), run, [location])


class WriteParams(Params):
    path: str = Field(description="The file to create or overwrite: absolute, or relative to the working directory.")
    content: str = Field(description="The whole new content of the file.")


class WriteFile(BuiltinTool):
    name = "write_file"
    kind = "edit"
    params = WriteParams

    def title(self, params: WriteParams, tools: SessionTools) -> str:
        return f"Write {tools.display(tools.path(params.path).path)}"

    async def prepare(self, params: WriteParams, tools: SessionTools) -> Prepared:
        place = tools.path(params.path)
        path = place.path
        old: str | None = None
        if await tools.files.exists(path):
            old = await tools.files.read_text(path)
            tools.check_fresh(path, old, "overwrite")
        diff = DiffContent(path=str(path), old_text=old, new_text=params.content)

        async def run() -> Outcome:
            await tools.write(place, old, params.content)
            lines = params.content.count("\n") + (0 if params.content.endswith("\n") or not params.content else 1)
            verb = "Created" if old is None else "Overwrote"
            return Outcome(f"{verb} {path} ({lines} lines).", [diff])

        return Prepared(
            tools.action("edit", place), self.title(params, tools), run, [ToolCallLocation(path=str(path))], [diff]
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

    def title(self, params: EditParams, tools: SessionTools) -> str:
        return f"Edit {tools.display(tools.path(params.path).path)}"

    async def prepare(self, params: EditParams, tools: SessionTools) -> Prepared:
        place = tools.path(params.path)
        path = place.path
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
            await tools.write(place, old, result.new_text)
            return Outcome(result.message(str(path)), [diff])

        return Prepared(tools.action("edit", place), self.title(params, tools), run, locations, [diff])


class GlobParams(Params):
    pattern: str = Field(description='A glob such as "**/*.py" or "src/**/test_*.ts".')
    path: str | None = Field(default=None, description="The folder to search (default: the working directory).")


class Glob(BuiltinTool):
    name = "glob"
    kind = "search"
    params = GlobParams

    def title(self, params: GlobParams, tools: SessionTools) -> str:
        return f"Find `{params.pattern}`{_where(params.path, tools)}"

    async def prepare(self, params: GlobParams, tools: SessionTools) -> Prepared:
        root = _search_root(params.path, tools)
        return _search(
            tools,
            root,
            self.title(params, tools),
            lambda: search.glob_files(params.pattern, tools.session.cwd, path=root.path),
        )


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

    def title(self, params: GrepParams, tools: SessionTools) -> str:
        only = f" ({params.glob})" if params.glob else ""
        return f"Search `{params.pattern}`{_where(params.path, tools)}{only}"

    async def prepare(self, params: GrepParams, tools: SessionTools) -> Prepared:
        root = _search_root(params.path, tools)
        return _search(
            tools,
            root,
            self.title(params, tools),
            lambda: search.grep(
                params.pattern,
                tools.session.cwd,
                path=root.path,
                glob=params.glob,
                ignore_case=params.ignore_case,
                output_mode=params.output_mode,
                context=params.context,
            ),
        )


def _search_root(path: str | None, tools: SessionTools) -> Place:
    return tools.path(path or tools.session.cwd)


def _where(path: str | None, tools: SessionTools) -> str:
    return f" in {tools.display(tools.path(path).path)}" if path else ""


def _search(
    tools: SessionTools, root: Place, title: str, find: Callable[[], Awaitable[search.SearchResult]]
) -> Prepared:
    """A glob or grep call: a search action on `root`; its result is shown to the user and read by the model."""

    async def run() -> Outcome:
        tools.still_there(root)
        try:
            found = await find()
        except search.SearchError as exc:
            raise ToolError(str(exc)) from None
        return Outcome(found.text, [text_content(found.text)])

    return Prepared(tools.action("search", root), title, run)


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

    def title(self, params: CommandParams, tools: SessionTools) -> str:
        """The command on one line, shortened for the title only: the whole command is in `rawInput` and in the
        call's content, so the user always sees everything they approve."""
        command = " ".join(params.command.split())
        return command if len(command) <= MAX_TITLE else command[: MAX_TITLE - 1] + "…"

    async def prepare(self, params: CommandParams, tools: SessionTools) -> Prepared:
        cwd = tools.session.cwd
        action = tools.command_action(params.command)
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

        shown: list[ToolCallContent] = [text_content(_fenced(params.command, "sh"))]
        return Prepared(action, self.title(params, tools), run, preview=shown)


class FetchParams(Params):
    url: str = Field(description="The http:// or https:// URL to get.")


class Fetch(BuiltinTool):
    name = "fetch"
    kind = "fetch"
    params = FetchParams

    def title(self, params: FetchParams, tools: SessionTools) -> str:
        return f"Fetch {params.url}"

    async def prepare(self, params: FetchParams, tools: SessionTools) -> Prepared:
        from coder_agent.permissions import FetchTarget, TargetError, resolve_target
        from coder_agent.tools.fetch import FetchError, fetch

        try:
            target = await resolve_target(params.url)
        except TargetError as exc:
            raise ToolError(str(exc)) from None

        async def may_follow(hop: FetchTarget) -> str | None:
            """The approved host may redirect within itself; any other hop must pass the policy on its own."""
            if hop.host == target.host and (hop.local is None or target.local is not None):
                return None
            verdict = tools.policy.decide(Action("fetch", target=hop))
            return None if verdict.decision == "allow" else verdict.reason

        async def run() -> Outcome:
            try:
                page = await fetch(target, may_follow)
            except FetchError as exc:
                raise ToolError(str(exc)) from None
            header = f"{page.url} (HTTP {page.status}, {page.content_type or 'unknown type'})"
            summary = f"Fetched {header}: {len(page.text):,} characters"
            return Outcome(f"{header}\n\n{page.text}", [text_content(summary)], failed=page.status >= 400)

        return Prepared(Action("fetch", target=target), self.title(params, tools), run)


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
def builtin_specs() -> list[dict[str, Any]]:
    """The built-in tools' schemas, built once (the model sees the same bytes every call: good for caching)."""
    plan = {
        "type": "function",
        "function": {
            "name": PLAN_TOOL,
            "description": prompts.load(f"tools/{PLAN_TOOL}.md"),
            "parameters": clean_schema(PlanParams.model_json_schema()),
        },
    }
    return [*(tool.spec() for tool in TOOLS), plan]


def _fenced(text: str, language: str = "") -> str:
    """`text` in a Markdown code fence longer than any run of backticks inside it."""
    ticks = "`" * max(3, _longest_backtick_run(text) + 1)
    return f"{ticks}{language}\n{text}\n{ticks}"


def _longest_backtick_run(text: str) -> int:
    best = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        best = max(best, run)
    return best


def _output_block(output: str) -> ContentToolCallContent:
    return text_content(f"```\n{truncate_middle(output, 10_000)}\n```" if output else "(no output)")


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
