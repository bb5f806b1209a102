"""The job tools, for the background jobs `run_command` starts (`session.jobs`): `job_output` (new output, from an
offset, capped), `job_wait` (until the job ends, some text appears, or a timeout), `job_input` (text for the job's
standard input), `job_kill` and `job_list`. They are one module because they share everything but a few lines;
each has its own description in `prompts/tools/`.

Reading, waiting, listing and killing a job the agent started need no permission (they change nothing outside the
job). Input is asked about like the job's own command line: it steers what that command does.
"""

from __future__ import annotations

from pydantic import Field

from coder_agent.permissions import Action, analyse
from coder_agent.protocol.content import TerminalContent, ToolCallContent
from coder_agent.session.jobs import Job
from coder_agent.tools.calls import Outcome, Prepared, ToolError, text_content
from coder_agent.tools.context import ToolContext
from coder_agent.tools.file_view import fenced
from coder_agent.tools.job_report import MAX_READ_CHARS, JobReport, job_report
from coder_agent.tools.tool import BuiltinTool, Params
from coder_agent.visible import visible

DEFAULT_WAIT_MS = 30_000
MAX_WAIT_MS = 600_000
INPUT_WAIT_MS = 1_000
"""After input, how long `job_input` waits for the job's answer by default."""


class JobId(Params):
    job_id: int = Field(ge=1, description="The job's number (run_command's answer gives it; job_list lists them).")


class OutputParams(JobId):
    since: int | None = Field(
        default=None,
        ge=0,
        description="Read from this character offset (each answer says where to read on); default: where you "
        "last read. 0 reads all the output that is still kept.",
    )
    max_chars: int = Field(
        default=MAX_READ_CHARS,
        ge=1_000,
        le=100_000,
        description="The most characters to return; past it you get the beginning and the end.",
    )


class WaitParams(JobId):
    timeout_ms: int = Field(
        default=DEFAULT_WAIT_MS,
        ge=100,
        le=MAX_WAIT_MS,
        description=f"The longest to wait, in milliseconds (default {DEFAULT_WAIT_MS}).",
    )
    until: str | None = Field(
        default=None,
        min_length=1,
        description="Stop waiting as soon as this text is in the job's output since your last read of it (that "
        "read included): a server's 'Listening on', a test runner's summary.",
    )


class InputParams(JobId):
    text: str = Field(description="The text to send to the job's standard input.")
    press_enter: bool = Field(default=True, description="Send a newline after the text (default true).")
    close: bool = Field(default=False, description="Close the input afterwards: the job reads end of file.")
    wait_ms: int = Field(
        default=INPUT_WAIT_MS,
        ge=0,
        le=30_000,
        description="How long to wait for the job's answer before returning its new output (default 1000).",
    )


class NoParams(Params):
    pass


class _JobTool(BuiltinTool):
    kind = "execute"

    def job(self, params: JobId, ctx: ToolContext) -> Job:
        return ctx.jobs.get(params.job_id)


class JobOutput(_JobTool):
    name = "job_output"
    params = OutputParams

    def title(self, params: OutputParams, ctx: ToolContext) -> str:
        return f"Output of job {params.job_id}"

    async def prepare(self, params: OutputParams, ctx: ToolContext) -> Prepared:
        job = self.job(params, ctx)

        async def run() -> Outcome:
            return _outcome(job, await job_report(job, since=params.since, max_chars=params.max_chars))

        return Prepared(Action("think"), f"Output of {job.label}", run)


class JobWait(_JobTool):
    name = "job_wait"
    params = WaitParams

    def title(self, params: WaitParams, ctx: ToolContext) -> str:
        return f"Wait for job {params.job_id}"

    async def prepare(self, params: WaitParams, ctx: ToolContext) -> Prepared:
        job = self.job(params, ctx)
        until = f" until {visible(params.until)!r} appears" if params.until else ""
        title = f"Wait for {job.label}{until}"

        async def run() -> Outcome:
            waited = await ctx.jobs.wait(job, params.timeout_ms / 1000, params.until)
            note = {
                "ended": "",
                "matched": f"{params.until!r} appeared in its output.",
                "timeout": f"Still running after waiting {params.timeout_ms / 1000:g} s."
                + (f" {params.until!r} has not appeared yet." if params.until else ""),
            }[waited]
            if not job.running:
                note = ""
            return _outcome(job, await job_report(job, note=note))

        return Prepared(Action("think"), title, run)


class JobInput(_JobTool):
    name = "job_input"
    params = InputParams

    def title(self, params: InputParams, ctx: ToolContext) -> str:
        return f"Input for job {params.job_id}"

    async def prepare(self, params: InputParams, ctx: ToolContext) -> Prepared:
        job = self.job(params, ctx)
        pipe = job.handle.input
        if not job.running:
            raise ToolError(f"{job.label} has ended ({job.state()}); it takes no more input.")
        if pipe is None:
            raise ToolError(
                f"{job.label} was started without its input open; start it again with stdin: true to answer it."
            )
        if not pipe.open:
            raise ToolError(f"The input of {job.label} is closed.")
        data = params.text + ("\n" if params.press_enter else "")
        action = Action("execute", command=analyse(job.command), sandboxed=job.sandboxed)
        what = f"Send to {job.label}" + (", then close its input" if params.close else "") + ":"
        preview: list[ToolCallContent] = [text_content(what), text_content(fenced(visible(data.rstrip("\n"))))]

        async def run() -> Outcome:
            seen = job.handle.output.total
            await pipe.write(data.encode())
            if params.close:
                pipe.close()
            if params.wait_ms:
                await ctx.jobs.answer(job, seen, params.wait_ms / 1000)
            sent = f"Sent {len(data)} characters" + (" and closed its input." if params.close else ".")
            return _outcome(job, await job_report(job, note=sent))

        return Prepared(action, f"Input for {job.label}", run, preview=preview)


class JobKill(_JobTool):
    name = "job_kill"
    params = JobId

    def title(self, params: JobId, ctx: ToolContext) -> str:
        return f"Kill job {params.job_id}"

    async def prepare(self, params: JobId, ctx: ToolContext) -> Prepared:
        job = self.job(params, ctx)

        async def run() -> Outcome:
            note = "" if job.running else "It had ended already."
            await ctx.jobs.kill(job)
            return _outcome(job, await job_report(job, note=note))

        return Prepared(Action("think"), f"Kill {job.label}", run)


class JobList(BuiltinTool):
    name = "job_list"
    kind = "execute"
    params = NoParams

    def title(self, params: NoParams, ctx: ToolContext) -> str:
        return "List background jobs"

    async def prepare(self, params: NoParams, ctx: ToolContext) -> Prepared:
        async def run() -> Outcome:
            jobs = ctx.jobs.all()
            if not jobs:
                return Outcome("This session has no background jobs.")
            lines = []
            for job in jobs:
                unread = job.handle.output.total - job.read_to
                lines.append(f"- {job.label}: {job.state()}" + (f"; {unread:,} characters unread" if unread else ""))
                if not job.running:
                    job.seen_end = True
            return Outcome("\n".join(lines), [text_content("\n".join(lines))])

        return Prepared(Action("think"), self.title(params, ctx), run)


def _outcome(job: Job, report: JobReport) -> Outcome:
    """A job tool's answer: the report; the call shows the job's terminal while it runs there, else the report."""
    display: list[ToolCallContent] = [text_content(report.shown)]
    if job.terminal_id is not None and job.running:
        display = [TerminalContent(terminal_id=job.terminal_id), *display]
    return Outcome(report.text, display, replay=[text_content(report.shown)])
