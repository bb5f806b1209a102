"""What the model is told after an edit besides the edit itself: the errors and warnings the edit introduced, as
the project's language server reports them (`lsp`: the new ones only, capped), or where no server answered, the
syntax errors it introduced (`editing.syntax`, tree-sitter, on the texts in memory); and what the configured checker
of the file's language says (`Config.checkers`, run by `ToolContext.run_local`: a local process of the agent's own,
with the environment commands get, in its own process group, its output capped, killed at `checker_timeout`).

None of them ever undoes or blocks the edit: the model reads the report and decides. The user sees what the model
saw in the tool call: a line per new diagnostic, and a line per syntax or checker problem. A checker without
`{file}` (a whole-project check such as `tsc --noEmit`) runs once per call.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

import anyio

from coder_agent.errors import CallFailed
from coder_agent.lsp.diagnostics import report
from coder_agent.lsp.pool import EditDiagnostics
from coder_agent.protocol.content import ToolCallContent
from coder_agent.tools.calls import Outcome, text_content
from coder_agent.tools.context import FileChange, ToolContext
from coder_agent.tools.editing.syntax import introduced_problems, language_of, problems_report
from coder_agent.tools.file_view import truncate_middle

CHECKER_OUTPUT_CHARS = 4_000
FILE = "{file}"


async def checked_outcome(
    ctx: ToolContext, changes: Sequence[FileChange], message: str, display: list[ToolCallContent]
) -> Outcome:
    """The outcome of an edit that was made: its message and display, with what the checks found."""
    reports, warnings = await after_edit(ctx, changes)
    shown = [*display, *(text_content(warning) for warning in warnings)]
    return Outcome("\n\n".join([message, *reports]), shown)


async def after_edit(ctx: ToolContext, changes: Sequence[FileChange]) -> tuple[list[str], list[str]]:
    """The reports for the model, and a line for the user per problem found."""
    reports: list[str] = []
    warnings: list[str] = []
    commands: dict[str, None] = {}
    for change in changes:
        path = change.place.path
        if change.new is None:
            if ctx.lsp is not None:
                ctx.lsp.forget(path)
            continue
        shown = ctx.display(path)
        found = await ctx.lsp.after_edit(path, change.old, change.new) if ctx.lsp is not None else None
        if found is not None:
            if found.new:
                text, shown_lines = _diagnostics_report(ctx, shown, found)
                reports.append(text)
                warnings.append("\n".join(shown_lines))
        elif ctx.config.syntax_check:
            problems = await anyio.to_thread.run_sync(introduced_problems, change.old, change.new, path)
            if problems:
                reports.append(problems_report(shown, path, problems))
                where = ", ".join(str(p.line) for p in problems[:5])
                warnings.append(f"Syntax check: {len(problems)} error(s) introduced in {shown} (line {where}).")
        language = language_of(path)
        template = ctx.config.checkers.get(language) if language is not None else None
        if template:
            commands[template.replace(FILE, shlex.quote(str(path)))] = None
    for command in commands:
        said, failed = await _check(ctx, command)
        reports.append(said)
        if failed:
            warnings.append(said.split("\n", 1)[0])
    return reports, warnings


def _diagnostics_report(ctx: ToolContext, shown: str, found: EditDiagnostics) -> tuple[str, list[str]]:
    """The report for the model, and the lines the user sees (the same diagnostics)."""
    lines = report(shown, found.new, ctx.config.lsp.max_reported)
    if found.baseline:
        head = f"{found.server} reports {len(found.new)} new problem(s) in {shown} after this edit:"
    else:
        head = f"{found.server} reports these problems in {shown} (what it said before the edit is not known):"
    return "\n".join([head, *lines]), [f"Language server ({found.server}): {len(found.new)} new in {shown}", *lines]


async def _check(ctx: ToolContext, command: str) -> tuple[str, bool]:
    """The checker's report for the model, and whether it found something (or could not run)."""
    timeout = ctx.config.checker_timeout
    try:
        result = await ctx.run_local(command, timeout)
    except CallFailed as exc:
        return f"Checker `{command}` could not start: {exc}", True
    if result.timed_out:
        return f"Checker `{command}` timed out after {timeout:g} s and was killed.", True
    if result.exit_code == 0:
        return f"Checker `{command}`: no problems.", False
    how = f"exited with {result.exit_code}" if result.signal is None else f"was killed by {result.signal}"
    if result.exit_code == 127:
        how += " (its program was not found)"
    output = truncate_middle(result.output.strip(), CHECKER_OUTPUT_CHARS) or "(no output)"
    return f"Checker `{command}` {how}:\n{output}", True
