"""`JobTable`: a session's background jobs — commands started with `run_command`'s `background`, which outlive the
turn that started them and end with the session.

Each job is numbered in the session (1, 2, …), runs in a task of the session's own (`BackgroundCommand.run`) and is
released once it has ended; its output stays readable (the last `OUTPUT_CHARS_KEPT` characters) until the session
closes or `KEPT_ENDED` newer jobs have ended. At most `MAX_RUNNING` run at once. The table tells its owner when a
job ends (`on_end`: a notice, when no turn runs) and remembers which ended jobs the model has not yet seen end
(`take_ended`: the next environment update, or a note after the running turn's tool calls, says so). A job started
by a sub-agent is killed when that sub-agent finishes (`kill_owned`). Closing the table (the session closes, is
deleted, or the agent exits) kills every job and waits for it to end; the reaper covers an agent that is killed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import anyio
from anyio.abc import TaskGroup

from coder_agent.errors import CallFailed
from coder_agent.session.background import BackgroundCommand, JobExit

log = logging.getLogger(__name__)

MAX_RUNNING = 10
KEPT_ENDED = 20
"""Ended jobs whose output is kept (the oldest ones beyond this are forgotten)."""
END_WAIT = 10.0
"""How long closing waits for a killed job to end before giving up on it."""
TERMINAL_POLL = 0.05
TERMINAL_POLL_MAX = 1.0
"""A wait for a terminal job's output asks the editor for it after `TERMINAL_POLL`, then twice as long each time up to
`TERMINAL_POLL_MAX` (ACP's terminals push nothing), and at once when the terminal exits (`terminal/wait_for_exit`)."""
ANSWER_PAUSE = 0.2
"""A job whose output pauses this long after input has answered it (for now)."""

JobEnded = Callable[["Job"], Awaitable[None]]


class JobNotFound(CallFailed):
    """A job id that names no job of this session."""


@dataclass(eq=False)
class Job:
    """One background job."""

    id: int
    command: str
    description: str | None
    handle: BackgroundCommand
    sandboxed: bool
    """It runs inside the session's sandbox."""
    owner: str | None = None
    """The sub-agent that started it (None: the session's own model)."""
    started: float = field(default_factory=time.monotonic)
    exit: JobExit | None = None
    ended_at: float | None = None
    killed: bool = False
    """It was ended by a kill of ours (the model's, a sub-agent's end, the session's)."""
    read_to: int = 0
    """The offset of its output the model has read up to."""
    last_read: int = 0
    """Where the stretch of output the model read last began (a wait `until` some text looks from there)."""
    seen_end: bool = False
    """The model has been told it ended (by a tool's answer or a note)."""
    ended: anyio.Event = field(default_factory=anyio.Event)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)

    @property
    def running(self) -> bool:
        return self.exit is None

    @property
    def terminal_id(self) -> str | None:
        return self.handle.terminal_id

    @property
    def label(self) -> str:
        """`job 3 (`npm run dev`)`, the command shortened."""
        shown = " ".join(self.command.split())
        shown = shown if len(shown) <= 60 else shown[:59] + "…"
        return f"job {self.id} (`{shown}`)"

    def state(self) -> str:
        """How it is, in words: running for how long, or how it ended and when."""
        now = time.monotonic()
        if self.exit is None:
            return f"running for {_duration(now - self.started)}"
        ran = _duration((self.ended_at or now) - self.started)
        exit = self.exit
        if exit.lost is not None:
            how = f"lost: {exit.lost}"
        elif self.killed:
            how = "killed" + (f" ({exit.signal})" if exit.signal else "")
        elif exit.signal is not None:
            how = f"killed by {exit.signal} from outside the agent"
        else:
            how = f"exited with code {exit.exit_code}"
        return f"{how} after {ran}"


