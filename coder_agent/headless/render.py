"""`--output-format text`: the answer streamed to stdout; tool calls, diffs, the plan and notices compactly on stderr.

Rendering is rich's: colours when stderr is a terminal (and `NO_COLOR` is unset), plain text when it is piped, and
a spinner while the run waits on the model or a command. Text that reaches the terminal from the model or a tool is
never read as markup, and its control characters (escape sequences, bidirectional overrides) are shown as escapes,
on stdout too when it is a terminal. When stdout and stderr are the same terminal, a line of the answer is ended
before anything is written on stderr, so the two never share a line.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.status import Status
from rich.text import Text

from coder_agent.headless.events import Permission, RunResult, Stdout
from coder_agent.protocol.content import ContentToolCallContent, DiffContent, TextContent, ToolCallContent
from coder_agent.protocol.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    CompactionUpdate,
    NoticeUpdate,
    PlanUpdate,
    SessionUpdate,
    ToolCallStart,
    ToolCallUpdate,
)
from coder_agent.visible import visible

DIFF_LINES = 40
"""Lines of a diff shown at most; the rest is counted."""
FAILURE_LINES = 6
PLAN_MARKS = {"completed": ("✓", "green"), "in_progress": ("▸", "yellow"), "pending": ("○", "dim")}
WAITING = "Waiting for the model"


def stderr_console() -> Console:
    """The terminal's stderr as rich sees it: styled on a terminal, plain when piped."""
    return Console(stderr=True, highlight=False, soft_wrap=True)


class TextOutput:
    """Shows a run as a person reads it."""

    def __init__(self, stdout: Stdout, console: Console) -> None:
        self.stdout = stdout
        self.console = console
        self.shared_terminal = stdout.isatty() and console.is_terminal
        self.status: Status | None = None
        self.line_open = False
        """The answer's last line on stdout is not ended yet."""
        self.answer_written = False
        self.tool_since_text = False
        self.titles: dict[str, str] = {}
        self.kinds: dict[str, str] = {}
        self.content: dict[str, list[ToolCallContent]] = {}
        """What each call shows (its diff stays from the start when the end carries none)."""

    # ---- the run ------------------------------------------------------------------------------

    def started(self, session: dict[str, Any]) -> None:
        if session.get("resumed"):
            self._line(Text(f"Continuing session {session['session_id']}", style="dim"))
        self._wait(WAITING)

    def finished(self, result: RunResult) -> None:
        self._stop()
        if self.line_open:
            self.stdout.write("\n")
            self.line_open = False
        parts = [f"session {result.session_id}"] if result.session_id else []
        usage = result.usage
        if usage.model_requests:
            requests = "request" if usage.model_requests == 1 else "requests"
            parts.append(f"{usage.model_requests} model {requests}, {usage.tokens:,} tokens")
        if result.cost:
            parts.append(f"${result.cost:.4f}")
        if result.files_changed:
            files = "file" if len(result.files_changed) == 1 else "files"
            parts.append(f"{len(result.files_changed)} {files} changed")
        if parts:
            self._line(Text(" · ".join(parts), style="dim"))

    def permission(self, event: Permission) -> None:
        if event.answered_by == "terminal":  # the question showed its diff already
            self.content.pop(event.tool_call_id, None)

    def pause(self) -> None:
        self._stop()
        self._end_answer_line()

    # ---- updates ------------------------------------------------------------------------------

    async def show(self, update: SessionUpdate) -> None:
        if isinstance(update, AgentMessageChunk):
            if isinstance(update.content, TextContent):
                self._answer(update.content.text)
        elif isinstance(update, AgentThoughtChunk):
            self._wait("Thinking")
        elif isinstance(update, ToolCallStart):
            self.tool_since_text = True
            self.titles[update.tool_call_id] = visible(update.title)
            self.kinds[update.tool_call_id] = update.kind
            self.content[update.tool_call_id] = list(update.content or [])
            self._tool_line(update.tool_call_id)
            self._progress(update.tool_call_id, update.status, update.content)
        elif isinstance(update, ToolCallUpdate):
            if update.title:
                self.titles[update.tool_call_id] = visible(update.title)
            if update.content is not None:
                self.content[update.tool_call_id] = list(update.content)
            self._progress(update.tool_call_id, update.status, update.content)
        elif isinstance(update, PlanUpdate):
            lines = [Text("Plan", style="bold")]
            for entry in update.entries:
                mark, style = PLAN_MARKS.get(entry.status, ("○", "dim"))
                lines.append(Text.assemble(f"  {mark} ", (visible(entry.content), style)))
            self._lines(lines)
        elif isinstance(update, NoticeUpdate):
            style = "red" if update.severity == "error" else "yellow"
            text = Text.assemble(("! ", style), (visible(update.title), style))
            if update.description:
                text.append(f": {visible(update.description)}", style="dim")
            self._line(text)
        elif isinstance(update, CompactionUpdate):
            if update.status == "in_progress":
                self._wait("Compacting the conversation")
            elif update.status == "completed":
                self._line(Text("Compacted the conversation: older turns are summarised", style="dim"))

    def _answer(self, text: str) -> None:
        if not text:
            return
        self._stop()
        if self.tool_since_text and self.answer_written:
            self.stdout.write("\n\n" if self.line_open else "\n")
        self.tool_since_text = False
        self.stdout.write(visible(text) if self.stdout.isatty() else text)
        self.answer_written = True
        self.line_open = not text.endswith("\n")

    def _tool_line(self, call_id: str) -> None:
        title = self.titles.get(call_id, "")
        if self.kinds.get(call_id) == "execute":
            self._line(Text.assemble(("$ ", "bold cyan"), (title, "cyan")))
        else:
            self._line(Text.assemble(("• ", "bold blue"), title))

    def _progress(self, call_id: str, status: str | None, content: Sequence[ToolCallContent] | None) -> None:
        if status == "in_progress":
            self._wait(f"Running {self.titles.get(call_id, 'a tool')}")
        elif status == "completed":
            shown = self.content.pop(call_id, [])
            self._lines([line for item in shown if isinstance(item, DiffContent) for line in diff_lines(item)])
            self._wait(WAITING)
        elif status == "failed":
            self._lines(failure_lines(content or []))
            self._wait(WAITING)

    # ---- the terminal -------------------------------------------------------------------------

    def _line(self, text: Text) -> None:
        self._lines([text])

    def _lines(self, lines: Sequence[Text]) -> None:
        if not lines:
            return
        self._stop()
        self._end_answer_line()
        for line in lines:
            self.console.print(line)

    def _end_answer_line(self) -> None:
        if self.shared_terminal and self.line_open:
            self.stdout.write("\n")
            self.line_open = False

    def _wait(self, what: str) -> None:
        if not self.console.is_terminal:
            return
        if self.status is None:
            self.status = self.console.status(Text(f"{what}…", style="dim"), spinner="dots")
            self.status.start()
        else:
            self.status.update(Text(f"{what}…", style="dim"))

    def _stop(self) -> None:
        if self.status is not None:
            self.status.stop()
            self.status = None


