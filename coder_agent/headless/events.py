"""What a run adds up to, and the machine-readable formats `json` and `stream-json`.

`Tally` watches the session's updates: the answer (the agent's text since its last tool call), the context's
size after the last model request, and the files its edit tools changed (the requests, tokens and cost of the
run are its turn's report, complete when the turn ends). `RunResult` is the end of a run; `json` prints
it as one object. `stream-json` prints one object per line as things happen: `session` first (its id, folder,
model and mode), then every ACP session update in the wire's own shape (`update`: `agent_message_chunk`,
`tool_call`, `tool_call_update`, `plan`, `usage_update`, ...), `permission` when a question was answered, and the
`result` object last, the same as `json` prints.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, TextIO

from coder_agent.agent.metering import USAGE_META, WINDOW_GUESSED
from coder_agent.protocol.content import DiffContent, TextContent, ToolCallContent
from coder_agent.protocol.schema import (
    AgentMessageChunk,
    PlanDocumentUpdate,
    SessionUpdate,
    ToolCallStart,
    ToolCallUpdate,
    UsageUpdate,
)
from coder_agent.secrets import redact_data
from coder_agent.tools.calls import refused_by_mode


@dataclass(frozen=True)
class Permission:
    """A permission question and its answer."""

    tool_call_id: str
    title: str
    kind: str
    decision: Literal["allowed", "refused"]
    answered_by: Literal["terminal", "nobody"]
    """`nobody`: there was no terminal to ask on, so the call was refused and the run stopped."""
    allow_rules: tuple[str, ...] = ()
    """The `--allow` rules that would let this call through."""
    leaves_sandbox: bool = False
    """The question was whether a command may run outside the sandbox: no rule lets it, only `--mode full-auto` or
    a person at a terminal."""


@dataclass(frozen=True)
class ModeRefusal:
    """A call the run's mode refused (read-only refuses edits and commands): the model was told and went on."""

    tool_call_id: str
    title: str
    kind: str
    mode: str


@dataclass
class Usage:
    model_requests: int = 0
    tokens: int = 0
    """Input and output tokens of every model request of the run, added up."""
    context_tokens: int = 0
    """The conversation's size after the last request."""
    context_window: int | None = None
    context_window_guessed: bool = False
    """Neither the config nor litellm knows the model's window: `context_window` is a guess (CODER_AGENT_CONTEXT_WINDOW
    sets it)."""
    input_tokens: int = 0
    """Input tokens of every request (those read from the prompt cache included), as the provider counted them."""
    cached_input_tokens: int = 0
    output_tokens: int = 0


@dataclass
class RunResult:
    session_id: str | None
    stop_reason: str | None
    exit_code: int
    answer: str = ""
    error: str | None = None
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None
    """USD spent by this run, where litellm knows the model's price."""
    files_changed: list[str] = field(default_factory=list)
    refused: list[Permission] = field(default_factory=list)
    refused_by_mode: list[ModeRefusal] = field(default_factory=list)
    """Calls the run's mode refused (the model was told, and went on without them)."""
    structured_output: Any = None
    """With `--output-schema`: the answer's JSON value, valid against the schema."""
    piped_input: dict[str, Any] | None = None
    """What was piped on stdin next to the prompt: `bytes`, `truncated` (its middle left out past `kept_bytes`),
    or `waited_seconds` when nothing came."""

    def wire(self) -> dict[str, Any]:
        data = asdict(self)
        data["refused"] = [asdict(p) for p in self.refused]
        data["refused_by_mode"] = [asdict(r) for r in self.refused_by_mode]
        return {"type": "result", **data}