class JobTable:
    """A session's jobs (see the module docstring); `tasks` runs them, `on_end` hears of each end."""

    def __init__(self, tasks: TaskGroup, on_end: JobEnded | None = None) -> None:
        self._tasks = tasks
        self.on_end = on_end
        self._jobs: dict[int, Job] = {}
        self._next = 1
        self._closing = False

    # ---- starting -------------------------------------------------------------------------------

    def check_room(self) -> None:
        """CallFailed when no more jobs may start (too many running, or the session is closing)."""
        if self._closing:
            raise CallFailed("The session is closing; no job can start.")
        running = [job for job in self._jobs.values() if job.running]
        if len(running) >= MAX_RUNNING:
            listed = ", ".join(job.label for job in running)
            raise CallFailed(
                f"{MAX_RUNNING} jobs are running already ({listed}); kill one you no longer need with job_kill first."
            )

    def add(
        self,
        handle: BackgroundCommand,
        command: str,
        *,
        description: str | None = None,
        sandboxed: bool = False,
        owner: str | None = None,
    ) -> Job:
        """Take a started command in as a job, and run it."""
        job = Job(self._next, command, description, handle, sandboxed, owner)
        self._next += 1
        self._jobs[job.id] = job
        self._tasks.start_soon(self._supervise, job)
        self._forget_old()
        return job

    async def _supervise(self, job: Job) -> None:
        exit: JobExit | None = None
        try:
            with job.scope:
                exit = await job.handle.run()
        except Exception as exc:  # a handle's own failure: the job is lost, the session goes on
            log.exception("job %d failed", job.id)
            exit = JobExit(lost=f"the agent could not follow it ({exc})")
        finally:
            job.exit = exit or JobExit(lost="the session closed while it ran")
            job.ended_at = time.monotonic()
            job.ended.set()
            with anyio.CancelScope(shield=True):
                await job.handle.release()
        log.info("session job %d ended: %s", job.id, job.state())
        if not self._closing and self.on_end is not None:
            try:
                await self.on_end(job)
            except Exception:
                log.warning("telling of the end of job %d failed", job.id, exc_info=True)

    # ---- using ----------------------------------------------------------------------------------

    def get(self, job_id: int) -> Job:
        """The job with this id; JobNotFound naming the jobs there are."""
        job = self._jobs.get(job_id)
        if job is not None:
            return job
        if not self._jobs:
            raise JobNotFound(
                f"There is no job {job_id}: this session has no background jobs (jobs end when the session closes "
                "or the agent restarts). Start one with run_command and background: true."
            )
        known = ", ".join(str(n) for n in self._jobs)
        raise JobNotFound(f"There is no job {job_id} in this session; its jobs are: {known} (job_list shows them).")

    def all(self) -> list[Job]:
        return list(self._jobs.values())

    async def wait(self, job: Job, timeout: float, until: str | None = None) -> str:
        """Wait until the job ends, `until` appears in its output since the model last read it (what it read last
        included: a server that said it is ready as it started), or `timeout` passes: "ended", "matched" or
        "timeout"."""
        outcome = "timeout"
        with anyio.move_on_after(timeout):
            async with anyio.create_task_group() as race:

                async def ended() -> None:
                    nonlocal outcome
                    await job.ended.wait()
                    outcome = "ended"
                    race.cancel_scope.cancel()

                async def matched() -> None:
                    nonlocal outcome
                    assert until is not None
                    output, scanned = job.handle.output, job.last_read
                    while until not in (seen := output.read(max(scanned - len(until) + 1, job.last_read))).text:
                        scanned = seen.end
                        await _more_output(job)
                    outcome = "matched"
                    race.cancel_scope.cancel()

                race.start_soon(ended)
                if until:
                    race.start_soon(matched)
        if outcome == "matched" and not job.running:
            outcome = "ended"
        return outcome

    async def answer(self, job: Job, seen: int, timeout: float) -> None:
        """Wait, at most `timeout`, for the job to answer: output past offset `seen`, until it pauses for
        `ANSWER_PAUSE` (or the job ends)."""
        output = job.handle.output
        with anyio.move_on_after(timeout):
            async with anyio.create_task_group() as race:

                async def ended() -> None:
                    await job.ended.wait()
                    race.cancel_scope.cancel()

                async def answered() -> None:
                    while output.total <= seen:
                        await _more_output(job)
                    while True:
                        last = output.total
                        with anyio.move_on_after(ANSWER_PAUSE):
                            await _more_output(job)
                        if output.total == last:
                            break
                    race.cancel_scope.cancel()

                race.start_soon(ended)
                race.start_soon(answered)

    async def kill(self, job: Job) -> None:
        """End a job (its whole process group or terminal) and wait until it has."""
        if job.running:
            job.killed = True
            job.handle.kill()
        with anyio.move_on_after(END_WAIT):
            await job.ended.wait()
        if job.running:  # its handle does not answer: stop following it
            job.scope.cancel()
            await job.ended.wait()

    async def kill_owned(self, owner: str) -> list[Job]:
        """Kill the running jobs a sub-agent started (it has finished); those that were running."""
        owned = [job for job in self._jobs.values() if job.owner == owner and job.running]
        async with anyio.create_task_group() as group:
            for job in owned:
                group.start_soon(self.kill, job)
        return owned

    def take_ended(self) -> list[Job]:
        """The jobs that ended and the model has not been told of; they count as told from now on."""
        ended = [job for job in self._jobs.values() if not job.running and not job.seen_end and job.owner is None]
        for job in ended:
            job.seen_end = True
        return ended

    async def aclose(self) -> None:
        """Kill every job and wait for them to end (nothing is told: the session is closing)."""
        self._closing = True
        async with anyio.create_task_group() as group:
            for job in self._jobs.values():
                group.start_soon(self.kill, job)

    def _forget_old(self) -> None:
        ended = [job for job in self._jobs.values() if not job.running]
        for job in ended[: max(0, len(ended) - KEPT_ENDED)]:
            del self._jobs[job.id]


async def _more_output(job: Job) -> None:
    """Wait for more output: as it comes for a local job; for a terminal's, by asking the editor again when a timer
    that grows runs out or the terminal exits, whichever comes first. A job that ended with no more output waits on:
    its callers race its end."""
    output = job.handle.output
    seen = output.total
    if job.terminal_id is None:
        await output.grown(seen)
        return
    delay = TERMINAL_POLL
    while output.total == seen and not job.ended.is_set():
        with anyio.move_on_after(delay):
            await job.ended.wait()  # set when the terminal's `terminal/wait_for_exit` answers
        await job.handle.refresh()
        delay = min(delay * 2, TERMINAL_POLL_MAX)
    if output.total == seen:
        await anyio.sleep_forever()


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"
