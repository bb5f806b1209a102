"""`AcpAgent`: the agent side of ACP after `initialize`. It maps each method to a handler and owns the sessions.

It validates params with the pydantic models in `protocol.schema` (a bad field becomes -32602 at the
connection), keeps the client's capabilities from `initialize` (answered by `acp.handshake`), and hands
prompts to the sessions.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup

from coder_agent import persistence
from coder_agent.acp import handshake
from coder_agent.acp.client import AcpClient, Peer
from coder_agent.acp.presentation import mode_state
from coder_agent.errors import InternalError, InvalidParams, MethodNotFound, ResourceNotFound
from coder_agent.options import apply_option, config_options
from coder_agent.permissions import MODES
from coder_agent.protocol.schema import (
    AuthenticateRequest,
    CancelNotification,
    ClientCapabilities,
    ConfigOptionUpdate,
    CurrentModeUpdate,
    ListSessionsRequest,
    ListSessionsResponse,
    LoadSessionRequest,
    LoadSessionResponse,
    NewSessionRequest,
    NewSessionResponse,
    PromptRequest,
    PromptResponse,
    ResumeSessionRequest,
    SessionInfo,
    SessionRequest,
    SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse,
    SetSessionModeRequest,
)
from coder_agent.session import Session
from coder_agent.store import InvalidCursor, InvalidSessionId, SessionNotFound, SessionRecord, SessionStore, StoreError
from coder_agent.turn import TurnRunner

log = logging.getLogger(__name__)

Handler = Callable[[Any], Awaitable[dict[str, Any]]]

AFTER_RESPONSE_DELAY = 0.02


class AcpAgent:
    """The agent's method table and session registry; a `rpc.Dispatcher`."""

    def __init__(self, runner: TurnRunner, store: SessionStore | None = None) -> None:
        self.runner = runner
        self.store = store
        self.peer: Peer | None = None
        self.client_capabilities = ClientCapabilities()
        self.sessions: dict[str, Session] = {}
        self._tasks: TaskGroup | None = None
        self._requests: dict[str, Handler] = {
            "authenticate": self.authenticate,
            "session/new": self.new_session,
            "session/prompt": self.prompt,
            "session/set_mode": self.set_mode,
            "session/set_config_option": self.set_config_option,
            "session/load": self.load_session,
            "session/resume": self.resume_session,
            "session/list": self.list_sessions,
            "session/close": self.close_session,
            "session/delete": self.delete_session,
        }

    def bind(self, peer: Peer, tasks: TaskGroup | None = None) -> None:
        """Attach the connection the agent talks to the client through, and a task group for follow-up work."""
        self.peer = peer
        self._tasks = tasks

    # ---- Dispatcher -----------------------------------------------------------------------------

    async def handle_request(self, method: str, params: Any) -> Any:
        handler = self._requests.get(method)
        if handler is None:
            raise MethodNotFound(f"Method not found: {method}")
        return await handler(params)

    async def handle_notification(self, method: str, params: Any) -> None:
        if method == "session/cancel":
            request = CancelNotification.model_validate(params)
            session = self.sessions.get(request.session_id)
            if session is None:
                log.warning("session/cancel for unknown session %s", request.session_id)
            else:
                session.cancel()
        else:
            log.debug("ignoring notification %s", method)

    # ---- methods --------------------------------------------------------------------------------

    def set_client_capabilities(self, raw: dict[str, Any]) -> None:
        """Record what the client advertised in `initialize`; a malformed part counts as not advertised."""
        try:
            self.client_capabilities = ClientCapabilities.model_validate(raw)
        except ValueError:
            log.warning("malformed clientCapabilities; treating them as empty")
            self.client_capabilities = ClientCapabilities()

    async def authenticate(self, params: Any) -> dict[str, Any]:
        request = AuthenticateRequest.model_validate(params)
        if request.method_id != handshake.ENV_AUTH_METHOD["id"]:
            raise InvalidParams(f"Invalid params: methodId: unknown auth method {request.method_id!r}")
        await self.runner.authenticate()
        return {}

    async def new_session(self, params: Any) -> dict[str, Any]:
        request = NewSessionRequest.model_validate(params)
        session = await self._open(f"sess_{uuid.uuid4().hex}", request.cwd, request.additional_directories, request)
        log.info("session %s opened in %s", session.id, session.cwd)
        self._follow_up(session)
        return NewSessionResponse(session_id=session.id, **self._session_state(session)).wire()

    async def load_session(self, params: Any) -> dict[str, Any]:
        request = LoadSessionRequest.model_validate(params)
        return await self._reopen(request.session_id, request.cwd, request.additional_directories, request, True)

    async def resume_session(self, params: Any) -> dict[str, Any]:
        request = ResumeSessionRequest.model_validate(params)
        return await self._reopen(request.session_id, request.cwd, request.additional_directories, request, False)

    async def _reopen(self, session_id: str, cwd: str, extra: list[str], request: Any, replay: bool) -> dict[str, Any]:
        """session/load (with replay) and session/resume (without): the stored session, live again."""
        record = await self._load_record(session_id)
        previous = self.sessions.pop(session_id, None)
        if previous is not None:
            await previous.aclose()  # replaced: its turn, terminals and MCP servers end here
        session = await self._open(session_id, cwd, extra, request, record)
        if replay:
            assert self.peer is not None
            for event in session.events:
                await self.peer.notify("session/update", {"sessionId": session.id, "update": event})
        log.info("session %s %s (%d messages)", session.id, "loaded" if replay else "resumed", len(record.messages))
        self._follow_up(session)
        return LoadSessionResponse(**self._session_state(session)).wire()

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

    async def _open(
        self, session_id: str, cwd_text: str, extra_dirs: list[str], request: Any, record: SessionRecord | None = None
    ) -> Session:
        cwd = _absolute_dir("cwd", cwd_text)
        extra = [_absolute_dir(f"additionalDirectories.{i}", d) for i, d in enumerate(extra_dirs)]
        assert self.peer is not None, "bind() the agent to a connection first"
        session = Session(
            id=session_id,
            cwd=cwd,
            client=AcpClient(self.peer, self.client_capabilities, session_id),
            runner=self.runner,
            additional_directories=extra,
            mcp_servers=list(request.mcp_servers),
        )
        session.tasks = self._tasks
        try:
            await self.runner.open_session(session)
            if record is not None:
                persistence.restore(session, record)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await session.aclose()
            raise
        session.client.observer = lambda update: persistence.record_update(session.events, update)
        if self.store is not None:
            session.saver = persistence.Saver(session, self.store)
        self.sessions[session_id] = session
        return session

    @staticmethod
    def _session_state(session: Session) -> dict[str, Any]:
        if session.permissions is None:
            return {}
        return {"modes": mode_state(session.permissions.mode), "config_options": config_options(session)}

    async def list_sessions(self, params: Any) -> dict[str, Any]:
        request = ListSessionsRequest.model_validate(params or {})
        if request.cwd is not None and not Path(request.cwd).is_absolute():
            raise InvalidParams(f"Invalid params: cwd: must be an absolute path, got {request.cwd!r}")
        if self.store is None:
            return ListSessionsResponse(sessions=[]).wire()
        try:
            page, cursor = await anyio.to_thread.run_sync(self.store.list, request.cwd, request.cursor)
        except InvalidCursor:
            raise InvalidParams("Invalid params: cursor: not a cursor from session/list") from None
        sessions = [
            SessionInfo(
                session_id=s.session_id,
                cwd=s.cwd,
                title=s.title,
                updated_at=s.updated_at,
                additional_directories=s.additional_directories or None,
            )
            for s in page
        ]
        return ListSessionsResponse(sessions=sessions, next_cursor=cursor).wire()

    async def close_session(self, params: Any) -> dict[str, Any]:
        request = SessionRequest.model_validate(params)
        session = self._session(request)
        del self.sessions[session.id]
        await session.aclose()
        log.info("session %s closed", session.id)
        return {}

    async def delete_session(self, params: Any) -> dict[str, Any]:
        request = SessionRequest.model_validate(params)
        session = self.sessions.pop(request.session_id, None)
        if session is not None:
            await session.aclose()
        if self.store is not None:
            with contextlib.suppress(InvalidSessionId):  # it never existed: deleting it succeeds silently
                await anyio.to_thread.run_sync(self.store.delete, request.session_id)
        return {}

    async def prompt(self, params: Any) -> dict[str, Any]:
        request = PromptRequest.model_validate(params)
        session = self._session(request)
        stop_reason = await session.prompt(request.prompt)
        return PromptResponse(stop_reason=stop_reason).wire()

    async def set_mode(self, params: Any) -> dict[str, Any]:
        request = SetSessionModeRequest.model_validate(params)
        session = self._session(request)
        if session.permissions is None:
            raise MethodNotFound("Method not found: this session has no modes")
        if request.mode_id not in MODES:
            raise InvalidParams(f"Invalid params: modeId: unknown mode {request.mode_id!r}; one of {', '.join(MODES)}")
        await self._apply(session, "mode", request.mode_id)
        return {}

    async def set_config_option(self, params: Any) -> dict[str, Any]:
        request = SetSessionConfigOptionRequest.model_validate(params)
        session = self._session(request)
        await self._apply(session, request.config_id, request.value)
        return SetSessionConfigOptionResponse(config_options=config_options(session)).wire()

    async def _apply(self, session: Session, config_id: str, value: str) -> None:
        if not apply_option(session, config_id, value):
            return
        log.info("session %s: %s = %s", session.id, config_id, value)
        if config_id == "mode":
            await session.client.update(CurrentModeUpdate(current_mode_id=value))
        await session.client.update(ConfigOptionUpdate(config_options=config_options(session)))

    # ---- helpers --------------------------------------------------------------------------------

    def _session(self, request: SessionRequest) -> Session:
        session = self.sessions.get(request.session_id)
        if session is None:
            raise ResourceNotFound(f"Session not found: {request.session_id}", {"sessionId": request.session_id})
        return session

    def _follow_up(self, session: Session) -> None:
        """After the response to the request that opened the session: announce its commands and the like."""
        if self._tasks is not None:
            self._tasks.start_soon(self._after_response, session)

    async def _after_response(self, session: Session) -> None:
        await anyio.sleep(AFTER_RESPONSE_DELAY)  # let the session/new response reach the client first
        try:
            await self.runner.session_ready(session)
        except Exception:
            log.exception("session %s: follow-up after session/new failed", session.id)

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


def _absolute_dir(field: str, value: str) -> Path:
    path = Path(value)
    if not path.is_absolute():
        raise InvalidParams(f"Invalid params: {field}: must be an absolute path, got {value!r}")
    return path
