"""`Subagents`: the sub-agents of one model turn — each `task` call's child agent, run as a turn of its own on a child
`TurnContext` — and how the user sees them.

A child gets its own conversation (a short system prompt of its own, `prompts/subagent.md`, and the task), its own
memory of the files it read, and a model of its own when the config names one (`subagents.explore_model`,
`general_model`); it shares the session's folders, permission policy (mode, rules, "always" answers), sandbox, undo
checkpoints of the parent's turn, background jobs (those it starts end with it) and bill: its calls are metered into
the session's spending, and tallied apart to be shown with its work. `explore` children get the read-only tools;
`general` ones the parent's, without `task` (children cannot start children), `ask_user` and `propose_plan`. Each has
a deadline (`subagents.timeout`) and a step cap (`subagents.max_steps`), and at most `subagents.parallel` run at
once. A child whose model fails, that runs out of time or steps, or that the user cancels comes back as a failed
result saying so, with what it had found; the parent's turn goes on.

The user sees every child in its parent's `task` call (`ChildView`: its plan and its steps as they happen, then its
bill and answer). A client that advertises `subagents` also gets it as a sub-agent session, exactly as the RFD
"Subagent Sessions" says: the announcing `subagent_update` (name, task, `capabilities.cancel`) before any update of
the child's, the child's updates, permission requests and questions on its own session id (`ChildBridge`), and one
terminal `subagent_update` after the last of them — before the parent's turn ends, however it ends (a cancel of the
turn cascades). `session/cancel` with the child's id cancels that child alone (`Session.child`). Everything a child
shows is recorded in the parent's replay log under the child's id (`ReplayLog.for_child`), so `session/load` replays
it, ending as `disconnected` the children the agent left running when it stopped.
"""

from __future__ import annotations

import itertools
import logging
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio

from coder_agent import nofollow, prompts
from coder_agent.agent import workspace
from coder_agent.agent.isolated import ChildPlace, Isolation
from coder_agent.agent.metering import MeteredModel
from coder_agent.agent.turn import Turn
from coder_agent.config import Config
from coder_agent.errors import RpcError
from coder_agent.lsp.editor import LspCall
from coder_agent.model.base import Model
from coder_agent.permissions import Choice
from coder_agent.protocol.content import PlanEntry, ToolCallContent
from coder_agent.protocol.schema import (
    NoticeSeverity,
    PlanUpdate,
    SessionUpdate,
    StopReason,
    SubagentCapabilities,
    SubagentState,
    SubagentUpdate,
    ToolCallStart,
    ToolCallUpdate,
)
from coder_agent.sandbox.command import CommandSandbox
from coder_agent.session.background import BackgroundCommand
from coder_agent.session.bridge import ClientBridge, CommandResult, ShowContent
from coder_agent.session.conversation import Conversation, Spending
from coder_agent.session.delegation import Delegated, Delegation, ParentCall, ShowProgress
from coder_agent.session.file_memory import FileMemory
from coder_agent.session.redacting_bridge import RedactingBridge
from coder_agent.session.replay import ReplayLog
from coder_agent.session.session import Session
from coder_agent.session.steering import SteeringInbox
from coder_agent.session.turn_context import Job, TurnContext
from coder_agent.session.user_questions import Answer, Question
from coder_agent.tools.calls import text_content
from coder_agent.tools.executor import ToolExecutor
from coder_agent.tools.file_view import truncate_middle
from coder_agent.tools.registry import BUILTIN_NAMES

log = logging.getLogger(__name__)

EXPLORE_TOOLS = frozenset({"read_file", "glob", "grep", "diagnostics", "fetch", "update_plan"})
GENERAL_TOOLS = BUILTIN_NAMES - {"task", "ask_user", "propose_plan"}
MAX_ANSWER_CHARS = 20_000
"""A child's answer the parent model reads at most (its beginning and end)."""
SHOWN_ANSWER_CHARS = 4_000
SHOWN_STEPS = 8
"""The latest steps of a child its parent's call shows."""
MARKS = {"completed": "✓", "failed": "✗", "in_progress": "▸", "pending": "○"}

MakeModel = Callable[[Config], Model]
"""A model for a config (its credentials checked: an RpcError names what is missing)."""


