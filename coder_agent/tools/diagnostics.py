"""`diagnostics`: the errors and warnings a language server reports now, for one file or for every file checked so
far in the session (the model asks; edits get the new ones without asking, see `edit_checks`).

For a file: its server analyses the text as the editor has it (read through the client, so unsaved changes count)
and every error and warning is listed; where no server checks it, the syntax errors tree-sitter finds. Without a
path: what the servers last said of each file the session checked (edited or asked about), with the counts.
"""

from __future__ import annotations

from pathlib import Path

import anyio
from pydantic import Field

from coder_agent.lsp.diagnostics import Diagnostic, counts, problems, report
from coder_agent.protocol.content import ToolCallLocation
from coder_agent.tools.calls import Outcome, Prepared, text_content
from coder_agent.tools.context import ToolContext
from coder_agent.tools.editing.syntax import language_of, problems_report, syntax_problems
from coder_agent.tools.tool import BuiltinTool, Params, PathText

MAX_FILES_LISTED = 30


class DiagnosticsParams(Params):
    path: PathText | None = Field(
        default=None,
        description="The file to check; leave it out for every file checked so far in this session.",
    )


class Diagnostics(BuiltinTool):
    name = "diagnostics"
    kind = "read"
    params = DiagnosticsParams

    def title(self, params: DiagnosticsParams, ctx: ToolContext) -> str:
        if params.path is None:
            return "Diagnostics of the files checked so far"
        return f"Diagnostics of {ctx.display(ctx.path(params.path).path)}"

    async def prepare(self, params: DiagnosticsParams, ctx: ToolContext) -> Prepared:
        title = self.title(params, ctx)
        if params.path is None:

            async def run_all() -> Outcome:
                text = _workspace_report(ctx)
                return Outcome(text, [text_content(text)])

            return Prepared(ctx.action("read", ctx.path(ctx.cwd)), title, run_all)
        place = ctx.path(params.path)
        path = place.path

        async def run() -> Outcome:
            ctx.still_there(place)
            text = await ctx.read_whole(path, "check", real=place.real)
            found = await ctx.lsp.current(path, text) if ctx.lsp is not None else None
            said = _file_report(ctx, path, found) if found is not None else await _syntax_report(ctx, path, text)
            return Outcome(said, [text_content(said)])

        return Prepared(ctx.action("read", place), title, run, [ToolCallLocation(path=str(path))])


def _file_report(ctx: ToolContext, path: Path, found: tuple[str, list[Diagnostic]]) -> str:
    server, diagnostics = found
    shown = ctx.display(path)
    listed = problems(diagnostics)
    if not listed:
        return f"{server} reports no errors or warnings in {shown}."
    errors, warnings = counts(listed)
    lines = report(shown, listed, ctx.config.lsp.max_reported)
    return "\n".join([f"{server} reports {errors} error(s) and {warnings} warning(s) in {shown}:", *lines])


async def _syntax_report(ctx: ToolContext, path: Path, text: str) -> str:
    shown = ctx.display(path)
    why = "no language server checks it" if ctx.lsp is None or not ctx.lsp.checks(path) else "its server did not answer"
    if language_of(path) is None:
        return f"No check is available for {shown} ({why}, and the syntax check does not know its language)."
    found = await anyio.to_thread.run_sync(syntax_problems, text, path)
    if not found:
        return f"{shown}: no syntax errors ({why}: only the syntax was checked, not types or names)."
    return problems_report(shown, path, found) + f"\n({why}: only the syntax was checked.)"


def _workspace_report(ctx: ToolContext) -> str:
    known = ctx.lsp.known() if ctx.lsp is not None else {}
    if not known:
        return (
            "No file has been checked by a language server in this session yet: edit a file, or call this tool "
            "with its path."
        )
    with_problems = {path: problems(found) for path, found in known.items() if problems(found)}
    errors, warnings = counts(d for found in with_problems.values() for d in found)
    head = f"{errors} error(s) and {warnings} warning(s) in {len(with_problems)} of the {len(known)} file(s) checked."
    lines = [head]
    for path in sorted(with_problems)[:MAX_FILES_LISTED]:
        lines.extend(report(ctx.display(path), with_problems[path], 5))
    if len(with_problems) > MAX_FILES_LISTED:
        lines.append(f"… and {len(with_problems) - MAX_FILES_LISTED} more file(s).")
    return "\n".join(lines)
