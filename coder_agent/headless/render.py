"""`--output-format text`: the answer on stdout; tool calls, command output, diffs, the plan and notices on stderr.

Rendering is rich's: colours when stderr is a terminal (and `NO_COLOR` is unset), plain text when it is piped, and
a spinner while the run waits on the model or a command. The answer is written as it streams when stdout is piped
(the model's Markdown as it is, for scripts); on a terminal it is rendered as Markdown a block at a time
(`markdown_blocks`), links written out with their address rather than hidden behind the text. Each call is shown
once: its line when it runs (or the permission question, which shows the whole command or diff, instead), then
what it did — a command's output collapsed to its last lines (whole with `--verbose`), an edit's diff. Text that
reaches the terminal from the model or a tool is never read as rich markup, and its control characters (escape
sequences, bidirectional overrides) are shown as escapes, on stdout too when it is a terminal. When stdout and
stderr are the same terminal, a line of the answer is ended before anything is written on stderr, so the two never
share a line.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.markdown import Markdown
from rich.status import Status
from rich.text import Text

from coder_agent.headless.events import Permission, RunResult, Stdout
from coder_agent.headless.markdown_blocks import MarkdownBlocks
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
from coder_agent.tools.file_view import unfenced
from coder_agent.visible import visible

DIFF_LINES = 40
"""Lines of a diff shown at most; the rest is counted."""
FAILURE_LINES = 6
OUTPUT_LINES = 6
"""The last lines of a command's output shown (all of them with --verbose)."""
SUBAGENT_LINES = 12
"""The lines of a sub-agent's steps, bill and answer shown when it ends (all of them with --verbose)."""
SHELL = "run_command"
"""The tool whose calls are shown as a shell command line (`$ …`); other tools of the kind (the job tools) are not."""
SUBAGENT = "task"
PLAN_MARKS = {"completed": ("✓", "green"), "in_progress": ("▸", "yellow"), "pending": ("○", "dim")}
WAITING = "Waiting for the model"


def stderr_console() -> Console:
    """The terminal's stderr as rich sees it: styled on a terminal, plain when piped."""
    return Console(stderr=True, highlight=False, soft_wrap=True)


def stdout_console(stdout: Stdout) -> Console:
    """The run's stdout as a terminal the answer is rendered on."""
    return Console(file=stdout, highlight=False)  # type: ignore[arg-type]  # Stdout writes and flushes like a file


