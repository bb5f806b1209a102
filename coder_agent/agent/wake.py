"""Wake: a turn the agent starts itself when a background job ends while no turn runs (the `auto_continue` session
option; ACP v2's "turns the agent starts", in v1).

A job that ends during a turn is told to that turn's model (`session.jobs`). One that ends while none runs is, with
the option off, one notice (the model hears of it at the next prompt). With it on, the agent starts a turn whose
user message is synthetic and clearly marked (`prompts/wake.md`: which jobs ended, how, and the tail of their
output); the client sees it as any turn (the message shown, then the updates, then a notice), and a client that
advertises `_meta.wake` gets `_session/wake` first (`running`) and when it ends (`idle`), so it can show it as its
own. Bounded: at most `[wake] max_per_hour` such turns in any hour of the session, none once they have cost
`[wake] max_cost` (a notice says which bound held it back).

Never two turns at once, and the user always wins: a woken turn takes its place in the session's line like any
prompt (`Session.run_turn`, `by_user=False`), and when its place comes it gives way to a prompt of the user's
running or waiting (that turn's environment update tells the model instead). The ended jobs are taken once
(`JobTable.take_ended`), so two wakes for the same end cannot both run: the later finds nothing and does nothing.
A turn that ends with jobs ended unseen (they ended after its last tool call) is followed by a wake too.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from weakref import WeakKeyDictionary

import anyio
import anyio.lowlevel
from anyio.abc import TaskGroup

from coder_agent import prompts
from coder_agent.protocol.content import TextContent
from coder_agent.protocol.schema import StopReason, WakeUpdate
from coder_agent.session import rewind as rewinding
from coder_agent.session.jobs import Job
from coder_agent.session.session import Session
from coder_agent.session.turn_runner import TurnReport, TurnRunner

log = logging.getLogger(__name__)

LAST_OUTPUT_CHARS = 400
"""The end of a job's output shown in the notice of its end, and in the woken turn's message."""
HOUR = 3600.0


@dataclass
class WakeLog:
    """One session's woken turns: when (for the hourly bound) and what they cost."""

    clock: Callable[[], float] = time.monotonic
    times: deque[float] = field(default_factory=deque)
    cost: float = 0.0

    def refusal(self, session: Session) -> str | None:
        """Why no turn may start by itself now (a bound of `[wake]`), or None."""
        bounds = session.state.config.wake
        now = self.clock()
        while self.times and now - self.times[0] >= HOUR:
            self.times.popleft()
        if len(self.times) >= bounds.max_per_hour:
            return f"it went on by itself {len(self.times)} times in the last hour (`[wake] max_per_hour`)"
        if self.cost >= bounds.max_cost:
            return f"its own turns have cost ${self.cost:.2f} in this session (`[wake] max_cost`)"
        return None


_LOGS: WeakKeyDictionary[Session, WakeLog] = WeakKeyDictionary()


def wake_log(session: Session) -> WakeLog:
    found = _LOGS.get(session)
    if found is None:
        found = _LOGS[session] = WakeLog()
    return found


@dataclass(frozen=True)
class Starter:
    """What starts a turn of the session's own: the manager's task group and turn runner."""

    tasks: TaskGroup
    runner: TurnRunner


async def job_ended(manager: Starter, session: Session, job: Job) -> None:
    """A job ended: nothing while a turn runs or a prompt of the user's waits (its turn tells the model); otherwise
    a turn of the agent's own where the session continues alone and no bound holds it back, else one notice."""
    if session.turn_running or session.user_waiting or session.closed:
        return
    refusal = wake_log(session).refusal(session) if session.state.continues_alone else None
    if session.state.continues_alone and refusal is None:
        manager.tasks.start_soon(woken_turn, manager, session)
        return
    tail = job.handle.output.tail(LAST_OUTPUT_CHARS).strip()
    shown = f"\n\n```\n{tail}\n```" if tail else ""
    why = f"It did not go on by itself: {refusal}. " if refusal else ""
    description = f"{why}The model is told at your next message; its output is kept.{shown}"
    await session.services.bridge.notice("info", f"Background {job.label} {job.state()}", description)


async def turn_ended(manager: Starter, session: Session) -> None:
    """A turn ended: jobs that ended after its last tool call (unseen) wake the session, as if they ended now."""
    ended = [job for job in session.services.jobs.all() if not job.running and not job.seen_end and job.owner is None]
    if ended and session.state.continues_alone and not session.closed:
        await job_ended(manager, session, ended[-1])


async def woken_turn(manager: Starter, session: Session) -> StopReason | None:
    """Run a turn of the agent's own on the jobs that ended unseen; None if there were none by its turn (another
    wake or a prompt of the user's took them)."""
    report = TurnReport(by_user=False, show_prompt=True)
    bridge = session.services.bridge
    taken: list[Job] = []

    async def turn() -> StopReason:
        if session.user_waiting or wake_log(session).refusal(session) is not None:
            return "end_turn"
        taken.extend(session.services.jobs.take_ended())
        if not taken:
            return "end_turn"
        wake_log(session).times.append(wake_log(session).clock())
        reason = {"type": "jobs_ended", "jobs": [_reason(job) for job in taken]}
        await bridge.update(WakeUpdate(state="running", message_id=report.user_message_id, reason=reason))
        await rewinding.announce(session, session.state.cursor_here("before", report.user_message_id))
        try:
            return await manager.runner.run_turn(session, [TextContent(text=message(taken))], report)
        finally:
            with anyio.CancelScope(shield=True):
                await rewinding.announce_after_turn(session)

    try:
        stop = await session.run_turn(turn, by_user=False)
    except Exception:
        log.exception("session %s: a turn it started by itself failed", session.id)
        stop = "end_turn"
    finally:
        session.response_sent()
    if not taken:
        return None
    wake_log(session).cost += report.spent.cost
    with anyio.CancelScope(shield=True):
        await bridge.update(WakeUpdate(state="idle", stop_reason=stop), live_only=True)
        labels = ", ".join(job.label for job in taken)
        await bridge.notice("info", f"coder-agent went on by itself: {labels} ended", _how(stop))
    await turn_ended(manager, session)
    return stop


def message(jobs: list[Job]) -> str:
    """The woken turn's user message: which jobs ended, how, and the tail of their output."""
    shown = [
        {"label": job.label, "state": job.state(), "tail": job.handle.output.tail(LAST_OUTPUT_CHARS).strip()}
        for job in jobs
    ]
    return prompts.render("wake.md", jobs=shown).strip()


def _reason(job: Job) -> dict[str, object]:
    exit = job.exit
    found: dict[str, object] = {"jobId": job.id, "command": job.command}
    if exit is not None and exit.exit_code is not None:
        found["exitCode"] = exit.exit_code
    if exit is not None and exit.signal is not None:
        found["signal"] = exit.signal
    return found


def _how(stop: StopReason) -> str:
    if stop == "end_turn":
        return "It looked at what the work left and answered above; your next message goes on from there."
    return f"Its turn stopped ({stop}); your next message goes on from there."


async def settle(session: Session, timeout: float) -> None:
    """`coder-agent run` with auto_continue: wait, at most `timeout` seconds, until no background job runs and the
    turns they woke have ended."""
    with anyio.move_on_after(timeout):
        while True:
            running = [job for job in session.services.jobs.all() if job.running]
            if running:
                await running[0].ended.wait()
                continue
            for _ in range(10):  # a wake just scheduled takes its place in line
                await anyio.lowlevel.checkpoint()
            await session.idle()
            if not any(job.running for job in session.services.jobs.all()) and not session.turn_running:
                return
