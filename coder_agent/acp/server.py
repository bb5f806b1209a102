"""`AcpServer`: the agent side of ACP after `initialize` — the method table, params in, results out.

Each method validates its params with the pydantic models in `protocol.schema` (a bad field becomes
-32602 at the connection), turns them into calls on the `SessionManager`, and answers in ACP's terms.
It keeps the client's capabilities from `initialize` (answered by `acp.handshake`) and gives each
session its `AcpClientBridge`. What happens after the response (announcing commands, replays) is ordered by
the connection (`FollowedBy`), never by waiting. Besides ACP's methods (the unstable `session/fork` among them)
it answers the `_session/steering` extension of Claude's adapter and codex-acp, and rewinds (`_session/rewind` and
`_session/rewind_points`, the names of claude-agent-acp's PR #966, taking the cursors of `cursor_update` too) and
messages queued for after the running turn (`_session/inject`, `_session/revoke_inject`, `_session/replace_inject`:
the v2 draft's shape).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from coder_agent import secrets
from coder_agent.acp import handshake
from coder_agent.acp.client_bridge import AcpClientBridge, Peer
from coder_agent.acp.presentation import mode_state, turn_usage
from coder_agent.agent import queueing
from coder_agent.agent.manager import SessionManager
from coder_agent.errors import InvalidParams, MethodNotFound, RpcError
from coder_agent.permissions import MODES
from coder_agent.protocol.content import TextContent
from coder_agent.protocol.schema import (
    AuthenticateRequest,
    CancelNotification,
    ClientCapabilities,
    ClientInstructions,
    ForkSessionRequest,
    InjectRequest,
    ListSessionsRequest,
    ListSessionsResponse,
    LoadSessionRequest,
    LoadSessionResponse,
    NewSessionRequest,
    NewSessionResponse,
    PendingMessageRequest,
    PromptRequest,
    PromptResponse,
    ResumeSessionRequest,
    RewindRequest,
    SessionInfo,
    SessionRequest,
    SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse,
    SetSessionModeRequest,
    SteeringRequest,
    SteeringResponse,
)
from coder_agent.rpc import FollowedBy
from coder_agent.session.conversation import SystemPromptAddition
from coder_agent.session.options import session_options
from coder_agent.session.rewind import rewind_points
from coder_agent.session.session import Session
from coder_agent.session.turn_runner import TurnReport
from coder_agent.store import InvalidCursor

log = logging.getLogger(__name__)

Handler = Callable[[Any], Awaitable[Any]]

STEERING_METHOD = handshake.STEERING_METHOD
REWIND_METHOD, REWIND_POINTS_METHOD = handshake.REWIND_METHODS
INJECT_METHOD, REVOKE_METHOD, REPLACE_METHOD = handshake.INJECT_METHODS
MESSAGE_ID = re.compile(r"[A-Za-z0-9_.:-]{1,128}")
SYSTEM_PROMPT_MODES = ("append", "override")
"""The `systemPrompt` modes this agent takes (advertised in `initialize`); any other is refused."""


class AcpServer:
    """The agent's method table; a `rpc.Dispatcher`."""

    def __init__(self, manager: SessionManager, peer: Peer) -> None:
        self.manager = manager
        self.peer = peer
        self.client_capabilities = ClientCapabilities()
        self._requests: dict[str, Handler] = {
            "authenticate": self.authenticate,
            "logout": self.logout,
            "session/new": self.new_session,
            "session/prompt": self.prompt,
            "session/set_mode": self.set_mode,
            "session/set_config_option": self.set_config_option,
            "session/load": self.load_session,
            "session/resume": self.resume_session,
            "session/fork": self.fork_session,
            "session/list": self.list_sessions,
            "session/close": self.close_session,
            "session/delete": self.delete_session,
            STEERING_METHOD: self.steer,
            REWIND_METHOD: self.rewind,
            REWIND_POINTS_METHOD: self.rewind_points,
            INJECT_METHOD: self.inject,
            REVOKE_METHOD: self.revoke_inject,
            REPLACE_METHOD: self.replace_inject,
        }

    # ---- Dispatcher -----------------------------------------------------------------------------

    async def handle_request(self, method: str, params: Any) -> Any:
        handler = self._requests.get(method)
        if handler is None:
            raise MethodNotFound(f"Method not found: {method}")
        try:
            return await handler(params)
        except RpcError as exc:  # a provider's message may echo the key it was sent
            exc.message = secrets.redact(exc.message)
            raise

    async def handle_notification(self, method: str, params: Any) -> None:
        if method == "session/cancel":
            self.manager.cancel(CancelNotification.model_validate(params).session_id)
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
        """Check the credentials again: the environment's, or what `coder-agent login` stored (a client should not
        call this for the terminal method, and one that does after the login gets the same check)."""
        request = AuthenticateRequest.model_validate(params)
        if request.method_id not in (handshake.ENV_AUTH_METHOD["id"], handshake.LOGIN_AUTH_METHOD["id"]):
            raise InvalidParams(f"Invalid params: methodId: unknown auth method {request.method_id!r}")
        await self.manager.authenticate()
        return {}

    async def logout(self, params: Any) -> dict[str, Any]:
        """`logout`: what `coder-agent login` stored is removed (keys in the environment stay); from then on every
        session, open or new, needs credentials again (`auth_required` names the login)."""
        logins = self.manager.source.logins
        if logins is not None:
            removed = await anyio.to_thread.run_sync(logins.delete)
            log.info("logout: the stored login was removed from %s", ", ".join(removed) or "nowhere (none was stored)")
        return {}

    async def new_session(self, params: Any) -> FollowedBy:
        request = NewSessionRequest.model_validate(params)
        cwd, extra = _folders(request.cwd, request.additional_directories)
        addition = _addition(request.system_prompt, request.meta)
        session = await self.manager.create(cwd, extra, request.mcp_servers, self._client, addition)
        response = NewSessionResponse(session_id=session.id, **_session_state(session)).wire()
        return FollowedBy(response, lambda: self.manager.ready(session))

    async def load_session(self, params: Any) -> FollowedBy:
        request = LoadSessionRequest.model_validate(params)
        cwd, extra = _folders(request.cwd, request.additional_directories)
        addition = _addition(request.system_prompt, request.meta)
        session = await self.manager.reopen(request.session_id, cwd, extra, request.mcp_servers, self._client, addition)
        # The whole history, before the response (as ACP asks), in the terms this client shows.
        compaction = session.services.bridge.supports_compaction_updates
        subagents = self.client_capabilities.subagents is not None
        cursors = set(session.state.conversation.cursors) if self.client_capabilities.shows_cursors else None
        for child, event in session.state.replay.replayed(compaction=compaction, subagents=subagents, cursors=cursors):
            await self.peer.notify("session/update", {"sessionId": child or session.id, "update": event})
        return FollowedBy(LoadSessionResponse(**_session_state(session)).wire(), lambda: self.manager.ready(session))

    async def resume_session(self, params: Any) -> FollowedBy:
        request = ResumeSessionRequest.model_validate(params)
        cwd, extra = _folders(request.cwd, request.additional_directories)
        addition = _addition(request.system_prompt, request.meta)
        session = await self.manager.reopen(request.session_id, cwd, extra, request.mcp_servers, self._client, addition)
        return FollowedBy(LoadSessionResponse(**_session_state(session)).wire(), lambda: self.manager.ready(session))

    async def fork_session(self, params: Any) -> FollowedBy:
        """`session/fork` (unstable): a new session from another's history, whole or up to a message; answered like
        `session/new` (the client already shows that history: it is not replayed)."""
        request = ForkSessionRequest.model_validate(params)
        cwd, extra = _folders(request.cwd, request.additional_directories)
        addition = _addition(request.system_prompt, request.meta)
        session = await self.manager.fork(
            request.session_id,
            cwd,
            extra,
            request.mcp_servers,
            self._client,
            request.message_id,
            addition,
            request.cursor_id,
        )
        response = NewSessionResponse(session_id=session.id, **_session_state(session)).wire()
        return FollowedBy(response, lambda: self.manager.ready(session))

    async def list_sessions(self, params: Any) -> dict[str, Any]:
        request = ListSessionsRequest.model_validate(params or {})
        if request.cwd is not None and not Path(request.cwd).is_absolute():
            raise InvalidParams(f"Invalid params: cwd: must be an absolute path, got {request.cwd!r}")
        try:
            page, cursor = await self.manager.list(request.cwd, request.cursor)
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
        await self.manager.close(SessionRequest.model_validate(params).session_id)
        return {}

    async def delete_session(self, params: Any) -> dict[str, Any]:
        await self.manager.delete(SessionRequest.model_validate(params).session_id)
        return {}

    async def prompt(self, params: Any) -> FollowedBy:
        request = PromptRequest.model_validate(params)
        session = self.manager.get(request.session_id)
        report = await self.manager.prompt(session, request.prompt, TurnReport(**_client_message_id(request.meta)))
        response = PromptResponse(
            stop_reason=report.stop_reason, user_message_id=report.user_message_id, usage=turn_usage(report.spent)
        )
        return FollowedBy(response.wire(), lambda: self.manager.prompt_answered(session))

    async def steer(self, params: Any) -> dict[str, Any]:
        """`_session/steering`: a message for the turn in flight, which the model reads at its next request."""
        request = SteeringRequest.model_validate(params)
        session = self.manager.get(request.session_id)
        steering = (request.meta or {}).get("steering")
        idle = steering.get("idleBehavior") if isinstance(steering, dict) else None
        steered = await self.manager.steer(session, request.prompt, prompt_required=idle == "promptRequired")
        if steered.outcome == "taken":
            response = SteeringResponse(outcome="injected", message_id=steered.message_id)
        elif steered.outcome == "started":
            response = SteeringResponse(outcome="startedNewTurn")
        else:
            response = SteeringResponse(outcome="promptRequired", reason="noRunningTurn")
        return response.wire()

    async def rewind(self, params: Any) -> dict[str, Any]:
        """`_session/rewind`: back to a cursor (or to before a user message), the files, the conversation or both;
        with `prompt`, the edited message is sent from there and the answer comes when its turn ends."""
        request = RewindRequest.model_validate(params)
        session = self.manager.get(request.session_id)
        outcome = await self.manager.rewind(
            session,
            (request.cursor_id, request.message_id),
            request.mode,
            dry_run=request.dry_run,
            on_conflict=request.on_conflict,
        )
        answer = outcome.wire()
        if request.prompt and outcome.rewound:
            report = await self.manager.prompt(session, request.prompt)
            answer.update(stopReason=report.stop_reason, userMessageId=report.user_message_id)
            await self.manager.prompt_answered(session)
        return answer

    async def rewind_points(self, params: Any) -> dict[str, Any]:
        """`_session/rewind_points`: the user messages the session can go back to before, oldest first."""
        session = self.manager.get(SessionRequest.model_validate(params).session_id)
        return {"points": rewind_points(session)}

    async def inject(self, params: Any) -> dict[str, Any]:
        """`_session/inject`: the v2 draft's shape (`mode`, `content`): answered once accepted, with its message's id;
        the steering extension's shape (`prompt`) is `_session/steering` by another name."""
        if isinstance(params, dict) and "prompt" in params and "content" not in params:
            return await self.steer(params)
        request = InjectRequest.model_validate(params)
        session = self.manager.get(request.session_id)
        manager = self.manager
        message_id = await queueing.inject(manager.tasks, manager.prompt, session, request.mode, request.content)
        return {"messageId": message_id}

    async def revoke_inject(self, params: Any) -> dict[str, Any]:
        """`_session/revoke_inject`: withdraw a pending message (retrying a revoke succeeds)."""
        request = PendingMessageRequest.model_validate(params)
        queueing.revoke(self.manager.get(request.session_id), request.message_id)
        return {}

    async def replace_inject(self, params: Any) -> dict[str, Any]:
        """`_session/replace_inject`: new content for a pending message, same id and place."""
        request = PendingMessageRequest.model_validate(params)
        if not request.content:
            raise InvalidParams("Invalid params: content: give the message's new content")
        queueing.replace(self.manager.get(request.session_id), request.message_id, request.content)
        return {"messageId": request.message_id}

    async def set_mode(self, params: Any) -> dict[str, Any]:
        request = SetSessionModeRequest.model_validate(params)
        session = self.manager.get(request.session_id)
        if request.mode_id not in MODES:
            raise InvalidParams(f"Invalid params: modeId: unknown mode {request.mode_id!r}; one of {', '.join(MODES)}")
        await self.manager.set_option(session, "mode", request.mode_id)
        return {}

    async def set_config_option(self, params: Any) -> dict[str, Any]:
        request = SetSessionConfigOptionRequest.model_validate(params)
        session = self.manager.get(request.session_id)
        await self.manager.set_option(session, request.config_id, request.value)
        return SetSessionConfigOptionResponse(config_options=session_options(session)).wire()

    # ---- helpers --------------------------------------------------------------------------------

    def _client(self, session_id: str) -> AcpClientBridge:
        return AcpClientBridge(self.peer, self.client_capabilities, session_id)


