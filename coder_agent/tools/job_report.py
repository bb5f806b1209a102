"""What the model reads and the user sees of a background job: its state, and its output since the model last read
it (or since an offset), capped, with the offset to read on from.

Reading moves the job's `read_to` forward, and a report of a job that has ended counts as telling the model so
(no note about it follows). The job tools (`tools.jobs`) and `run_command`'s background start share this.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from coder_agent.errors import CallFailed, ClientError
from coder_agent.session.jobs import Job
from coder_agent.tools.file_view import fenced, truncate_middle

MAX_READ_CHARS = 20_000
"""Output one read returns at most (its beginning and end, when there is more)."""
SHOWN_CHARS = 10_000
"""Output shown to the user in the call at most."""


@dataclass(frozen=True)
class JobReport:
    text: str
    """For the model."""
    shown: str
    """For the user (Markdown)."""
    failed_start: bool = False
    """The job ended at once with a failure."""


async def job_report(
    job: Job, *, since: int | None = None, max_chars: int = MAX_READ_CHARS, started: bool = False, note: str = ""
) -> JobReport:
    """The job's state and its output from `since` (default: where the model last read), marking it read."""
    if job.running:
        with contextlib.suppress(ClientError, CallFailed):  # the editor's terminal failed: report what was read
            await job.handle.refresh()
    output = job.handle.output.read(job.read_to if since is None else since, max_chars)
    if output.text:
        job.last_read = output.start
    job.read_to = max(job.read_to, output.end)
    if not job.running:
        job.seen_end = True
    state = job.state()
    if started:
        where = " inside the sandbox" if job.sandboxed else ""
        head = f"Started {job.label} in the background{where}; it is {state}."
    else:
        head = f"{job.label}: {state}."
    if note:
        head = f"{head} {note}"
    missed = f" ({output.missed:,} earlier characters are no longer kept)" if output.missed else ""
    if output.text:
        span = f"Output, characters {output.start:,} to {output.end:,}{missed} (read on with since={output.end}):"
        body = f"{span}\n{output.text}"
    else:
        body = f"No new output{missed} (since={output.end})."
    shown_text = truncate_middle(output.text, SHOWN_CHARS)
    shown = f"{head}\n\n{fenced(shown_text)}" if output.text else f"{head}\n\n_No new output._"
    failed_start = started and not job.running and (job.exit is None or job.exit.exit_code != 0)
    return JobReport(f"{head}\n{body}", shown, failed_start)
