"""`AcpClientBridge`: a session's `ClientBridge` when an editor drives it over ACP.

Updates are `session/update` notifications; files go through `fs/read_text_file` and `fs/write_text_file` (so
unsaved buffers count and the editor sees every write); commands run in the editor's terminal (`terminal/*`),
where the user watches them, always released after (background jobs too: `acp.terminal_job`); permission questions
are `session/request_permission`; questions for the user are `elicitation/create` (a form, or a web page to open,
then `elicitation/complete`). A sub-agent's updates and questions carry its own session id where the client shows
sub-agent sessions (`subagent_bridge`).
What the client did not advertise in `initialize` is never called: the bridge decides once, when the session
opens, to use the local machine (`session.local_bridge.LocalBridge`) for files or commands instead, and a question
of a kind the client cannot show comes back declined, saying why. It says so once: in a notice when the local
machine is first used, or, for a client without notices (whose notices are agent messages), in a message of its
own before the first turn's answer, ended by a rule, so the note never reads as part of the model's text even in
a client that runs messages together.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Awaitable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

import anyio
from pydantic import ValidationError

from coder_agent.acp.presentation import permission_options
from coder_agent.acp.terminal_job import READ_FROM_FIFO, TerminalJob, open_input_fifo
from coder_agent.errors import ClientError, field_problems
from coder_agent.lsp.editor import LspCall
from coder_agent.permissions import Choice, chosen
from coder_agent.process import owner_marked
from coder_agent.protocol.base import AcpModel
from coder_agent.protocol.content import TerminalContent, TextContent
from coder_agent.protocol.schema import (
    AgentMessageChunk,
    ClientCapabilities,
    CompleteElicitationNotification,
    CreateElicitationResponse,
    CreateTerminalResponse,
    CursorUpdate,
    FormElicitation,
    NoticeSeverity,
    NoticeUpdate,
    PlanDocumentUpdate,
    PlanRemoved,
    ReadTextFileResponse,
    RequestPermissionResponse,
    SessionUpdate,
    SubagentUpdate,
    TerminalExitStatus,
    TerminalOutputResponse,
    ToolCallUpdate,
    UrlElicitation,
    WakeUpdate,
    new_message_id,
)
from coder_agent.sandbox.command import CommandSandbox
from coder_agent.secrets import editor_terminal_env
from coder_agent.session.background import BackgroundCommand
from coder_agent.session.bridge import (
    COMMAND_ENV,
    OUTPUT_BYTE_LIMIT,
    BridgeError,
    CommandResult,
    ShowContent,
    command_line,
)
from coder_agent.session.local_bridge import LocalBridge
from coder_agent.session.user_questions import ACCEPT, Answer, FormQuestion, Question, not_asked, refusal

log = logging.getLogger(__name__)

FS_TIMEOUT = 30.0
TERMINAL_TIMEOUT = 30.0
CLEANUP_TIMEOUT = 5.0
PERMISSION_TIMEOUT = 3600.0
QUESTION_TIMEOUT = 3600.0
LSP_TIMEOUT = 30.0
MAX_OPEN_URLS = 100

Answered = TypeVar("Answered", bound=AcpModel)

ANSWER_FOLLOWS = "\n\n---\n\n"
"""Ends the note said before the first answer: a client that runs messages together still shows where it ends."""
FALLBACK_NOTICES = {
    "files": (
        "Files are read and written on disk, not through the editor",
        "The editor does not offer file access to agents, so unsaved changes in open buffers are not seen.",
    ),
    "commands": (
        "Commands run as local processes, not in the editor's terminal",
        "The editor does not offer terminals to agents; a command's output shows in the tool call when it ends.",
    ),
}


class Peer(Protocol):
    """The part of `rpc.Connection` a client needs."""

    async def request(self, method: str, params: Any, *, timeout: float | None = None) -> Any: ...

    async def notify(self, method: str, params: Any) -> None: ...


WAKE_METHOD = "_session/wake"
"""Told to clients that advertise `_meta.wake` when the agent starts a turn itself, and when that turn ends."""


class AcpClientBridge:
    """The editor, as one session sees it."""

    def __init__(self, peer: Peer, capabilities: ClientCapabilities, session_id: str) -> None:
        self._peer = peer
        self.capabilities = capabilities
        self.session_id = session_id
        self._local = LocalBridge()
        session = capabilities.session
        self.supports_compaction_updates = session is not None and session.compaction is not None
        self.supports_notices = session is not None and session.notices is not None
        options = session.config_options if session is not None else None
        self.supports_boolean_options = options is not None and options.boolean is not None
        elicitation = capabilities.elicitation
        self.supports_forms = elicitation is not None and elicitation.form is not None
        self.supports_urls = elicitation is not None and elicitation.url is not None
        self._open_urls: dict[str, None] = {}
        """URL questions the user accepted and the client has not been told are done."""
        self._fallbacks_told: set[str] = set()

    # ---- updates ------------------------------------------------------------------------------

    async def update(self, update: SessionUpdate, *, live_only: bool = False) -> None:
        """Send one `session/update` notification (a plan document, its removal or a sub-agent's session only to a
        client that shows them)."""
        if isinstance(update, PlanDocumentUpdate | PlanRemoved) and not self.capabilities.shows_plan_documents:
            return
        if isinstance(update, SubagentUpdate) and self.capabilities.subagents is None:
            return
        if isinstance(update, CursorUpdate) and not self.capabilities.shows_cursors:
            return
        if isinstance(update, WakeUpdate):
            if self.capabilities.hears_wakes:
                params = {"sessionId": self.session_id, **update.wire()}
                params.pop("sessionUpdate", None)
                await self._peer.notify(WAKE_METHOD, params)
            return
        await self._peer.notify("session/update", {"sessionId": self.session_id, "update": update.wire()})

    async def notice(self, severity: NoticeSeverity, title: str, description: str | None = None) -> None:
        """A `notice` where the client shows them, otherwise a short agent message; neither is replayed."""
        if self.supports_notices:
            await self.update(NoticeUpdate(severity=severity, title=title, description=description), live_only=True)
            return
        text = f"\n\n_{title}_" + (f"\n\n{description}" if description else "") + "\n\n"
        await self.update(
            AgentMessageChunk(content=TextContent(text=text), message_id=new_message_id()), live_only=True
        )

    async def turn_starting(self) -> None:
        """For a client without notices: what stands in for the editor, said before the first answer."""
        if self.supports_notices:
            return
        missing = [what for what in FALLBACK_NOTICES if not self._offers(what) and what not in self._fallbacks_told]
        if not missing:
            return
        self._fallbacks_told.update(missing)
        lines = [f"_{FALLBACK_NOTICES[what][0]}_: {FALLBACK_NOTICES[what][1]}" for what in missing]
        text = "\n\n".join(lines) + ANSWER_FOLLOWS
        await self.update(
            AgentMessageChunk(content=TextContent(text=text), message_id=new_message_id()), live_only=True
        )

    def _offers(self, what: str) -> bool:
        fs = self.capabilities.fs
        return fs.read_text_file and fs.write_text_file if what == "files" else self.capabilities.terminal

    async def request_permission(self, call: ToolCallUpdate, choices: Sequence[Choice]) -> str | None:
        """Ask the user; the answer may take as long as the user needs (bounded at an hour). An option id the
        request did not offer is a rejection; an answer that is not a permission outcome fails the call."""
        wire = call.wire()
        wire.pop("sessionUpdate", None)
        options = [option.wire() for option in permission_options(list(choices))]
        try:
            result = await self._call(
                "session/request_permission", {"toolCall": wire, "options": options}, PERMISSION_TIMEOUT
            )
        except ClientError as exc:
            raise BridgeError(f"The permission request failed ({exc.message}); the call was not run.") from None
        try:
            outcome = RequestPermissionResponse.model_validate(result).outcome
        except ValidationError:
            raise BridgeError(
                "The editor's answer to the permission request was malformed; the call was not run."
            ) from None
        if outcome.outcome == "cancelled":
            return None
        picked = chosen(choices, outcome.option_id)
        if picked != outcome.option_id:
            log.warning(
                "session %s: the editor answered a permission request with an option it was not offered (%r): "
                "taken as a rejection",
                self.session_id,
                outcome.option_id,
            )
        return picked

    # ---- questions ----------------------------------------------------------------------------

    async def ask(self, question: Question) -> Answer:
        """`elicitation/create` in the mode the question needs, if the client offers it; no secret in a form."""
        problem = refusal(question)
        if problem is not None:
            return not_asked(problem)
        request: FormElicitation | UrlElicitation
        if isinstance(question, FormQuestion):
            if not self.supports_forms:
                return not_asked("the editor cannot show questions (it does not offer form elicitation)")
            request = FormElicitation(
                session_id=self.session_id,
                tool_call_id=question.tool_call_id,
                message=question.message,
                requested_schema=question.schema,
            )
        else:
            if not self.supports_urls:
                return not_asked("the editor cannot send the user to a web page (it does not offer URL elicitation)")
            request = UrlElicitation(
                session_id=self.session_id,
                tool_call_id=question.tool_call_id,
                message=question.message,
                elicitation_id=question.elicitation_id,
                url=question.url,
            )
        try:
            result = await self._peer.request("elicitation/create", request.wire(), timeout=QUESTION_TIMEOUT)
        except ClientError as exc:
            raise BridgeError(f"The question could not be shown to the user ({exc.message}).") from None
        try:
            response = CreateElicitationResponse.model_validate(result)
        except ValidationError:
            raise BridgeError("The editor's answer to the question was malformed.") from None
        if response.action != ACCEPT:
            return Answer(response.action)
        if not isinstance(question, FormQuestion):
            if len(self._open_urls) >= MAX_OPEN_URLS:  # never told done: forget the oldest
                self._open_urls.pop(next(iter(self._open_urls)))
            self._open_urls[question.elicitation_id] = None
            return Answer(ACCEPT)
        return Answer(ACCEPT, dict(response.content or {}))

    async def url_done(self, elicitation_id: str) -> None:
        """`elicitation/complete`, only for a URL question this client accepted and has not been told about."""
        if elicitation_id not in self._open_urls:
            return
        del self._open_urls[elicitation_id]
        notification = CompleteElicitationNotification(elicitation_id=elicitation_id)
        await self._peer.notify("elicitation/complete", notification.wire())

    # ---- files --------------------------------------------------------------------------------

    async def read_text_file(
        self, path: Path, *, line: int | None = None, limit: int | None = None, real: Path | None = None
    ) -> str:
        """Through the editor (which reads by path; `real` only binds the disk fallback)."""
        if not self.capabilities.fs.read_text_file:
            await self._fallback("files")
            return await self._local.read_text_file(path, line=line, limit=limit, real=real)
        params: dict[str, Any] = {"path": str(path)}
        if line is not None:
            params["line"] = line
        if limit is not None:
            params["limit"] = limit
        try:
            result = await self._call("fs/read_text_file", params, FS_TIMEOUT)
        except ClientError as exc:
            if not await anyio.Path(path).exists():
                raise BridgeError(f"{path} does not exist.") from None
            raise BridgeError(f"The editor could not read {path}: {exc.message}") from None
        return _answer(ReadTextFileResponse, result, "fs/read_text_file").content

    async def write_text_file(self, path: Path, content: str, *, real: Path | None = None) -> None:
        """Through the editor (which writes by path; `real` only binds the disk fallback)."""
        if not self.capabilities.fs.write_text_file:
            await self._fallback("files")
            await self._local.write_text_file(path, content, real=real)
            return
        try:
            await self._call("fs/write_text_file", {"path": str(path), "content": content}, FS_TIMEOUT)
        except ClientError as exc:
            raise BridgeError(f"The editor could not write {path}: {exc.message}") from None

    # ---- commands -----------------------------------------------------------------------------

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
        """In the editor's terminal: create, show, wait (bounded), kill if needed, read, always release. Inside
        the sandbox, the terminal runs the sandbox's launcher, which puts the walls up and becomes the command."""
        if not self.capabilities.terminal:
            await self._fallback("commands")
            return await self._local.run_command(
                command, cwd=cwd, timeout=timeout, show=show, sandbox=sandbox, folders=folders
            )
        argv, extra_env = await command_line(command, sandbox, (*folders, cwd))
        guard = sandbox.guard() if sandbox is not None else None
        terminal_id = await self._create_terminal(argv, cwd, extra_env)
        exited = False
        try:
            await show(TerminalContent(terminal_id=terminal_id))
            timed_out = False
            status: TerminalExitStatus | None = None
            with anyio.move_on_after(timeout) as waiting:
                waited = await self._terminal("terminal/wait_for_exit", terminal_id, timeout + CLEANUP_TIMEOUT)
                status = _answer(TerminalExitStatus, waited, "terminal/wait_for_exit")
                exited = True
            if waiting.cancelled_caught:
                timed_out = True
                await self._terminal("terminal/kill", terminal_id)
                exited = True
            output = _answer(
                TerminalOutputResponse, await self._terminal("terminal/output", terminal_id), "terminal/output"
            )
            final = output.exit_status if timed_out or output.exit_status else status
            result = CommandResult(
                output=output.output,
                exit_code=final.exit_code if final else None,
                signal=final.signal if final else None,
                timed_out=timed_out,
                truncated=output.truncated,
            )
        except ClientError as exc:
            raise BridgeError(f"The editor's terminal failed: {exc.message}") from None
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(CLEANUP_TIMEOUT):
                if not exited:
                    await _quietly(self._terminal("terminal/kill", terminal_id))
                await _quietly(self._terminal("terminal/release", terminal_id))
            after = await guard.finish() if guard is not None else ""
        return dataclasses.replace(result, output=result.output + after) if after else result

    async def start_command(
        self,
        command: str,
        *,
        cwd: Path,
        sandbox: CommandSandbox | None = None,
        with_input: bool = False,
        folders: Sequence[Path] = (),
    ) -> BackgroundCommand:
        """A job in the editor's terminal (see `acp.terminal_job`): its processes carry the agent's mark, so the reaper
        ends them too if the agent is killed; its input, when asked for, comes through a FIFO."""
        if not self.capabilities.terminal:
            await self._fallback("commands")
            return await self._local.start_command(
                command, cwd=cwd, sandbox=sandbox, with_input=with_input, folders=folders
            )
        argv, extra_env = await command_line(command, sandbox, (*folders, cwd))
        guard = sandbox.guard() if sandbox is not None else None
        folder = stdin = None
        if with_input:
            try:
                folder, fifo, stdin = open_input_fifo()
            except OSError as exc:
                raise BridgeError(f"The job's input could not be made: {exc.strerror or exc}.") from None
            argv = [*READ_FROM_FIFO, str(fifo), *argv]
        try:
            terminal_id = await self._create_terminal(argv, cwd, {**extra_env, **owner_marked({})})
        except BaseException:
            await TerminalJob(self._terminal, "", stdin, folder).release()
            raise
        return TerminalJob(self._terminal, terminal_id, stdin, folder, guard)

    async def _create_terminal(self, argv: list[str], cwd: Path, extra_env: dict[str, str]) -> str:
        """`terminal/create` for a command line (keys blanked out of its environment); its id. BridgeError."""
        program, *args = argv
        env = {**editor_terminal_env(), **COMMAND_ENV, **extra_env}
        params: dict[str, Any] = {
            "command": program,
            "args": args,
            "cwd": str(cwd),
            "env": [{"name": k, "value": v} for k, v in env.items()],
            "outputByteLimit": OUTPUT_BYTE_LIMIT,
        }
        try:
            created = await self._call("terminal/create", params, TERMINAL_TIMEOUT)
        except ClientError as exc:
            raise BridgeError(f"The editor could not start the command: {exc.message}") from None
        return _answer(CreateTerminalResponse, created, "terminal/create").terminal_id

    def subagent_bridge(self, child_id: str) -> AcpClientBridge | None:
        """The editor as a sub-agent's own session sees it (updates and questions with the child's session id),
        when it advertised `subagents`."""
        if self.capabilities.subagents is None:
            return None
        return AcpClientBridge(self._peer, self.capabilities, child_id)

    def lsp_channel(self) -> LspCall | None:
        if not self.capabilities.forwards_lsp:
            return None

        async def call(method: str, params: dict[str, Any]) -> Any:
            return await self._call(method, params, LSP_TIMEOUT)

        return call

    async def _fallback(self, what: str) -> None:
        """Say once per session that the local machine stands in for what the editor does not offer."""
        if what not in self._fallbacks_told:
            self._fallbacks_told.add(what)
            await self.notice("info", *FALLBACK_NOTICES[what])

    # ---- the wire -----------------------------------------------------------------------------

    async def _call(self, method: str, params: dict[str, Any], timeout: float) -> Any:
        return await self._peer.request(method, {"sessionId": self.session_id, **params}, timeout=timeout)

    async def _terminal(self, method: str, terminal_id: str, timeout: float = TERMINAL_TIMEOUT) -> Any:
        return await self._call(method, {"terminalId": terminal_id}, timeout)


def _answer(shape: type[Answered], result: Any, method: str) -> Answered:
    """The client's answer to `method` read as `shape`; a malformed one is a BridgeError saying what was wrong."""
    try:
        return shape.model_validate(result)
    except ValidationError as exc:
        problems = "; ".join(f"{p.field or 'the answer'}: {p.message}" for p in field_problems(exc)[:3])
        raise BridgeError(f"The editor's answer to {method} was malformed ({problems}).") from None


async def _quietly(call: Awaitable[Any]) -> None:
    with contextlib.suppress(Exception):  # the terminal may already be gone; cleanup is best effort
        await call