def _client_message_id(meta: dict[str, Any] | None) -> dict[str, Any]:
    """A prompt's `_meta.messageId` (the id a client that rewinds, such as the Zed patch, gave the message) as its
    user message's id, where it is a plausible id; otherwise the agent makes one."""
    value = (meta or {}).get("messageId")
    if isinstance(value, str) and MESSAGE_ID.fullmatch(value):
        return {"user_message_id": value}
    return {}


def _session_state(session: Session) -> dict[str, Any]:
    policy = session.state.policy
    return {"modes": mode_state(policy.mode, policy.sandboxed), "config_options": session_options(session)}


def _addition(system_prompt: ClientInstructions | None, meta: dict[str, Any] | None) -> SystemPromptAddition | None:
    """The client's instructions as the session's (None: keep what the session has), in the shapes clients send:
    `systemPrompt` as the SDK's unstable schema has it (an object with a mode), or as a string (the RFD "Client-
    Provided System Prompt": added to the agent's own), else `_meta.systemPrompt` as Claude's adapter reads it (a
    string replaces the agent's instructions, `{"append": …}` adds to them). InvalidParams naming the field for a
    mode, a block or a shape this agent cannot take, or empty instructions."""
    if system_prompt is None:
        return _meta_addition((meta or {}).get("systemPrompt"))
    if isinstance(system_prompt, str):
        return _text_addition("systemPrompt", system_prompt, replaces=False)
    if system_prompt.mode not in SYSTEM_PROMPT_MODES:
        raise InvalidParams(
            f"Invalid params: systemPrompt.mode: {system_prompt.mode!r} is not supported; use append or override"
        )
    texts: list[str] = []
    for i, block in enumerate(system_prompt.content):
        if not isinstance(block, TextContent):
            raise InvalidParams(f"Invalid params: systemPrompt.content.{i}: only text blocks are supported")
        texts.append(block.text.strip())
    return _text_addition("systemPrompt.content", "\n\n".join(texts), replaces=system_prompt.mode == "override")


