"""`run_command`: a shell command line in the working directory — the editor's terminal when it has one,
else a local process group — bounded in time, its whole process tree killed on timeout or cancel; inside the
session's sandbox (but in full-auto, or where the session has none). With `background`, it starts as one of the
session's jobs instead (`session.jobs`; the job tools follow it), asked about and contained exactly the same way.

A command may leave the sandbox only with the user's yes: the model asks for it (`outside_sandbox`, with a
justification the user reads), or the command fails in a way that shows the walls stopped it (a refused write, no
network, the proxy's refusal, walls that could not be put up), and the user is asked whether it may run again
outside; declined, the model reads the failure, the evidence and the walls. That question says in the agent's words
only what the agent determined (the exit code, which sign of the walls the output holds); the line of output
itself is shown fenced, as the command's words: a command could print anything there.

The permission request shows the whole command (the title may be shortened; the content and `rawInput`
never are), with characters that could hide part of it (escape sequences, bidirectional overrides) written
as escapes and a note saying so. The model reads the exit status and the output, cut in the middle when long.
"""

from __future__ import annotations

from pydantic import Field

from coder_agent.permissions import Action
from coder_agent.protocol.content import ContentToolCallContent, TerminalContent, ToolCallContent
from coder_agent.sandbox.command import DENIAL_SIGNS, WallsHit, hit_walls
from coder_agent.session.bridge import CommandResult
from coder_agent.tools.calls import Outcome, Prepared, ToolError, text_content
from coder_agent.tools.context import ToolContext
from coder_agent.tools.file_view import fenced, truncate_middle
from coder_agent.tools.job_report import job_report
from coder_agent.tools.tool import BuiltinTool, Params
from coder_agent.visible import visible

MAX_OUTPUT_CHARS = 30_000
SHOWN_OUTPUT_CHARS = 10_000
DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
MAX_TITLE = 120
BACKGROUND_MARK = "(background job)"
BACKGROUND_NOTE = (
    "Runs in the background: it goes on after this call and this turn, until it ends, is killed, or the session closes."
)
FIRST_LOOK = 0.5
"""How long a background job is watched after it starts, so the answer can say what it printed first (or that it
failed at once)."""
HIDDEN_NOTE = (
    "The command holds control or invisible characters (escape sequences, bidirectional or zero-width "
    "characters); they are shown as escapes such as \\x1b or \\u202e."
)


class CommandParams(Params):
    command: str = Field(description="The shell command line to run (bash), in the working directory.")
    timeout_ms: int | None = Field(
        default=None, ge=1000, le=MAX_TIMEOUT_MS, description="Time limit in milliseconds (default 120000)."
    )
    description: str | None = Field(default=None, description="A few words saying what the command does.")
    outside_sandbox: bool = Field(
        default=False,
        description="Run it outside the sandbox; the user is asked first. Only when the sandbox stops what the "
        "command must do (see the sandbox in your instructions); say why in `justification`.",
    )
    justification: str | None = Field(
        default=None, description="With outside_sandbox: why the command must leave the sandbox, for the user."
    )
    background: bool = Field(
        default=False,
        description="Start it as a background job and return at once with its job id (servers, watchers, long "
        "builds); it runs until it ends, job_kill stops it, or the session closes. timeout_ms does not apply.",
    )
    stdin: bool = Field(
        default=False, description="With background: keep its standard input open, to answer it with job_input."
    )