class Subagents:
    """The `Delegate` of one model turn (see the module docstring)."""

    def __init__(self, session: Session, parent: TurnContext, parent_model: MeteredModel, make_model: MakeModel):
        self.session = session
        self.parent = parent
        self.parent_model = parent_model
        self.make_model = make_model
        self.settings = parent.config.subagents
        self._slots = anyio.Semaphore(self.settings.parallel)
        self._numbers = itertools.count(1)
        self.isolation = Isolation(parent)

    async def __call__(self, task: Delegation, progress: ShowProgress, call: ParentCall | None = None) -> Delegated:
        name = f"{task.kind}-{next(self._numbers)}"
        view = ChildView(name, task.description, progress)
        if self._slots.value == 0:
            await view.say(f"waiting: {self.settings.parallel} sub-agents run at once")
        async with self._slots:
            if task.isolate:  # in a place of its own: `agent.isolated`
                return await self.isolation.run(
                    name, lambda place: self._run(name, task, view, place), view.say, progress, call
                )
            return await self._run(name, task, view)

    async def _run(self, name: str, task: Delegation, view: ChildView, place: ChildPlace | None = None) -> Delegated:
        parent, settings = self.parent, self.settings
        chosen = settings.explore_model if task.kind == "explore" else settings.general_model
        config = parent.config.model_copy(update={"model": chosen or parent.config.model})
        config = config.model_copy(update={"max_turn_requests": settings.max_steps})
        try:
            model = self.make_model(config)
        except RpcError as exc:
            return view.ended("failed", f"The sub-agent could not start: {exc.message}", "")
        child_id = f"sess_{uuid.uuid4().hex}"
        bridge = parent.bridge
        log_of_parent = bridge.replay if isinstance(bridge.replay, ReplayLog) else bridge.replay.log
        place = place or ChildPlace.shared(parent)
        shown = bridge.subagent_bridge(child_id)
        child_bridge = RedactingBridge(
            ChildBridge(bridge.inner, shown, view, name, place.files), log_of_parent.for_child(child_id)
        )
        announce = SubagentUpdate(
            subagent_session_id=child_id,
            name=name,
            task=task.description,
            capabilities=SubagentCapabilities(cancel=True),
        )
        try:
            with self.session.child(child_id) as own:  # cancellable alone from the moment the client hears of it
                with anyio.CancelScope(shield=True):
                    await bridge.update(announce)
                parent.save_soon()  # a session saved from now on shows the child (disconnected, if it comes to that)
                result = await self._work(child_id, name, task, model, config, child_bridge, view, place)
            if own.cancelled_caught:
                return view.ended("cancelled", "The user stopped this sub-agent before it finished.", view.last_words)
            return result
        except Exception as exc:  # our own bug: the parent's turn goes on
            log.exception("sub-agent %s failed", name)
            return view.ended("failed", f"The sub-agent failed unexpectedly: {exc}", view.last_words)
        finally:
            with anyio.CancelScope(shield=True):  # still running here: the parent's turn was cancelled
                await self._close(child_id, "cancelled" if view.state == "running" else view.state)

    async def _work(
        self,
        child_id: str,
        name: str,
        task: Delegation,
        model: Model,
        config: Config,
        bridge: RedactingBridge,
        view: ChildView,
        place: ChildPlace,
    ) -> Delegated:
        parent = self.parent
        after: list[Job] = []
        tally = Spending()
        view.tally = tally
        explore = task.kind == "explore"
        instructions = await _system_prompt(place, name, explore, parent.reading_refused)
        async with anyio.create_task_group() as child_tasks:  # its usage reports: all in before it ends
            ctx = TurnContext(
                session_id=child_id,
                cwd=place.cwd,
                roots=place.roots,
                config=config,
                policy=parent.policy,
                bridge=bridge,
                files=FileMemory(),
                checkpoints=place.checkpoints,
                conversation=Conversation(),
                spending=parent.spending,
                system_prompt_addition=None,  # its own instructions (`instructions`) are its system prompt
                mcp=None if explore or place.isolated else parent.mcp,  # MCP servers work in the parent's folder
                sandbox=place.sandbox,
                jobs=parent.jobs,
                lsp=place.lsp,  # an isolated child's: servers of its own, in its copy
                tasks=child_tasks,
                steering=SteeringInbox(),  # the user's messages go to the parent's turn
                auto_compact=parent.auto_compact,
                save_soon=parent.save_soon,
                after_response=after.append,
                unattended=parent.unattended,
                parent_id=parent.session_id,
                instructions=instructions,
                hooks=parent.hooks,  # a guard on tool calls guards a sub-agent's too
            )
            metered = MeteredModel(model, ctx, bills=(tally, *self.parent_model.bills))  # and the parent turn's
            turn = Turn(
                ctx, metered, ToolExecutor(ctx, metered.accepts_images, EXPLORE_TOOLS if explore else GENERAL_TOOLS)
            )
            view.turn = turn
            stop: StopReason | None = None
            failure = ""
            with anyio.move_on_after(self.settings.timeout) as deadline:
                try:
                    stop = await turn.run_task(task.prompt)
                except RpcError as exc:  # its model failed for good (or its credentials are missing)
                    failure = exc.message
            for job in after:
                await job()
        if deadline.cancelled_caught:
            why = (
                f"The sub-agent did not finish within its time limit ({self.settings.timeout:g} s, subagents.timeout)."
            )
            return view.ended("failed", why, view.last_words)
        if stop is None:
            return view.ended("failed", f"The sub-agent's model failed: {failure}", view.last_words)
        return _outcome(view, stop, self.settings.max_steps)

    async def _close(self, child_id: str, state: SubagentState) -> None:
        """The child's jobs end, the client hears its terminal state, and the parent's bill is brought up to date."""
        parent = self.parent
        try:
            await parent.jobs.kill_owned(child_id)
            await parent.bridge.update(SubagentUpdate(subagent_session_id=child_id, state=state))
            await self.parent_model.report()
        except Exception:  # the client may be gone: the child is over all the same
            log.warning("closing sub-agent %s failed", child_id, exc_info=True)