def _meta_addition(value: Any) -> SystemPromptAddition | None:
    """`_meta.systemPrompt` of Claude's adapter (acpx's `--append-system-prompt` sends `{"append": …}`)."""
    if value is None:
        return None
    if isinstance(value, str):
        return _text_addition("_meta.systemPrompt", value, replaces=True)
    if isinstance(value, dict) and isinstance(value.get("append"), str):
        return _text_addition("_meta.systemPrompt.append", value["append"], replaces=False)
    raise InvalidParams(
        "Invalid params: _meta.systemPrompt: give a string (instructions that replace the agent's) or "
        '{"append": "…"} (instructions added to them)'
    )


def _text_addition(field: str, text: str, *, replaces: bool) -> SystemPromptAddition:
    text = text.strip()
    if not text:
        raise InvalidParams(f"Invalid params: {field}: the instructions are empty")
    return SystemPromptAddition(text, replaces=replaces)


def _folders(cwd: str, additional: list[str]) -> tuple[Path, list[Path]]:
    """The session's folders as absolute paths (InvalidParams naming the field otherwise)."""
    return _absolute_dir("cwd", cwd), [_absolute_dir(f"additionalDirectories.{i}", d) for i, d in enumerate(additional)]


def _absolute_dir(field: str, value: str) -> Path:
    path = Path(value)
    if not path.is_absolute():
        raise InvalidParams(f"Invalid params: {field}: must be an absolute path, got {value!r}")
    if not path.is_dir():
        problem = "is not a folder" if path.exists() else "does not exist"
        raise InvalidParams(f"Invalid params: {field}: {value} {problem}")
    return path