class RunCommand(BuiltinTool):
    name = "run_command"
    kind = "execute"
    params = CommandParams

    def title(self, params: CommandParams, ctx: ToolContext) -> str:
        """The command on one line, shortened for the title only: the whole command is in `rawInput` and in the
        call's content, so the user always sees everything they approve."""
        command = " ".join(visible(params.command).split())
        command = command if len(command) <= MAX_TITLE else command[: MAX_TITLE - 1] + "…"
        return f"{command} {BACKGROUND_MARK}" if params.background else command

    async def prepare(self, params: CommandParams, ctx: ToolContext) -> Prepared:
        if params.stdin and not params.background:
            raise ToolError("stdin applies to background jobs only: set background: true as well, or leave stdin out.")
        outside = (params.justification or "no reason given").strip() if params.outside_sandbox else None
        action = ctx.command_action(params.command, outside)
        if params.background:
            return _background(params, action, self.title(params, ctx), ctx)
        timeout = (params.timeout_ms or DEFAULT_TIMEOUT_MS) / 1000

        async def run() -> Outcome:
            result = await ctx.run_command(params.command, timeout, sandboxed=action.sandboxed)
            note = ""
            hit = hit_walls(result.output, result.exit_code) if action.sandboxed and not result.timed_out else None
            if hit is not None:
                if await ctx.ask_outside(_walls_question(hit, result.exit_code)):
                    result = await ctx.run_command(params.command, timeout, sandboxed=False)
                    note = f"Inside the sandbox it failed ({hit.evidence}); the user let it run again outside.\n"
                else:
                    walls = "; ".join(ctx.walls)
                    note = (
                        f"It seems to have hit the sandbox's walls ({hit.evidence}) and the user kept it inside. "
                        f"The walls: {walls}. Work within them; ask with outside_sandbox only if the task needs it.\n"
                    )
            output = _output_block(result.output)
            shown = ctx.shown
            in_terminal = any(isinstance(c, TerminalContent) for c in shown)
            display: list[ToolCallContent] = shown if in_terminal else [*shown, output]
            replay: list[ToolCallContent] | None = [output] if in_terminal else None
            return Outcome(note + _report(result, timeout), display, result.exit_code != 0, replay)

        return Prepared(action, self.title(params, ctx), run, preview=_preview(params.command))


def _walls_question(hit: WallsHit, exit_code: int | None) -> str:
    """Why the question to leave the walls is asked: the agent's own findings, then the line that shows it, fenced
    and labelled as what the command printed (a prompt-injected command must not word the question)."""
    if hit.launcher:
        found = "the line the sandbox's launcher prints when it cannot put up the walls"
    else:
        found = "“" + next((sign for sign in DENIAL_SIGNS if sign in hit.evidence), "a sign of the walls") + "”"
    status = f"exit code {exit_code}" if exit_code is not None else "no exit code"
    return (
        f"it failed ({status}) and its output holds {found}.\n\n"
        f"The line, as the command printed it (its words, not coder-agent's):\n\n{fenced(visible(hit.evidence))}"
    )


def _preview(command: str, *notes: str) -> list[ToolCallContent]:
    """The whole command line as the user approves it, with what hides in it made visible, and notes."""
    shown = visible(command)
    content: list[ToolCallContent] = [text_content(fenced(shown, "sh"))]
    if shown != command:
        content.append(text_content(HIDDEN_NOTE))
    return content + [text_content(note) for note in notes]


def _background(params: CommandParams, action: Action, title: str, ctx: ToolContext) -> Prepared:
    """A command started as a background job: it returns once the job started, with what it printed at first."""

    async def run() -> Outcome:
        job = await ctx.start_job(
            params.command, sandboxed=action.sandboxed, with_input=params.stdin, description=params.description
        )
        await ctx.jobs.wait(job, FIRST_LOOK)
        report = await job_report(job, started=True)
        shown = ctx.shown or [text_content(report.shown)]
        return Outcome(report.text, shown, failed=report.failed_start, replay=[text_content(report.shown)])

    notes = [BACKGROUND_NOTE + (" Its input stays open for job_input." if params.stdin else "")]
    return Prepared(action, title, run, preview=_preview(params.command, *notes))


def _output_block(output: str) -> ContentToolCallContent:
    return text_content(fenced(truncate_middle(output, SHOWN_OUTPUT_CHARS)) if output else "(no output)")


def _report(result: CommandResult, timeout: float) -> str:
    if result.timed_out:
        status = f"Timed out after {timeout:g} s and was killed."
    elif result.signal:
        status = f"Killed by {result.signal}."
    else:
        status = f"Exit code: {result.exit_code}"
    note = " (earlier output was dropped: it passed the output limit)" if result.truncated else ""
    output = truncate_middle(result.output, MAX_OUTPUT_CHARS) if result.output else "(no output)"
    return f"{status}{note}\n{output}"