def _outcome(view: ChildView, stop: StopReason, max_steps: int) -> Delegated:
    answer = view.last_words
    if stop == "end_turn" and view.turn is not None and view.turn.looped:
        return view.ended("failed", "The sub-agent kept making the same call with the same result; it was stopped.", "")
    if stop == "end_turn":
        return view.ended("completed", "", answer)
    if stop == "cancelled":
        return view.ended("cancelled", "The sub-agent stopped: a question it asked was cancelled.", answer)
    why = {
        "max_turn_requests": f"The sub-agent used its {max_steps} model requests (subagents.max_steps) without "
        "finishing.",
        "max_tokens": "The sub-agent's answer was cut at its model's output limit.",
        "refusal": "The sub-agent's model declined to answer.",
    }.get(stop, f"The sub-agent stopped ({stop}).")
    return view.ended("failed", why, answer)


async def _system_prompt(place: ChildPlace, name: str, explore: bool, refuse: nofollow.Refuse) -> str:
    env = await workspace.describe(place.cwd, list(place.roots[1:]), sandbox=place.sandbox, refuse=refuse)
    walls = place.sandbox.walls.describe() if place.sandbox is not None else None
    return prompts.render(
        "subagent.md", **env.template_values(), agent=name, explore=explore, sandbox=walls, isolated=place.isolated
    )


class ChildView:
    """What the parent's `task` call shows of a sub-agent: its name and task, its plan, its latest steps, and once it
    ended, how, its bill and its answer."""

    def __init__(self, name: str, description: str, progress: ShowProgress) -> None:
        self.name = name
        self.description = description
        self.progress = progress
        self.plan: list[PlanEntry] = []
        self.steps: dict[str, list[str]] = {}
        """Tool call id → [title, status], in order."""
        self.tally: Spending | None = None
        self.turn: Turn | None = None
        self.state: SubagentState = "running"
        self.note = ""

    @property
    def last_words(self) -> str:
        """What the child last said (its answer, when it finished)."""
        return self.turn.last_answer if self.turn is not None else ""

    async def saw(self, update: SessionUpdate) -> None:
        """Take in one of the child's updates; show the call anew when its plan or steps changed."""
        if isinstance(update, PlanUpdate):
            self.plan = list(update.entries)
        elif isinstance(update, ToolCallStart):
            self.steps[update.tool_call_id] = [update.title, update.status]
        elif isinstance(update, ToolCallUpdate) and update.tool_call_id in self.steps:
            step = self.steps[update.tool_call_id]
            step[0] = update.title or step[0]
            step[1] = update.status or step[1]
        else:
            return
        await self.progress(self.content())

    async def say(self, note: str) -> None:
        self.note = note
        await self.progress(self.content())

    def ended(self, state: SubagentState, why: str, answer: str) -> Delegated:
        """How the child ended, for the parent model (its answer, capped, or why there is none and what it had)
        and for the user."""
        self.state = state
        answer = truncate_middle(answer, MAX_ANSWER_CHARS) if answer else ""
        if state == "completed":
            told = answer or "(The sub-agent finished without an answer.)"
        else:
            told = f"{why} What it said last: {answer}" if answer else why
        self.note = why
        shown = self.content()
        if answer:
            shown.append(text_content(truncate_middle(answer, SHOWN_ANSWER_CHARS)))
        return Delegated(told, state != "completed", shown, state)

    def content(self) -> list[ToolCallContent]:
        lines = [f"**{self.name}** · {self.description}" + (f" — {self.note}" if self.note else "")]
        if self.plan:
            lines.append("Plan: " + " · ".join(f"{MARKS.get(e.status, '○')} {e.content}" for e in self.plan))
        steps = list(self.steps.values())
        if len(steps) > SHOWN_STEPS:
            lines.append(f"({len(steps) - SHOWN_STEPS} earlier steps)")
        lines += [f"- {MARKS.get(status, '…')} {title}" for title, status in steps[-SHOWN_STEPS:]]
        if self.state != "running" and self.tally is not None and self.tally.requests:
            lines.append(_bill(self.tally))
        return [text_content("\n".join(lines))]