class TextOutput:
    """Shows a run as a person reads it; `markdown`: the console the answer is rendered on (stdout is a terminal)."""

    def __init__(
        self,
        stdout: Stdout,
        console: Console,
        *,
        markdown: Console | None = None,
        verbose: bool = False,
        structured: bool = False,
    ) -> None:
        self.stdout = stdout
        self.structured = structured
        """--output-schema: stdout holds the answer's JSON alone, written at the end once it is valid."""
        self.console = console
        self.markdown = markdown
        self.verbose = verbose
        self.shared_terminal = stdout.isatty() and console.is_terminal
        self.status: Status | None = None
        self.line_open = False
        """The answer's last line on stdout is not ended yet."""
        self.answer_written = False
        self.tool_since_text = False
        self.blocks = MarkdownBlocks()
        self.titles: dict[str, str] = {}
        self.kinds: dict[str, str] = {}
        self.names: dict[str, str] = {}
        self.preview: dict[str, list[ToolCallContent]] = {}
        """What each call showed when it started (a command, a diff): what it shows at the end is what is new."""
        self.content: dict[str, list[ToolCallContent]] = {}
        """What each call shows (its diff stays from the start when the end carries none)."""
        self.shown: set[str] = set()
        """Calls whose line (or permission question) is on the terminal."""

    # ---- the run ------------------------------------------------------------------------------

    def started(self, session: dict[str, Any]) -> None:
        if session.get("resumed"):
            self._line(Text(f"Continuing session {session['session_id']}", style="dim"))
        piped = session.get("piped_input")
        if piped is not None:
            self._line(Text(piped_note(piped), style="dim"))
        self._wait(WAITING)

    def finished(self, result: RunResult) -> None:
        self._stop()
        if self.structured:
            if result.error is None:
                self.stdout.write(json.dumps(result.structured_output, ensure_ascii=False) + "\n")
        elif result.answer and (
            self.tool_since_text or not self.answer_written
        ):  # not streamed: a plan no one approved
            self._answer(result.answer if result.answer.endswith("\n") else result.answer + "\n")
        self._flush_answer()
        if self.line_open:
            self.stdout.write("\n")
            self.line_open = False
        parts = [f"session {result.session_id}"] if result.session_id else []
        usage = result.usage
        if usage.model_requests:
            requests = "request" if usage.model_requests == 1 else "requests"
            parts.append(f"{usage.model_requests} model {requests}, {usage.tokens:,} tokens")
        if usage.context_window_guessed and usage.context_window:
            parts.append(
                f"context {usage.context_tokens:,} of {usage.context_window:,} tokens, a guess: the model's window is "
                "not known (set CODER_AGENT_CONTEXT_WINDOW)"
            )
        if result.cost:
            parts.append(f"${result.cost:.4f}")
        if result.files_changed:
            files = "file" if len(result.files_changed) == 1 else "files"
            parts.append(f"{len(result.files_changed)} {files} changed")
        if parts:
            self._line(Text(" · ".join(parts), style="dim"))

    def permission(self, event: Permission) -> None:
        call_id = event.tool_call_id
        if event.answered_by == "terminal":  # the question showed the call, its command or its diff
            self.shown.add(call_id)
            self.content.pop(call_id, None)
        else:  # no one was asked: the call is shown as it stopped the run
            self._tool_line(call_id)

    def pause(self) -> None:
        self._stop()
        self._flush_answer()
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
            self.names[update.tool_call_id] = update.name or (SHELL if update.kind == "execute" else "")
            self.preview[update.tool_call_id] = list(update.content or [])
            self.content[update.tool_call_id] = list(update.content or [])
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
        if not text or self.structured:  # the JSON alone goes to stdout, at the end
            return
        if self.markdown is not None:
            if self.tool_since_text:
                self._flush_answer()
            self.tool_since_text = False
            for block in self.blocks.feed(text):
                self._render(block)
            if self.blocks.pending:
                self._wait("Writing")
            return
        self._stop()
        if self.tool_since_text and self.answer_written:
            self.stdout.write("\n\n" if self.line_open else "\n")
        self.tool_since_text = False
        self.stdout.write(visible(text) if self.stdout.isatty() else text)
        self.answer_written = True
        self.line_open = not text.endswith("\n")

    def _flush_answer(self) -> None:
        """Render what is held back of the answer (it ended, or something else is about to be shown)."""
        if self.markdown is None:
            return
        for block in self.blocks.rest():
            self._render(block)

    def _render(self, block: str) -> None:
        assert self.markdown is not None
        self._stop()
        if self.answer_written:
            self.markdown.print()
        self.markdown.print(Markdown(visible(block), hyperlinks=False))
        self.answer_written = True

    def _tool_line(self, call_id: str) -> None:
        if call_id in self.shown:
            return
        self.shown.add(call_id)
        title = self.titles.get(call_id, "")
        if self.names.get(call_id) == SHELL:
            self._line(Text.assemble(("$ ", "bold cyan"), (title, "cyan")))
        else:
            self._line(Text.assemble(("• ", "bold blue"), title))

    def _progress(self, call_id: str, status: str | None, content: Sequence[ToolCallContent] | None) -> None:
        if status in (None, "pending"):
            return
        self._tool_line(call_id)
        if status == "in_progress":
            self._wait(f"Running {self.titles.get(call_id, 'a tool')}")
            return
        latest = self.content.pop(call_id, None)
        new = [item for item in latest or content or [] if item not in self.preview.get(call_id, [])]
        if self.names.get(call_id) == SUBAGENT and status in ("completed", "failed"):
            self._lines(output_lines(latest or content or [], None if self.verbose else SUBAGENT_LINES))
        elif status == "completed":
            self._lines([line for item in latest or [] if isinstance(item, DiffContent) for line in diff_lines(item)])
            if self.kinds.get(call_id) == "execute":
                self._lines(output_lines(new, None if self.verbose else OUTPUT_LINES))
        elif status == "failed":
            self._lines(failure_lines(new or content or [], None if self.verbose else FAILURE_LINES))
        self._wait(WAITING)

    # ---- the terminal -------------------------------------------------------------------------

    def _line(self, text: Text) -> None:
        self._lines([text])

    def _lines(self, lines: Sequence[Text]) -> None:
        if not lines:
            return
        self._stop()
        self._flush_answer()
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