def diff_lines(item: DiffContent, limit: int = DIFF_LINES) -> list[Text]:
    """A compact unified diff of one file: hunks with one line of context, at most `limit` lines."""
    if item.old_text is None:
        new = _lines_of(item.new_text)
        lines = [Text(f"    new file, {len(new)} line{'' if len(new) == 1 else 's'}", style="dim")]
        lines += [Text(f"    + {line}", style="green") for line in new[: limit // 4]]
        if len(new) > limit // 4:
            lines.append(Text(f"    … {len(new) - limit // 4} more lines", style="dim"))
        return lines
    diff = difflib.unified_diff(_lines_of(item.old_text), _lines_of(item.new_text), lineterm="", n=1)
    body = [line for line in diff if not line.startswith(("---", "+++"))]
    styles = {"+": "green", "-": "red", "@": "cyan"}
    lines = [Text(f"    {line}", style=styles.get(line[:1], "dim")) for line in body[:limit]]
    if len(body) > limit:
        lines.append(Text(f"    … {len(body) - limit} more lines", style="dim"))
    return lines


def failure_lines(content: Sequence[ToolCallContent]) -> list[Text]:
    """Why a call failed: the last lines of its text (a command's output ends with its error)."""
    text = "\n".join(plain(visible(text)) for text in texts(content))
    lines = [line for line in text.splitlines() if line.strip()][-FAILURE_LINES:] or ["failed"]
    first = Text.assemble(("  ✗ ", "bold red"), (lines[0], "red"))
    return [first, *(Text(f"    {line}", style="red") for line in lines[1:])]


def content_lines(content: Sequence[ToolCallContent]) -> list[Text]:
    """A call's content as a permission question shows it: diffs, and text (a command) as it is."""
    lines: list[Text] = []
    for item in content:
        if isinstance(item, DiffContent):
            lines += diff_lines(item)
        else:
            lines += [Text(f"    {line}") for text in texts([item]) for line in plain(visible(text)).splitlines()]
    return lines


def _lines_of(text: str) -> list[str]:
    """A file's lines as a terminal may show them: split at newlines only, anything that could hide text escaped."""
    lines = visible(text.replace("\r\n", "\n")).split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def texts(content: Sequence[ToolCallContent]) -> list[str]:
    """The text blocks of a call's content."""
    return [
        item.content.text
        for item in content
        if isinstance(item, ContentToolCallContent) and isinstance(item.content, TextContent)
    ]


def plain(text: str) -> str:
    """Text without the Markdown code fence around it."""
    lines = text.strip("\n").splitlines()
    if len(lines) >= 2 and lines[0].startswith("```") and lines[-1].startswith("```"):
        lines = lines[1:-1]
    return "\n".join(lines)
