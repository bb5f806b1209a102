"""`AcpAgent`: the agent side of ACP after `initialize`. It maps each method to a handler and owns the sessions.

It validates params with the pydantic models in `acp.schema` (a bad field becomes -32602 at the
connection), keeps the client's capabilities from `initialize` (answered by `acp.handshake`), and hands
prompts to the sessions.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from coder_agent.acp import handshake
from coder_agent.acp.client import AcpClient, Peer
from coder_agent.acp.schema import (
    AuthenticateRequest,
    CancelNotification,
    ClientCapabilities,
    ConfigOptionUpdate,
    CurrentModeUpdate,
    NewSessionRequest,
    NewSessionResponse,
    PromptRequest,
    PromptResponse,
    SessionConfigOption,
    SessionRequest,
    SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse,
    SetSessionModeRequest,
)
from coder_agent.errors import InvalidParams, MethodNotFound, ResourceNotFound
from coder_agent.permissions import MODES, mode_config_option, mode_state
from coder_agent.session import Session
from coder_agent.turn import TurnRunner

log = logging.getLogger(__name__)

Handler = Callable[[Any], Awaitable[dict[str, Any]]]


class AcpAgent:
    """The agent's method table and session registry; a `rpc.Dispatcher`."""

    def __init__(self, runner: TurnRunner) -> None:
        self.runner = runner
        self.peer: Peer | None = None
        self.client_capabilities = ClientCapabilities()
        self.sessions: dict[str, Session] = {}
        self._requests: dict[str, Handler] = {
            "authenticate": self.authenticate,
            "session/new": self.new_session,
            "session/prompt": self.prompt,
            "session/set_mode": self.set_mode,
            "session/set_config_option": self.set_config_option,
        }

    def bind(self, peer: Peer) -> None:
        """Attach the connection the agent talks to the client through."""
        self.peer = peer

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
        cwd = _absolute_dir("cwd", request.cwd)
        extra = [_absolute_dir(f"additionalDirectories.{i}", d) for i, d in enumerate(request.additional_directories)]
        session_id = f"sess_{uuid.uuid4().hex}"
        assert self.peer is not None, "bind() the agent to a connection first"
        session = Session(
            id=session_id,
            cwd=cwd,
            client=AcpClient(self.peer, self.client_capabilities, session_id),
            runner=self.runner,
            additional_directories=extra,
            mcp_servers=list(request.mcp_servers),
        )
        await self.runner.open_session(session)
        self.sessions[session_id] = session
        log.info("session %s opened in %s", session_id, cwd)
        response = NewSessionResponse(session_id=session_id)
        if session.permissions is not None:
            response.modes = mode_state(session.permissions.mode)
            response.config_options = self._config_options(session)
        return response.wire()

    async def prompt(self, params: Any) -> dict[str, Any]:
        request = PromptRequest.model_validate(params)
        session = self._session(request)
        stop_reason = await session.prompt(request.prompt)
        return PromptResponse(stop_reason=stop_reason).wire()

    async def set_mode(self, params: Any) -> dict[str, Any]:
        request = SetSessionModeRequest.model_validate(params)
        await self._switch_mode(self._session(request), request.mode_id, "modeId")
        return {}

    async def set_config_option(self, params: Any) -> dict[str, Any]:
        request = SetSessionConfigOptionRequest.model_validate(params)
        session = self._session(request)
        if request.config_id != "mode" or session.permissions is None:
            raise InvalidParams(f"Invalid params: configId: unknown config option {request.config_id!r}")
        await self._switch_mode(session, request.value, "value")
        return SetSessionConfigOptionResponse(config_options=self._config_options(session)).wire()

    async def _switch_mode(self, session: Session, mode: str, field: str) -> None:
        if session.permissions is None:
            raise MethodNotFound("Method not found: this session has no modes")
        if mode not in MODES:
            raise InvalidParams(f"Invalid params: {field}: unknown mode {mode!r}; one of {', '.join(MODES)}")
        changed = session.permissions.mode != mode
        session.permissions.mode = mode
        log.info("session %s: mode %s", session.id, mode)
        if changed:
            await session.client.update(CurrentModeUpdate(current_mode_id=mode))
            await session.client.update(ConfigOptionUpdate(config_options=self._config_options(session)))

    @staticmethod
    def _config_options(session: Session) -> list[SessionConfigOption]:
        assert session.permissions is not None
        return [mode_config_option(session.permissions.mode)]

    # ---- helpers --------------------------------------------------------------------------------

    def _session(self, request: SessionRequest) -> Session:
        session = self.sessions.get(request.session_id)
        if session is None:
            raise ResourceNotFound(f"Session not found: {request.session_id}", {"sessionId": request.session_id})
        return session

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
