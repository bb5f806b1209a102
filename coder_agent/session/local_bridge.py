"""`LocalBridge`: the session's environment on the local machine — the disk, process groups, and permission
answers and questions for whoever runs the agent without an editor.

It serves headless runs whole, and it is what the editor bridge falls back to for what an editor does not
offer (no `fs` or no `terminal` capability). Files are read as UTF-8 only, a window of lines is streamed
(never the whole file for twenty lines of it), and writes replace the file atomically. Given the real place a
path was checked at, reads and writes go there without following any symlink (`nofollow`). Commands run in
their own process group (watched by the reaper, so they die with the agent), with the model keys left out
of their environment; the group is killed on timeout or cancel, and what they leave running ends with them
(inside the walls by their PID namespace, outside by a supervisor: `sandbox/supervisor.py`). Background commands
(jobs) are started the same way (`session.local_job`). Questions go to a callable (`ask_user`); by default there is
no one to ask, and the answer says so.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import anyio

from coder_agent import nofollow
from coder_agent.atomic import write_atomic
from coder_agent.permissions import Choice, chosen
from coder_agent.process import PipedLeader, signal_group, spawn_group, stop_group
from coder_agent.protocol.schema import NoticeSeverity, SessionUpdate, ToolCallUpdate
from coder_agent.sandbox.command import CommandSandbox
from coder_agent.sandbox.probe import held_together
from coder_agent.secrets import child_environ
from coder_agent.session import user_questions
from coder_agent.session.bridge import (
    COMMAND_ENV,
    OUTPUT_BYTE_LIMIT,
    BridgeError,
    CommandResult,
    ShowContent,
    shell_argv,
)
from coder_agent.session.local_job import DRAIN_GRACE, KILL_GRACE, LocalJob, spawn_failure, start_local_job

HEAD_BYTES = OUTPUT_BYTE_LIMIT // 5
TAIL_BYTES = OUTPUT_BYTE_LIMIT - HEAD_BYTES
WINDOW_MAX_BYTES = 4_000_000
"""A window of lines read at most (a 400 MB file of one line must not come into memory whole)."""
LINE_CHUNK = 65_536

Sink = Callable[[SessionUpdate], Awaitable[None]]
Answer = Callable[[ToolCallUpdate, Sequence[Choice]], Awaitable[str | None]]
AskUser = Callable[[user_questions.Question], Awaitable[user_questions.Answer]]
NO_ONE_TO_ASK = "no one can be asked: the agent runs without an editor or a terminal to ask in"
CHANGED = "{path} changed since it was checked (a symlink now leads elsewhere); nothing was done."


async def _refuse(call: ToolCallUpdate, choices: Sequence[Choice]) -> str | None:
    return "reject_once"


async def _no_one(question: user_questions.Question) -> user_questions.Answer:
    return user_questions.not_asked(NO_ONE_TO_ASK)


class LocalBridge:
    """The local machine as a `ClientBridge`; updates go to `sink` (nowhere by default), permission questions
    to `answer` (refused by default: with no one to ask, nothing that needs asking runs; it may raise
    `NoOneToAsk` to stop the turn at the call instead), questions for the user to `ask_user` (by default
    declined, `unasked` saying there is no one to ask)."""

    def __init__(self, sink: Sink | None = None, answer: Answer = _refuse, ask_user: AskUser = _no_one) -> None:
        self.sink = sink
        self.answer = answer
        self.ask_user = ask_user

    @property
    def supports_compaction_updates(self) -> bool:
        return True

    @property
    def supports_boolean_options(self) -> bool:
        return False  # no one picks options: a run's settings come from its flags

    async def update(self, update: SessionUpdate, *, live_only: bool = False) -> None:
        if self.sink is not None:
            await self.sink(update)

    async def notice(self, severity: NoticeSeverity, title: str, description: str | None = None) -> None:
        from coder_agent.protocol.schema import NoticeUpdate

        await self.update(NoticeUpdate(severity=severity, title=title, description=description), live_only=True)

    async def turn_starting(self) -> None:
        return None

    async def request_permission(self, call: ToolCallUpdate, choices: Sequence[Choice]) -> str | None:
        answer = await self.answer(call, choices)
        return None if answer is None else chosen(choices, answer)

    async def ask(self, question: user_questions.Question) -> user_questions.Answer:
        problem = user_questions.refusal(question)
        return user_questions.not_asked(problem) if problem else await self.ask_user(question)

    async def url_done(self, elicitation_id: str) -> None:
        return None

    # ---- files --------------------------------------------------------------------------------

    async def read_text_file(
        self, path: Path, *, line: int | None = None, limit: int | None = None, real: Path | None = None
    ) -> str:
        try:
            if line is None and limit is None:
                data = await anyio.to_thread.run_sync(_read_all, path, real)
            else:
                data = await anyio.to_thread.run_sync(_read_window, path, line or 1, limit, real)
        except nofollow.Swapped:
            raise BridgeError(CHANGED.format(path=path)) from None
        except FileNotFoundError:
            raise BridgeError(f"{path} does not exist.") from None
        except IsADirectoryError:
            raise BridgeError(f"{path} is a directory; use glob to list it.") from None
        except OSError as exc:
            raise BridgeError(f"Could not read {path}: {exc.strerror or exc}") from None
        if line is not None or limit is not None:
            return data.decode("utf-8", errors="replace")  # a window may end inside a character
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise BridgeError(f"{path} is not a UTF-8 text file; it was not read.") from None

    async def write_text_file(self, path: Path, content: str, *, real: Path | None = None) -> None:
        try:
            await anyio.to_thread.run_sync(_write, path, content, real)
        except nofollow.Swapped:
            raise BridgeError(CHANGED.format(path=path)) from None
        except OSError as exc:
            raise BridgeError(f"Could not write {path}: {exc.strerror or exc}") from None

    # ---- commands -----------------------------------------------------------------------------

    async def run_command(
        self,
        command: str,
        *,
        cwd: Path,
        timeout: float,
        show: ShowContent,
        sandbox: CommandSandbox | None = None,
        stdin: bytes | None = None,
        folders: Sequence[Path] = (),
    ) -> CommandResult:
        """Run a command line to its end (`stdin`: what it reads, from an unlinked file; None: nothing)."""
        guard = sandbox.guard() if sandbox is not None else None
        env = {**child_environ(), **COMMAND_ENV}
        argv = shell_argv(command, (*folders, cwd))
        with tempfile.TemporaryFile() if stdin is not None else contextlib.nullcontext() as given:
            if given is not None and stdin is not None:
                given.write(stdin)
                given.seek(0)
            reads = given.fileno() if given is not None else None
            try:
                if sandbox is not None:
                    process: PipedLeader = await sandbox.start(argv, cwd, env, stdin=reads)
                else:
                    process = await spawn_group(
                        held_together(argv, agent_is_parent=True),
                        cwd=cwd,
                        env=env,
                        stdin=subprocess.DEVNULL if reads is None else reads,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT,
                    )
            except OSError as exc:
                raise BridgeError(spawn_failure(cwd, exc)) from None
        output = _Output()
        timed_out = False
        drained = anyio.Event()

        async def collect() -> None:
            assert process.stdout is not None
            async for chunk in process.stdout:
                output.add(chunk)
            drained.set()

        try:
            async with anyio.create_task_group() as task_group:
                task_group.start_soon(collect)
                with anyio.move_on_after(timeout) as waiting:
                    await process.wait()
                if waiting.cancelled_caught:
                    timed_out = True
                    signal_group(process, signal.SIGKILL)
                # Read what is left, but do not wait on background children that keep the pipe open.
                with anyio.move_on_after(DRAIN_GRACE):
                    await drained.wait()
                task_group.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await stop_group(process, grace=KILL_GRACE)
                after = await guard.finish() if guard is not None else ""
        code = process.returncode
        signal_name = signal.Signals(-code).name if code is not None and code < 0 else None
        return CommandResult(
            output=output.text() + after,
            exit_code=None if signal_name else code,
            signal=signal_name,
            timed_out=timed_out,
            truncated=output.dropped > 0,
        )

    async def start_command(
        self,
        command: str,
        *,
        cwd: Path,
        sandbox: CommandSandbox | None = None,
        with_input: bool = False,
        folders: Sequence[Path] = (),
    ) -> LocalJob:
        return await start_local_job(command, cwd=cwd, sandbox=sandbox, with_input=with_input, folders=folders)

    def subagent_bridge(self, child_id: str) -> None:
        return None  # no one shows a sub-agent's session: its work shows in the parent's tool call

    def lsp_channel(self) -> None:
        return None  # the language servers here are the agent's own (`lsp.pool`)


class _Output:
    """The first and the last part of a command's output, like the model's view of it."""

    def __init__(self) -> None:
        self.head = bytearray()
        self.tail: list[bytes] = []
        self.tail_size = 0
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        room = HEAD_BYTES - len(self.head)
        if room > 0:
            self.head.extend(chunk[:room])
            chunk = chunk[room:]
        if chunk:
            self.tail.append(chunk)
            self.tail_size += len(chunk)
            while self.tail_size > TAIL_BYTES and len(self.tail) > 1:
                first = self.tail.pop(0)
                self.tail_size -= len(first)
                self.dropped += len(first)

    def text(self) -> str:
        gap = f"\n[… {self.dropped} bytes of output dropped …]\n".encode() if self.dropped else b""
        return (bytes(self.head) + gap + b"".join(self.tail)).decode("utf-8", errors="replace")


def _read_all(path: Path, real: Path | None) -> bytes:
    return nofollow.read_bytes(real) if real is not None else path.read_bytes()


def _read_window(path: Path, first: int, limit: int | None, real: Path | None = None) -> bytes:
    """Lines `first`..`first+limit-1` (1-based) of a file, streamed, at most WINDOW_MAX_BYTES of them."""
    kept = bytearray()
    number = 1
    with nofollow.open_file(real) if real is not None else path.open("rb") as handle:
        while limit is None or number < first + limit:
            piece = handle.readline(LINE_CHUNK)
            if not piece:
                break
            if number >= first and len(kept) < WINDOW_MAX_BYTES:
                kept += piece[: WINDOW_MAX_BYTES - len(kept)]
            if piece.endswith(b"\n"):
                number += 1
    return bytes(kept)


def _write(path: Path, content: str, real: Path | None) -> None:
    if real is not None and nofollow.SUPPORTED:
        nofollow.write_atomic(real, content.encode("utf-8"))
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, content.encode("utf-8"))
