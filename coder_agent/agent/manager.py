"""`SessionManager`: the life of sessions — open, reopen from the store, fork, close, delete, list — their state,
and their prompts: a turn each (`prompt`, with its `TurnReport`), and messages sent into the running one (`steer`).

Opening a session builds it whole: its state (the config for its folder, the model credentials checked — a
session that could not answer is refused with `AuthRequired` naming what to set —, the permission policy,
the undo checkpoints, the stored record when it is reopened) and its services (the client's bridge, wrapped
once in the `RedactingBridge` that feeds the replay log; the MCP servers, with what the session does when
they ask: `agent.mcp_requests`; the background saver). The manager is the one writer of a session's
services. Every change of state (a new session, a mode or option change, a step of a turn) is saved. What is
ACP about it (parsing params, answering, replaying to the client) stays in `acp.server`.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import anyio
from anyio.abc import TaskGroup

from coder_agent import extensions
from coder_agent.agent import commands, isolated, observers, opening, sandboxing, wake
from coder_agent.agent.config_source import ConfigSource
from coder_agent.checkpoints import Checkpoints
from coder_agent.errors import (
    InternalError,
    InvalidParams,
    InvalidRequest,
    RequestCancelled,
    ResourceNotFound,
    RpcError,
)
from coder_agent.protocol.content import ContentBlock
from coder_agent.protocol.schema import (
    AvailableCommandsUpdate,
    ConfigOptionUpdate,
    CurrentModeUpdate,
    McpServer,
    StopReason,
)
from coder_agent.session import rewind as rewinding
from coder_agent.session.bridge import ClientBridge
from coder_agent.session.conversation import SystemPromptAddition
from coder_agent.session.fork import ForkPointUnknown, fork_record
from coder_agent.session.options import apply_option, session_options
from coder_agent.session.redacting_bridge import RedactingBridge
from coder_agent.session.saver import Saver
from coder_agent.session.services import SessionServices
from coder_agent.session.session import Session
from coder_agent.session.state import SessionState
from coder_agent.session.turn_runner import TurnReport, TurnRunner
from coder_agent.store import (
    InvalidSessionId,
    SessionNotFound,
    SessionRecord,
    SessionStore,
    SessionSummary,
    StoreError,
)

log = logging.getLogger(__name__)

ClientFactory = Callable[[str], ClientBridge]


@dataclass(frozen=True)
class Steered:
    """What became of a message sent while a turn may be running: `taken` into it (its user message's id),
    `started` a turn of its own, or `no_turn` to take it (the client sends it as a prompt)."""

    outcome: Literal["taken", "started", "no_turn"]
    message_id: str | None = None


class SessionManager:
    """The open sessions of one connection, and the store behind them."""

    def __init__(self, runner: TurnRunner, source: ConfigSource, store: SessionStore | None, tasks: TaskGroup) -> None:
        self.runner = runner
        self.source = source
        self.store = store
        self.tasks = tasks
        self.sessions: dict[str, Session] = {}

    # ---- opening ------------------------------------------------------------------------------

    async def create(
        self,
        cwd: Path,
        additional_directories: list[Path],
        mcp_servers: Sequence[McpServer],
        client: ClientFactory,
        addition: SystemPromptAddition | None = None,
    ) -> Session:
        """A new session, with its own instructions if given, saved at once (so it can be resumed before its first
        prompt)."""
        session_id = f"sess_{uuid.uuid4().hex}"
        session = await self._open(session_id, cwd, additional_directories, mcp_servers, client(session_id))
        session.state.set_system_prompt_addition(addition)
        session.save_soon()
        log.info("session %s opened in %s", session.id, cwd)
        return session

    async def reopen(
        self,
        session_id: str,
        cwd: Path,
        additional_directories: list[Path],
        mcp_servers: Sequence[McpServer],
        client: ClientFactory,
        addition: SystemPromptAddition | None = None,
    ) -> Session:
        """A stored session, live again (replacing the same session if it is open, as it is now); with `addition`,
        its own instructions are these from now on (None keeps those it was stored with)."""
        open_here = self.sessions.get(session_id)
        if open_here is not None:
            await open_here.flush()
        record = await self._load_record(session_id)
        previous = self.sessions.pop(session_id, None)
        if previous is not None:
            await previous.aclose()  # replaced: its turn, terminals and MCP servers end here
        session = await self._open(session_id, cwd, additional_directories, mcp_servers, client(session_id), record)
        if addition is not None and addition != session.state.system_prompt_addition:
            session.state.set_system_prompt_addition(addition)
            session.save_soon()
        log.info("session %s reopened (%d messages)", session.id, len(record.messages))
        return session

    async def fork(
        self,
        source_id: str,
        cwd: Path,
        additional_directories: list[Path],
        mcp_servers: Sequence[McpServer],
        client: ClientFactory,
        message_id: str | None = None,
        addition: SystemPromptAddition | None = None,
        cursor_id: str | None = None,
    ) -> Session:
        """A new session with the history of `source_id` (open here, as it is now, or stored), whole, up to and
        including `message_id`, or up to the cursor `cursor_id`, and the undo checkpoints up to there (their blobs its
        own); saved at once. InvalidParams if the session cannot be forked there. The source is left as it was."""
        source = self.sessions.get(source_id)
        if source is not None:
            record, checkpoints = source.state.to_record(), source.state.checkpoints
        else:
            record = await self._load_record(source_id)
            checkpoints = Checkpoints(Path(record.cwd), session_id=source_id)
        session_id = f"sess_{uuid.uuid4().hex}"
        try:
            forked = fork_record(record, session_id, message_id, cursor_id)
        except ForkPointUnknown as exc:
            field = "cursorId" if cursor_id is not None else "messageId"
            value = cursor_id if cursor_id is not None else message_id
            raise InvalidParams(f"Invalid params: {field}: {exc}", {field: value}) from None
        session = await self._open(session_id, cwd, additional_directories, mcp_servers, client(session_id), forked)
        state = session.state
        await state.checkpoints.copy_blobs_from(checkpoints)
        if cwd != Path(record.cwd):
            state.restart_prompt()  # the system prompt said where the source worked
        if addition is not None:
            state.set_system_prompt_addition(addition)
        session.save_soon()
        await session.flush()  # stored before the client has its id: any agent can load it at once
        log.info("session %s forked from %s", session_id, source_id)
        return session

    async def ready(self, session: Session) -> None:
        """Once the client has the session's id: get ready for prompts, announce commands, report MCP failures.

        Getting ready runs in the background: the model library for the session's model, and the system
        prompt with its git context, so the first prompt finds them done."""
        self.runner.warm(session)
        self.tasks.start_soon(opening.prepare, session)
        services = session.services
        hub = services.mcp
        if hub is not None:
            services.mcp_prompts = await hub.list_prompts()
        catalog = await self.announce_commands(session, always=True)
        for problem in catalog.problems:
            services.notices.append(("A command or skill from a file cannot be used", problem))
        if hub is not None:
            for status in hub.statuses():
                if status.state == "failed":
                    title = f"The MCP server {status.name} could not be started; its tools are missing"
                    services.notices.append((title, status.error or ""))
        notices, services.notices = services.notices, []
        for title, description in notices:
            await services.bridge.notice("warning", title, description or None)

    async def authenticate(self) -> None:
        """Check the credentials again (from the config without a project file)."""
        config, _ = self.source.load(None)
        self.runner.check(config)

    async def _open(
        self,
        session_id: str,
        cwd: Path,
        additional_directories: list[Path],
        mcp_servers: Sequence[McpServer],
        client: ClientBridge,
        record: SessionRecord | None = None,
    ) -> Session:
        config, problems = self.source.load(cwd)
        self.runner.check(config)
        state = SessionState(
            id=session_id,
            cwd=cwd,
            additional_directories=additional_directories,
            config=config,
            policy=opening.policy(cwd, config),
            checkpoints=Checkpoints(cwd, session_id=session_id),
            mcp_servers=[server.wire() for server in mcp_servers],
        )
        services = SessionServices(
            bridge=RedactingBridge(client, state.replay, state.mark_message),
            tasks=self.tasks,
            notices=[("The project config was left out", problem) for problem in problems],
        )
        session = Session(state, services)
        services.jobs.on_end = opening.job_ended(wake.Starter(self.tasks, self.runner), session)
        services.switch_mode = lambda mode: self.set_option(session, "mode", mode)
        try:
            await self._sandbox(session)
            if (swept := await isolated.sweep(cwd)) is not None:  # sub-agents' worktrees an agent that died left
                services.notices.append(swept)
            await observers.observe(session, config)  # its language servers, hooks and telemetry
            if mcp_servers:
                await opening.connect_mcp(session, mcp_servers, self.runner)
            if record is not None:
                state.restore(record)
            fell_back = state.set_sandboxed(services.sandbox is not None)
            if services.sandbox_problem is not None:
                services.notices.append(sandboxing.not_sandboxed_notice(services.sandbox_problem, fell_back=fell_back))
        except BaseException:
            with anyio.CancelScope(shield=True):
                await session.aclose()
            raise
        if self.store is not None:
            services.saver = Saver(self.store, state.to_record, self.tasks, opening.saving_failed(session))
        self.sessions[session_id] = session
        return session

    async def _sandbox(self, session: Session) -> None:
        services = session.services
        store_root = self.store.root if self.store is not None else None
        services.sandbox, services.sandbox_problem = await sandboxing.open_sandbox(session, store_root)
        if services.sandbox is not None:
            services.closers.append(services.sandbox.aclose)

    async def _load_record(self, session_id: str) -> SessionRecord:
        if self.store is None:
            raise ResourceNotFound(
                f"Session not found: {session_id} (sessions are not stored)", {"sessionId": session_id}
            )
        try:
            return await anyio.to_thread.run_sync(self.store.load, session_id)
        except (SessionNotFound, InvalidSessionId):
            raise ResourceNotFound(f"Session not found: {session_id}", {"sessionId": session_id}) from None
        except StoreError as exc:
            raise InternalError(f"Session {session_id} cannot be loaded: {exc}") from None

    # ---- using --------------------------------------------------------------------------------

    def get(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise ResourceNotFound(f"Session not found: {session_id}", {"sessionId": session_id})
        return session

    async def prompt(
        self,
        session: Session,
        prompt: Sequence[ContentBlock],
        report: TurnReport | None = None,
        ready: Callable[[], bool] | None = None,
    ) -> TurnReport:
        """Run the prompt's turn (after any before it); its report (`report`, if given: it is filled in as the turn
        goes, so it holds what was spent even if the caller is cancelled), stop reason included. `ready` is asked
        when its place comes: False, and it does not run (a queued message revoked meanwhile)."""
        report = report or TurnReport()

        async def turn() -> StopReason:
            if ready is not None and not ready():
                return "end_turn"
            await self.announce_commands(session)  # a command file added since is there for the next prompt
            await rewinding.announce(session, session.state.cursor_here("before", report.user_message_id))
            try:
                return await self.runner.run_turn(session, prompt, report)
            finally:
                with anyio.CancelScope(shield=True):
                    await rewinding.announce_after_turn(session)

        report.stop_reason = await session.run_turn(turn, by_user=report.by_user)
        await wake.turn_ended(wake.Starter(self.tasks, self.runner), session)
        return report

    async def rewind(
        self,
        session: Session,
        point: tuple[str | None, str | None],
        mode: rewinding.Mode,
        *,
        dry_run: bool = False,
        on_conflict: rewinding.OnConflict = "ask",
    ) -> rewinding.Rewound:
        """Go back to a cursor, or to before a user message (`point`: cursor id, message id), in place; a dry run
        changes nothing and leaves the running turn alone, a real one cancels it first. InvalidParams for an
        unknown point, InvalidRequest when it cannot be carried out."""
        outcome: rewinding.Rewound | None = None

        async def job() -> None:
            nonlocal outcome
            cursor = rewinding.find_cursor(session, *point)
            outcome = await rewinding.rewind(session, cursor, mode, dry_run=dry_run, on_conflict=on_conflict)

        try:
            await (job() if dry_run else session.between_turns(job))
        except rewinding.RewindFailed as exc:
            raise InvalidRequest(str(exc)) from None
        assert outcome is not None
        if outcome.rewound:
            await session.flush()
        return outcome

    async def announce_commands(self, session: Session, *, always: bool = False) -> extensions.Catalog:
        """Tell the client the session's slash commands when they changed (or `always`); the commands and skills
        from files, as read now."""
        services = session.services
        refuse = session.turn_context().reading_refused
        load = functools.partial(extensions.load_catalog, session.state.cwd, refuse=refuse)
        catalog = await anyio.to_thread.run_sync(load)
        listed = commands.advertised(session, catalog)
        if always or listed != services.commands_shown:
            services.commands_shown = listed
            await services.bridge.update(AvailableCommandsUpdate(available_commands=listed))
        return catalog

    async def resume(self, session: Session, report: TurnReport | None = None) -> TurnReport:
        """Go on from where the session's last turn stopped for want of a permission: the stopped call runs now;
        the turn's report, as `prompt` gives it."""
        report = report or TurnReport()
        report.stop_reason = await session.run_turn(lambda: self.runner.resume_turn(session, report))
        return report

    async def steer(self, session: Session, prompt: Sequence[ContentBlock], *, prompt_required: bool) -> Steered:
        """A message the user sent while a turn may be running: into that turn, at its next model request (`taken`,
        once it is in the conversation). With no turn to take it (none runs, or it ended first), `prompt_required`
        leaves the message to the client (`no_turn`), else it starts a turn of its own in the background
        (`started`), which session/cancel cancels like any other. RequestCancelled if the turn it waited for was
        cancelled: it never reached the model."""
        steer = session.services.steering.offer(prompt)
        if steer is not None:
            await steer.settled.wait()
            if steer.outcome == "taken":
                return Steered("taken", steer.message_id)
            if steer.outcome == "cancelled":
                raise RequestCancelled("The turn was cancelled before the message reached the model; it was not sent.")
        if prompt_required:
            return Steered("no_turn")
        self.tasks.start_soon(self._steered_turn, session, prompt)
        return Steered("started")

    async def _steered_turn(self, session: Session, prompt: Sequence[ContentBlock]) -> None:
        """A turn started by a message sent while none ran: no prompt request answers for it."""
        try:
            await self.prompt(session, prompt)
        except RpcError as exc:
            await session.services.bridge.notice("error", "The message could not be answered", exc.message)
        except Exception:
            log.exception("session %s: a turn started by a message sent meanwhile failed", session.id)
        finally:
            session.response_sent()

    async def prompt_answered(self, session: Session) -> None:
        """The prompt's response is written: the turn's bill and last save go ahead (they waited not to delay it)."""
        session.response_sent()

    async def set_option(self, session: Session, config_id: str, value: str | bool) -> None:
        """Change a config option (mode, model, reasoning effort, auto-compaction); tell the client and save when it
        changed."""
        if not apply_option(session.state, config_id, value, booleans=session.services.bridge.supports_boolean_options):
            return
        log.info("session %s: %s = %s", session.id, config_id, value)
        session.save_soon()
        bridge = session.services.bridge
        if config_id == "mode":
            await bridge.update(CurrentModeUpdate(current_mode_id=session.state.policy.mode))
        await bridge.update(ConfigOptionUpdate(config_options=session_options(session)))

    def cancel(self, session_id: str) -> None:
        """Cancel a session's running turn, or one sub-agent of a running turn by its own session id."""
        session = self.sessions.get(session_id)
        if session is not None:
            session.cancel()
        elif not any(open_session.cancel_child(session_id) for open_session in self.sessions.values()):
            log.warning("session/cancel for unknown session %s", session_id)

    # ---- closing and the store ----------------------------------------------------------------

    async def close(self, session_id: str) -> None:
        session = self.get(session_id)
        del self.sessions[session_id]
        await session.aclose()
        log.info("session %s closed", session_id)

    async def delete(self, session_id: str) -> None:
        session = self.sessions.pop(session_id, None)
        if session is not None:
            await session.aclose()
        if self.store is not None:
            with contextlib.suppress(InvalidSessionId):  # it never existed: deleting it succeeds silently
                await anyio.to_thread.run_sync(self.store.delete, session_id)

    async def list(self, cwd: str | None, cursor: str | None) -> tuple[list[SessionSummary], str | None]:
        """One page of stored sessions (InvalidCursor for a cursor that is not ours)."""
        if self.store is None:
            return [], None
        return await anyio.to_thread.run_sync(self.store.list, cwd, cursor)

    def cancel_all(self) -> None:
        """Cancel every running turn (the client is going away)."""
        for session in self.sessions.values():
            session.cancel()

    async def aclose(self) -> None:
        """Cancel every turn and close every session."""
        sessions, self.sessions = list(self.sessions.values()), {}
        async with anyio.create_task_group() as task_group:
            for session in sessions:
                task_group.start_soon(session.aclose)
