"""`ClientBridge`: what a session may ask of its environment — show updates and notices, read and write text
files, run a command (or start one in the background), ask the user's permission, ask the user a question.

Two implementations, chosen once when a session opens: the editor over ACP (`acp.client_bridge.AcpClientBridge`,
which itself falls back to the local machine for what the editor does not offer) and the local machine
(`session.local_bridge.LocalBridge`: the disk, process groups, and permission answers and questions from callables)
for headless use. Nothing above this seam asks which one it has: tools never branch on client capabilities (a
question no one can be asked comes back declined, saying why: `Answer.unasked`).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from coder_agent.errors import CallFailed
from coder_agent.lsp.editor import LspCall
from coder_agent.permissions import Choice
from coder_agent.process import find_program
from coder_agent.protocol.content import ToolCallContent
from coder_agent.protocol.schema import NoticeSeverity, SessionUpdate, ToolCallUpdate
from coder_agent.sandbox.command import CommandSandbox
from coder_agent.sandbox.probe import held_together
from coder_agent.session.background import BackgroundCommand
from coder_agent.session.user_questions import Answer, Question

COMMAND_ENV = {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"}
"""Set for every command: nothing may wait on a pager or a password prompt."""
OUTPUT_BYTE_LIMIT = 1_000_000
"""Output of one command kept at most (its start and its end)."""

ShowContent = Callable[[ToolCallContent], Awaitable[None]]


class BridgeError(CallFailed):
    """A file or command the environment could not serve; the message is one sentence for the model and user."""


class NoOneToAsk(Exception):
    """A permission question no one can answer (a run with no terminal): the turn stops at the call, which runs
    once the user allows it and the session goes on (`coder-agent run --continue --allow …`)."""


LEAVES_SANDBOX_META = {"coder-agent": {"leavesSandbox": True}}
"""The `_meta` of a permission request whose question is whether a command may run outside the sandbox: no rule
lets one out (only the user, each time, or the full-auto mode), so a run that cannot ask says so."""


def leaves_sandbox(call: ToolCallUpdate) -> bool:
    """Whether a permission request asks to let a command run outside the sandbox (`LEAVES_SANDBOX_META`)."""
    ours = (call.meta or {}).get("coder-agent")
    return isinstance(ours, dict) and ours.get("leavesSandbox") is True


@dataclass(frozen=True)
class CommandResult:
    """A finished command: its output (capped), and how it ended."""

    output: str
    exit_code: int | None
    signal: str | None
    timed_out: bool
    truncated: bool


SYSTEM_SHELLS = ("/bin/bash", "/usr/bin/bash")
"""The system's bash, preferred to any on PATH: a command let out of the walls starts no program a command planted."""


def shell_argv(command: str, outside: Iterable[Path] = ()) -> list[str]:
    """The shell and its arguments for a command line: the system's bash (`SYSTEM_SHELLS`), else the first `bash` on
    PATH outside the folders `outside` (those the session's commands may write: `process.find_program`), else
    /bin/sh."""
    system = next((shell for shell in SYSTEM_SHELLS if os.access(shell, os.X_OK)), None)
    return [system or find_program("bash", outside=outside) or "/bin/sh", "-c", command]


async def command_line(
    command: str, sandbox: CommandSandbox | None, folders: Sequence[Path] = ()
) -> tuple[list[str], dict[str, str]]:
    """The command line that runs a shell command (inside `sandbox` if given; its shell from no PATH entry inside
    `folders`), and what its environment gets on top of the agent's (scrubbed of keys) and `COMMAND_ENV`."""
    argv = shell_argv(command, folders)
    return await sandbox.launch(argv) if sandbox is not None else (held_together(argv, agent_is_parent=False), {})


class ClientBridge(Protocol):
    """The environment, as one session sees it (through `session.redacting_bridge.RedactingBridge`, which redacts
    what reaches it and keeps the replay log)."""

    @property
    def supports_compaction_updates(self) -> bool: ...

    @property
    def supports_boolean_options(self) -> bool:
        """Whether the client shows boolean config options (`session.configOptions.boolean`)."""
        ...

    async def update(self, update: SessionUpdate, *, live_only: bool = False) -> None:
        """Show one `session/update`; `live_only` ones are not replayed by `session/load`."""
        ...

    async def notice(self, severity: NoticeSeverity, title: str, description: str | None = None) -> None:
        """Tell the user something live (a retry, a server that failed); never replayed."""
        ...

    async def turn_starting(self) -> None:
        """A model turn is about to begin: say now what the user should read before its answer (once)."""
        ...

    async def read_text_file(
        self, path: Path, *, line: int | None = None, limit: int | None = None, real: Path | None = None
    ) -> str:
        """The file's current text (the editor's buffer if it has one), or lines `line`.. of it; BridgeError.

        `real` is where the path was checked to lead (every symlink resolved): a read from the disk reaches
        exactly that place, following no symlink, or fails saying the path changed."""
        ...

    async def write_text_file(self, path: Path, content: str, *, real: Path | None = None) -> None:
        """Write the whole file (the editor writes it when it can, else an atomic write); BridgeError.
        `real`: as for `read_text_file`; a write to the disk goes exactly there."""
        ...

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
        """Run a shell command line, its whole process tree bounded by `timeout` and killed on cancel; inside
        `sandbox`'s walls when one is given. `folders`: where the session's commands may write (no shell is taken
        from a PATH entry there).

        `show` is called with what lets the user watch it (an editor terminal) as soon as there is one.
        BridgeError if it could not be started.
        """
        ...

    async def start_command(
        self,
        command: str,
        *,
        cwd: Path,
        sandbox: CommandSandbox | None = None,
        with_input: bool = False,
        folders: Sequence[Path] = (),
    ) -> BackgroundCommand:
        """Start a shell command line in the background (a job), inside `sandbox`'s walls when one is given, with its
        standard input open for writing with `with_input` (else it reads end of file); `folders` as for
        `run_command`. BridgeError if it could not be started. Its owner runs it, and releases it once it has
        ended."""
        ...

    def lsp_channel(self) -> LspCall | None:
        """The client's language servers (draft `lsp/servers`, `lsp/request`: `lsp.editor`), when it offers them."""
        ...

    def subagent_bridge(self, child_id: str) -> ClientBridge | None:
        """The client as a sub-agent's own session `child_id` sees it, when the client shows sub-agent sessions
        (ACP's `subagents` capability); None when it does not."""
        ...

    async def request_permission(self, call: ToolCallUpdate, choices: Sequence[Choice]) -> str | None:
        """Ask the user about a tool call; the id of the choice picked among `choices` (its kind unless it has an
        id of its own; an answer that names none of them is `reject_once`: `permissions.chosen`), or None if the
        turn was cancelled. NoOneToAsk when no one can answer."""
        ...

    async def ask(self, question: Question) -> Answer:
        """Ask the user a question (a form, or a web page to open) and wait as long as they need.

        A question that cannot be shown (the client does not offer that kind, no one to ask, or it asks for a
        secret in a form) is not sent: the answer is `decline` with `unasked` saying why. BridgeError if the
        client failed to answer; cancelled with the turn.
        """
        ...

    async def url_done(self, elicitation_id: str) -> None:
        """Tell the user a web page they were sent to (an accepted `UrlQuestion`) has done its job."""
        ...
