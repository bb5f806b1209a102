"""What a session does when its MCP servers ask something of it: the `McpClientHooks` the manager gives the hub.

* Elicitation is relayed to the user through the session's bridge: a form stays a form, a URL stays a URL (the
  user opens the page; nothing of it reaches us), tied to the tool call running on that server. The message
  names the server. A question the client cannot show, or must not show (a secret in a form, an address that is
  not a plain web page), is declined with the reason; a server's later `elicitation/complete` becomes ACP's
  `elicitation/complete` for the URL question it named (ids are ours, so two servers never collide).
* Sampling is served by the session's model after the user allows it: the request runs through the executor as
  a call of its own (`tools.sampling`), so it is shown, permitted (per server "always"; read-only refuses) and
  its cost joins the session's.
* Notices (a server that could not be restarted) go to the user as notices.

Both requests are cancelled with the turn (`session/cancel`), as a permission request is.
"""

from __future__ import annotations

import json
import logging
import uuid
from contextlib import AbstractContextManager
from typing import Literal, cast

import anyio

from coder_agent.errors import RpcError
from coder_agent.mcp.types import (
    McpClientHooks,
    McpElicitation,
    McpElicitationAnswer,
    McpRefused,
    McpSampled,
    McpSampling,
)
from coder_agent.model.base import ToolCallRequest
from coder_agent.session.bridge import BridgeError
from coder_agent.session.session import Session
from coder_agent.session.turn_runner import TurnRunner
from coder_agent.session.user_questions import ACCEPT, CANCEL, DECLINE, FormQuestion, Question, UrlQuestion
from coder_agent.tools.calls import TurnCancelled
from coder_agent.tools.executor import ToolExecutor
from coder_agent.tools.sampling import SamplingRequest, raw_input

log = logging.getLogger(__name__)

MAX_OPEN_URLS = 100
"""URL questions remembered for their `elicitation/complete` (the oldest is forgotten beyond this)."""


class McpRequests:
    """One session's answers to its MCP servers' requests."""

    def __init__(self, session: Session, runner: TurnRunner) -> None:
        self.session = session
        self.runner = runner
        self._open_urls: dict[tuple[str, str], str] = {}
        """(server, the server's elicitation id) -> ours, for URL questions the user accepted."""

    def hooks(self) -> McpClientHooks:
        return McpClientHooks(
            elicit=self.elicit, elicitation_done=self.elicitation_done, sample=self.sample, notice=self.notice
        )

    # ---- elicitation ----------------------------------------------------------------------------

    async def elicit(self, request: McpElicitation) -> McpElicitationAnswer:
        message = f"The MCP server {request.server} asks: {request.message}"
        question: Question
        if request.mode == "url":
            ours = f"mcp_{uuid.uuid4().hex}"
            question = UrlQuestion(message, request.url or "", ours, tool_call_id=request.caller)
        else:
            question = FormQuestion(message, request.schema, tool_call_id=request.caller)
        with self._cancelled_with_turn() as scope:
            try:
                answer = await self.session.services.bridge.ask(question)
            except BridgeError as exc:
                return McpElicitationAnswer(DECLINE, reason=str(exc))
        if scope.cancelled_caught:
            return McpElicitationAnswer(CANCEL)
        if answer.unasked is not None:
            return McpElicitationAnswer(DECLINE, reason=f"Not asked: {answer.unasked}.")
        if answer.action not in (ACCEPT, DECLINE, CANCEL):
            unknown = f"The editor answered with an action this client does not know ({answer.action!r})."
            return McpElicitationAnswer(DECLINE, reason=unknown)
        action = cast(Literal["accept", "decline", "cancel"], answer.action)
        if isinstance(question, UrlQuestion):
            if action == ACCEPT and request.elicitation_id:
                self._remember_url(request.server, request.elicitation_id, question.elicitation_id)
            return McpElicitationAnswer(action)
        return McpElicitationAnswer(action, dict(answer.content) if action == ACCEPT else None)

    async def elicitation_done(self, server: str, elicitation_id: str) -> None:
        ours = self._open_urls.pop((server, elicitation_id), None)
        if ours is not None:
            await self.session.services.bridge.url_done(ours)

    def _remember_url(self, server: str, theirs: str, ours: str) -> None:
        self._open_urls[(server, theirs)] = ours
        while len(self._open_urls) > MAX_OPEN_URLS:
            del self._open_urls[next(iter(self._open_urls))]

    # ---- sampling -------------------------------------------------------------------------------

    async def sample(self, request: McpSampling) -> McpSampled:
        try:
            model = self.runner.sampling_model(self.session, request.max_tokens)
        except RpcError as exc:
            raise McpRefused(f"The model cannot be used: {exc.message}") from None
        if model is None:
            raise McpRefused("This agent has no model to sample.")
        tool = SamplingRequest(request, model)
        call = ToolCallRequest(f"sampling_{uuid.uuid4().hex[:12]}", tool.name, json.dumps(raw_input(request)))
        with self._cancelled_with_turn() as scope:
            try:
                result = await ToolExecutor(self.session.turn_context()).run_tool(tool, call)
            except TurnCancelled:
                raise McpRefused("The user cancelled the request.") from None
        if scope.cancelled_caught:
            raise McpRefused("The user cancelled the request.")
        if result.failed or tool.sampled is None:
            raise McpRefused(result.text())
        return tool.sampled

    # ---- notices --------------------------------------------------------------------------------

    async def notice(self, severity: Literal["info", "warning", "error"], title: str, description: str | None) -> None:
        await self.session.services.bridge.notice(severity, title, description)

    def _cancelled_with_turn(self) -> AbstractContextManager[anyio.CancelScope]:
        return self.session.side_request()