def piped_note(piped: dict[str, Any]) -> str:
    """What became of the input piped next to the prompt, in words."""
    if "waited_seconds" in piped:
        return (
            f"Nothing came on stdin within {piped['waited_seconds']:g} s: going on without it "
            "(`< /dev/null` skips the wait)."
        )
    note = f"Added the {_size(piped['bytes'])} piped on stdin to the prompt"
    if piped["truncated"]:
        half = _size(piped["kept_bytes"] // 2)
        return f"{note}: its first and last {half} (the middle was left out)."
    return note + "."


def _size(count: int) -> str:
    if count < 1000:
        return f"{count} byte{'' if count == 1 else 's'}"
    return f"{count / 1000:,.1f} KB" if count < 1_000_000 else f"{count / 1_000_000:,.1f} MB"


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


def failure_lines(content: Sequence[ToolCallContent], limit: int | None = FAILURE_LINES) -> list[Text]:
    """Why a call failed: the last lines of its text (a command's output ends with its error)."""
    text = "\n".join(plain(visible(text)) for text in texts(content))
    lines = [line for line in text.splitlines() if line.strip()]
    lines = (lines[-limit:] if limit else lines) or ["failed"]
    first = Text.assemble(("  ✗ ", "bold red"), (lines[0], "red"))
    return [first, *(Text(f"    {line}", style="red") for line in lines[1:])]


def output_lines(content: Sequence[ToolCallContent], limit: int | None = OUTPUT_LINES) -> list[Text]:
    """A command's output: its last `limit` lines (None: all), with a count of those left out."""
    text = "\n".join(plain(visible(text)) for text in texts(content))
    lines = text.rstrip().splitlines()
    if not lines or lines == ["(no output)"]:
        return []
    shown: list[Text] = []
    if limit is not None and len(lines) > limit:
        earlier = len(lines) - limit
        shown.append(Text(f"    … {earlier} earlier line{'' if earlier == 1 else 's'} (--verbose shows all)", "dim"))
        lines = lines[-limit:]
    return shown + [Text(f"    {line}", style="dim") for line in lines]


def content_lines(content: Sequence[ToolCallContent], *, command: bool = False) -> list[Text]:
    """A call's content as a permission question shows it: diffs, and text as it is; with `command`, the first
    text is the command line, shown as one would type it (`$ …`)."""
    lines: list[Text] = []
    for item in content:
        if isinstance(item, DiffContent):
            lines += diff_lines(item)
            continue
        for text in texts([item]):
            body = plain(visible(text)).splitlines()
            if command:
                command = False
                lines += [Text.assemble(("  $ " if n == 0 else "    ", "bold cyan"), (line, "cyan"))
                          for n, line in enumerate(body)]  # fmt: skip
            else:
                lines += [Text(f"    {line}") for line in body]
    return lines


def inline_code(text: str) -> list[tuple[str, str]]:
    """Text with Markdown's `code` spans shown as code (the backticks dropped), for `Text.assemble`."""
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an unmatched backtick: nothing to render
        return [(text, "")]
    return [(part, "bold cyan" if n % 2 else "") for n, part in enumerate(parts) if part]


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
    """Text as a terminal shows it: without the lines of its code fences, a line in Markdown italics (a note such
    as `_No new output._`) or bold (`**explore-1**`) without the marks."""
    lines = unfenced(text.strip("\n")).splitlines()
    return "\n".join(_unmarked(line) for line in lines)


def _unmarked(line: str) -> str:
    stripped = line.strip()
    if len(stripped) > 2 and stripped[0] == stripped[-1] == "_" and "_" not in stripped[1:-1]:
        return line.replace(stripped, stripped[1:-1])
    if line.startswith("**") and line.count("**") == 2:
        return line.replace("**", "")
    return line
