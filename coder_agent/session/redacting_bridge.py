"""`RedactingBridge`: the one wrapper every session's bridge is used through — what leaves the session is
redacted here, once, its titles have their hidden characters made visible here, and what a client is shown is
recorded here in the replay log.

The values of model keys (`secrets`) are taken out of every update, notice, permission request (the call and
the labels of its choices) and question before the bridge underneath sees it, so neither the editor, nor
`coder-agent run`'s output, nor the replay log (and so the store) can carry one. The manager wraps the bridge
once, where the session opens; nothing else in the agent redacts what it shows. What waits on the user or is
told them (a permission question, a question, a notice) is also reported to `attention`: the `notification`
hooks. Files and commands pass through unchanged: a command must run as the model wrote it, and a file holds what
it holds.

Every title shown (a tool call's, in its updates and permission requests; a session's; a notice's) is written
with `visible`: a path, URL, glob or MCP tool title the model or a server chose cannot carry terminal escapes,
bidirectional overrides or zero-width characters that make the user read another call than the one asked about.

Every message chunk that goes into the replay log is also reported to `shown` with its `messageId` (the session
notes where the message ends in the conversation, for `session/fork`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar, cast

from coder_agent import secrets
from coder_agent.lsp.editor import LspCall
from coder_agent.permissions import Choice
from coder_agent.protocol.schema import MessageChunk, NoticeSeverity, SessionUpdate, ToolCallUpdate
from coder_agent.sandbox.command import CommandSandbox
from coder_agent.session.background import BackgroundCommand
from coder_agent.session.bridge import ClientBridge, CommandResult, ShowContent
from coder_agent.session.replay import ChildLog, ReplayLog
from coder_agent.session.user_questions import Answer, Question
from coder_agent.visible import visible

Attention = Callable[[str, str, "str | None"], None]
"""Told of what waits on the user or is told them: its kind (`permission`, `question`, `notice`), title, message."""


class RedactingBridge:
    """A session's `ClientBridge`, redacted, with its replay log."""

    def __init__(
        self, inner: ClientBridge, replay: ReplayLog | ChildLog, shown: Callable[[str], None] | None = None
    ) -> None:
        self.inner = inner
        self.replay = replay
        self.shown = shown
        self.attention: Attention | None = None
        """Told when the user is waited on or told something (`kind`, title, message): the `notification` hooks."""

    @property
    def supports_compaction_updates(self) -> bool:
        return self.inner.supports_compaction_updates

    @property
    def supports_boolean_options(self) -> bool:
        return self.inner.supports_boolean_options

    async def update(self, update: SessionUpdate, *, live_only: bool = False) -> None:
        """Show one update (`live_only`: not replayed by `session/load`)."""
        update = _shown(update)
        if not live_only:
            self._record(update)
        await self.inner.update(update, live_only=live_only)

    def record(self, update: SessionUpdate) -> None:
        """Put an update in the replay log without showing it (the client already shows it its own way)."""
        self._record(_shown(update))

    async def turn_starting(self) -> None:
        await self.inner.turn_starting()

    def _record(self, update: SessionUpdate) -> None:
        self.replay.record(update.wire())
        if self.shown is not None and isinstance(update, MessageChunk):
            self.shown(update.message_id)

    async def notice(self, severity: NoticeSeverity, title: str, description: str | None = None) -> None:
        described = secrets.redact(description) if description is not None else None
        self._attend("notice", visible(secrets.redact(title)), described)
        await self.inner.notice(severity, visible(secrets.redact(title)), described)

    async def request_permission(self, call: ToolCallUpdate, choices: Sequence[Choice]) -> str | None:
        shown = [dataclasses.replace(choice, label=secrets.redact(choice.label)) for choice in choices]
        call = _shown(call)
        self._attend("permission", call.title or "A tool call", None)
        return await self.inner.request_permission(call, shown)

    async def ask(self, question: Question) -> Answer:
        question = dataclasses.replace(question, message=secrets.redact(question.message))
        self._attend("question", "A question for you", question.message)
        return await self.inner.ask(question)

    def _attend(self, kind: str, title: str, message: str | None) -> None:
        if self.attention is not None:
            self.attention(kind, title, message)

    async def url_done(self, elicitation_id: str) -> None:
        await self.inner.url_done(elicitation_id)

    async def read_text_file(
        self, path: Path, *, line: int | None = None, limit: int | None = None, real: Path | None = None
    ) -> str:
        return await self.inner.read_text_file(path, line=line, limit=limit, real=real)

    async def write_text_file(self, path: Path, content: str, *, real: Path | None = None) -> None:
        await self.inner.write_text_file(path, content, real=real)

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
        return await self.inner.run_command(
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
        return await self.inner.start_command(command, cwd=cwd, sandbox=sandbox, with_input=with_input, folders=folders)

    def subagent_bridge(self, child_id: str) -> ClientBridge | None:
        return self.inner.subagent_bridge(child_id)

    def lsp_channel(self) -> LspCall | None:
        return self.inner.lsp_channel()


_U = TypeVar("_U", bound=SessionUpdate | ToolCallUpdate)


def _shown(update: _U) -> _U:
    """An update as it may be shown: key values redacted, and its title (if it has one) with hidden characters
    written as escapes."""
    cleaned: _U = secrets.redact_model(update)
    title = getattr(cleaned, "title", None)
    if isinstance(title, str) and visible(title) != title:
        return cast(_U, cleaned.model_copy(update={"title": visible(title)}))
    return cleaned