class Tally:
    """What the updates of one run add up to."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self._answer: list[str] = []  # joined once when read: a long answer streamed in small pieces stays linear
        self.usage = Usage()
        self.files_changed: list[str] = []
        self.refused_by_mode: list[ModeRefusal] = []
        self.plan: str | None = None
        """A Markdown plan proposed since the last tool call began (plan mode): the answer when no text follows."""
        self._content: dict[str, list[ToolCallContent]] = {}
        self._calls: dict[str, tuple[str, str]] = {}
        """Each call's title and kind, as it started."""

    def new_turn(self) -> None:
        """Another turn of the run begins (asked again for a valid answer): its answer is its own."""
        self._answer.clear()
        self.plan = None

    @property
    def final_answer(self) -> str:
        """The run's answer: the text after the last tool call, or the plan proposed there when none follows."""
        return self.answer or self.plan or ""

    @property
    def answer(self) -> str:
        """The agent's text since its last tool call."""
        return "".join(self._answer)

    def see(self, update: SessionUpdate) -> None:
        if isinstance(update, AgentMessageChunk) and isinstance(update.content, TextContent):
            self._answer.append(update.content.text)
        elif isinstance(update, PlanDocumentUpdate):
            self.plan = update.plan.content
        elif isinstance(update, ToolCallStart):
            self._answer.clear()
            self.plan = None
            self._calls[update.tool_call_id] = (update.title, update.kind)
            self._content[update.tool_call_id] = list(update.content or [])
            self._finish(update.tool_call_id, update.status)
        elif isinstance(update, ToolCallUpdate):
            if update.content is not None:
                self._content[update.tool_call_id] = list(update.content)
            self._finish(update.tool_call_id, update.status)
            mode = refused_by_mode(update.meta) if update.status == "failed" else None
            if mode is not None:
                title, kind = self._calls.get(update.tool_call_id, ("A tool call", "other"))
                self.refused_by_mode.append(ModeRefusal(update.tool_call_id, title, kind, mode))
        elif isinstance(update, UsageUpdate):
            self.usage.context_tokens = update.used
            self.usage.context_window = update.size
            call = (update.meta or {}).get(USAGE_META) or {}
            self.usage.context_window_guessed = bool(call.get(WINDOW_GUESSED))
            self.usage.input_tokens += int(call.get("inputTokens") or 0)
            self.usage.cached_input_tokens += int(call.get("cachedInputTokens") or 0)
            self.usage.output_tokens += int(call.get("outputTokens") or 0)

    def _finish(self, call_id: str, status: str | None) -> None:
        if status != "completed":
            return
        for item in self._content.pop(call_id, []):
            if isinstance(item, DiffContent):
                path = self._shown(item.path)
                if path not in self.files_changed:
                    self.files_changed.append(path)

    def _shown(self, path: str) -> str:
        try:
            return str(Path(path).relative_to(self.cwd))
        except ValueError:
            return path


class Stdout:
    """The run's stdout, which goes quiet once its reader has gone (`| head`): the run still ends and saves."""

    def __init__(self, file: TextIO) -> None:
        self.file = file
        self.gone = False

    def write(self, text: str) -> None:
        if self.gone:
            return
        try:
            self.file.write(text)
            self.file.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.gone = True

    def flush(self) -> None:
        """Every write is flushed already."""

    def isatty(self) -> bool:
        return self.file.isatty()


class Output(Protocol):
    """Where a run shows itself: `text` (render.TextOutput), `json` or `stream-json`."""

    def started(self, session: dict[str, Any]) -> None:
        """The session is open: `session_id`, `cwd`, `model`, `mode`, `resumed`."""
        ...

    async def show(self, update: SessionUpdate) -> None: ...

    def permission(self, event: Permission) -> None: ...

    def pause(self) -> None:
        """Something else is about to write to the terminal (a permission question): stop any spinner."""
        ...

    def finished(self, result: RunResult) -> None: ...


class JsonOutput:
    """`--output-format json`: nothing until the end, then one object."""

    def __init__(self, stdout: Stdout) -> None:
        self.stdout = stdout

    def started(self, session: dict[str, Any]) -> None:
        pass

    async def show(self, update: SessionUpdate) -> None:
        pass

    def permission(self, event: Permission) -> None:
        pass

    def pause(self) -> None:
        pass

    def finished(self, result: RunResult) -> None:
        _write(self.stdout, result.wire())


class StreamJsonOutput:
    """`--output-format stream-json`: one object per line, as they happen."""

    def __init__(self, stdout: Stdout) -> None:
        self.stdout = stdout

    def started(self, session: dict[str, Any]) -> None:
        _write(self.stdout, {"type": "session", **session})

    async def show(self, update: SessionUpdate) -> None:
        _write(self.stdout, {"type": "update", "update": update.wire()}, redacted=True)

    def permission(self, event: Permission) -> None:
        _write(self.stdout, {"type": "permission", **asdict(event)})

    def pause(self) -> None:
        pass

    def finished(self, result: RunResult) -> None:
        _write(self.stdout, result.wire())


def _write(stdout: Stdout, event: dict[str, Any], *, redacted: bool = False) -> None:
    """One JSON line; key values redacted unless the event already was (an update came through the session's
    redacting bridge; a permission's rules and a result's text did not)."""
    stdout.write(json.dumps(event if redacted else redact_data(event), ensure_ascii=False) + "\n")