def _bill(tally: Spending) -> str:
    cached = f" ({tally.cached_tokens:,} cached)" if tally.cached_tokens else ""
    cost = f" · ${tally.cost:.4f}" if tally.cost else ""
    requests = "request" if tally.requests == 1 else "requests"
    tokens = f"{tally.input_tokens:,} tokens in{cached}, {tally.output_tokens:,} out"
    return f"{tally.requests} model {requests} · {tokens}{cost}"


class ChildBridge:
    """A sub-agent's `ClientBridge` (under its own `RedactingBridge`): its updates feed its parent's call and, where
    the client shows sub-agent sessions, go to its own session (`shown`), with its permission requests; elsewhere a
    permission request goes to the parent's session, its title naming the child. Files, commands and questions go
    through the parent's bridge: the client knows its session (an isolated child's files: through `files`, the disk)."""

    def __init__(
        self,
        parent: ClientBridge,
        shown: ClientBridge | None,
        view: ChildView,
        name: str,
        files: ClientBridge | None = None,
    ) -> None:
        self.parent = parent
        self.shown = shown
        self.view = view
        self.name = name
        self.files = files or parent

    @property
    def supports_compaction_updates(self) -> bool:
        return self.shown.supports_compaction_updates if self.shown is not None else True

    @property
    def supports_boolean_options(self) -> bool:
        return False  # a sub-agent has no options of its own

    async def turn_starting(self) -> None:
        return None  # the parent's turn already said what the user should read first

    async def update(self, update: SessionUpdate, *, live_only: bool = False) -> None:
        await self.view.saw(update)
        if self.shown is not None:
            await self.shown.update(update, live_only=live_only)

    async def notice(self, severity: NoticeSeverity, title: str, description: str | None = None) -> None:
        await self.parent.notice(severity, f"{self.name}: {title}", description)

    async def request_permission(self, call: ToolCallUpdate, choices: Sequence[Choice]) -> str | None:
        if self.shown is not None:
            return await self.shown.request_permission(call, choices)
        named = call.model_copy(update={"title": f"{self.name}: {call.title or 'a tool call'}"})
        return await self.parent.request_permission(named, choices)

    async def ask(self, question: Question) -> Answer:
        return await self.parent.ask(question)

    async def url_done(self, elicitation_id: str) -> None:
        await self.parent.url_done(elicitation_id)

    async def read_text_file(
        self, path: Path, *, line: int | None = None, limit: int | None = None, real: Path | None = None
    ) -> str:
        return await self.files.read_text_file(path, line=line, limit=limit, real=real)

    async def write_text_file(self, path: Path, content: str, *, real: Path | None = None) -> None:
        await self.files.write_text_file(path, content, real=real)

    async def run_command(
        self,
        command: str,
        *,
        cwd: Path,
        timeout: float,
        show: ShowContent,
        sandbox: CommandSandbox | None = None,
        folders: Sequence[Path] = (),
    ) -> CommandResult:
        return await self.parent.run_command(
            command, cwd=cwd, timeout=timeout, show=show, sandbox=sandbox, folders=folders
        )

    async def start_command(
        self,
        command: str,
        *,
        cwd: Path,
        sandbox: CommandSandbox | None = None,
        with_input: bool = False,
        folders: Sequence[Path] = (),
    ) -> BackgroundCommand:
        return await self.parent.start_command(
            command, cwd=cwd, sandbox=sandbox, with_input=with_input, folders=folders
        )

    def subagent_bridge(self, child_id: str) -> None:
        return None  # sub-agents cannot start sub-agents

    def lsp_channel(self) -> LspCall | None:
        return self.parent.lsp_channel()
