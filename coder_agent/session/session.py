"""A session: its saved state, its live services, and its turns — at most one running at a time.

A session is three parts, each with one writer: `SessionState` (what is stored; changed through its own
methods), `SessionServices` (the bridge, background tasks and saves, MCP servers; composed by the session
manager), and for each turn a frozen `TurnContext` (`turn_context`) that the turn, the tool executor and the
tools get instead of the session. This module owns what is left: the turns themselves.

A prompt that arrives while a turn runs waits for it (prompts are queued in arrival order, never
rejected): editors such as Zed send `session/cancel` and then the next prompt at once, and the new prompt
must not fail because the old turn is still winding down. `session/cancel` cancels the running turn and
every prompt queued before it; each of those prompts answers `cancelled`, exactly once; with a sub-agent's session id
it cancels that sub-agent alone (`child`, `cancel_child`). What MCP servers ask
of the user meanwhile (`side_request`) is cancelled with the turn.

What else needs the session to itself takes the same place in line: a rewind (`between_turns`: the running turn is
cancelled first), and a turn the agent starts on its own (`run_turn` with `by_user=False`), which gives way to any
prompt of the user's waiting (`user_waiting`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import anyio

from coder_agent.errors import RequestCancelled
from coder_agent.protocol.schema import StopReason
from coder_agent.session.services import SessionServices
from coder_agent.session.state import SessionState
from coder_agent.session.turn_context import Job, TurnContext

log = logging.getLogger(__name__)

CLOSE_SAVE_TIMEOUT = 5.0


@dataclass(eq=False)
class Session:
    """One ACP session."""

    state: SessionState
    services: SessionServices
    _after_response: list[Job] = field(default_factory=list)
    _side_requests: set[anyio.CancelScope] = field(default_factory=set)
    _turn_lock: anyio.Lock = field(default_factory=anyio.Lock)
    _turn_scope: anyio.CancelScope | None = None
    _children: dict[str, anyio.CancelScope] = field(default_factory=dict)
    _cancels: int = 0
    _closed: bool = False
    _users_waiting: int = 0

    @property
    def id(self) -> str:
        return self.state.id

    @property
    def turn_running(self) -> bool:
        return self._turn_scope is not None

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def user_waiting(self) -> bool:
        """A prompt of the user's is running or waiting for its turn (a turn of the agent's own gives way to it)."""
        return self._users_waiting > 0

    def turn_context(self) -> TurnContext:
        """The session as a turn (or a call outside one, like an MCP server's sampling request) sees it now."""
        state, services = self.state, self.services
        return TurnContext(
            session_id=state.id,
            cwd=state.cwd,
            roots=tuple(state.roots),
            config=state.config,
            policy=state.policy,
            bridge=services.bridge,
            files=services.files,
            checkpoints=state.checkpoints,
            conversation=state.conversation,
            spending=state.spending,
            system_prompt_addition=state.system_prompt_addition,
            mcp=services.mcp,
            sandbox=services.sandbox,
            jobs=services.jobs,
            lsp=services.lsp,
            tasks=services.tasks,
            steering=services.steering,
            auto_compact=state.auto_compact,
            save_soon=self.save_soon,
            after_response=self.after_response,
            unattended=state.unattended,
            switch_mode=services.switch_mode,
            hooks=services.hooks,
            telemetry=services.telemetry,
        )

    # ---- saving ---------------------------------------------------------------------------------

    def save_soon(self) -> None:
        """Ask for a save of the session's current state, in the background."""
        self.services.saver.soon()

    async def flush(self) -> None:
        """Wait until the session's state is saved."""
        await self.services.saver.flush()

    # ---- turns ----------------------------------------------------------------------------------

    def after_response(self, job: Job) -> None:
        """Run `job` in the background once the prompt's response is written (a turn's bill, its last save)."""
        self._after_response.append(job)

    def response_sent(self) -> None:
        """The prompt's response is out: start what waited for it."""
        jobs, self._after_response = self._after_response, []
        for job in jobs:
            self.services.tasks.start_soon(job)

    async def run_turn(self, turn: Callable[[], Awaitable[StopReason]], *, by_user: bool = True) -> StopReason:
        """Run one turn after any turn before it; `cancelled` if a cancel came first or during it. `by_user`: the
        user's prompt (False: one the agent starts itself)."""
        self.response_sent()  # anything a response that was never written left behind
        cancels_at_arrival = self._cancels
        self._users_waiting += by_user
        try:
            return await self._run_turn(turn, cancels_at_arrival)
        finally:
            self._users_waiting -= by_user

    async def between_turns(self, job: Callable[[], Awaitable[None]]) -> None:
        """Run `job` with the session to itself: the running turn (and the prompts queued behind it) cancelled
        first, the next ones waiting for it. RequestCancelled if the session closed first."""
        self.cancel()
        async with self._turn_lock:
            if self._closed:
                raise RequestCancelled("The session closed first.")
            await job()

    async def idle(self) -> None:
        """Wait until no turn runs or waits for its place (returns at once when none does)."""
        async with self._turn_lock:
            pass

    async def _run_turn(self, turn: Callable[[], Awaitable[StopReason]], cancels_at_arrival: int) -> StopReason:
        async with self._turn_lock:
            if self._closed or self._cancels != cancels_at_arrival:
                return "cancelled"
            scope = anyio.CancelScope()
            self._turn_scope = scope
            stop_reason: StopReason = "cancelled"
            try:
                with scope:
                    stop_reason = await turn()
            finally:
                self._turn_scope = None
            if scope.cancelled_caught or scope.cancel_called:
                return "cancelled"
            return stop_reason

    @contextmanager
    def child(self, child_id: str) -> Iterator[anyio.CancelScope]:
        """The scope a sub-agent of the running turn works in: `cancel_child` cancels it alone (a cancel of the turn
        reaches it as well, from outside)."""
        scope = anyio.CancelScope()
        self._children[child_id] = scope
        try:
            with scope:
                yield scope
        finally:
            self._children.pop(child_id, None)

    def cancel_child(self, child_id: str) -> bool:
        """Cancel one running sub-agent (`session/cancel` with its session id); False if none runs by that id."""
        scope = self._children.get(child_id)
        if scope is None:
            return False
        log.info("session %s: cancelling its sub-agent %s", self.id, child_id)
        scope.cancel()
        return True

    @contextmanager
    def side_request(self) -> Iterator[anyio.CancelScope]:
        """A scope for what an MCP server asks of the user or the model meanwhile; `cancel` cancels it too."""
        scope = anyio.CancelScope()
        self._side_requests.add(scope)
        try:
            with scope:
                yield scope
        finally:
            self._side_requests.discard(scope)

    def cancel(self) -> None:
        """Cancel the running turn, the prompts queued behind it, and what MCP servers are asking meanwhile."""
        self._cancels += 1
        for scope in list(self._side_requests):
            scope.cancel()
        if self._turn_scope is not None:
            log.info("session %s: cancelling the running turn", self.id)
            self._turn_scope.cancel()

    async def aclose(self) -> None:
        """Cancel all work, save, and free what the session holds."""
        self._closed = True
        self.cancel()
        async with self._turn_lock:
            pass
        self.response_sent()
        with anyio.move_on_after(CLOSE_SAVE_TIMEOUT):
            await self.flush()
        await self.services.aclose(self.id)
