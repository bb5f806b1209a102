"""A fake editor for tests: a real implementation of the client side of ACP's fs/*, terminal/* and permission methods.

`FakeEditor` owns what an editor does when an agent calls it: reading files (an unsaved buffer wins over the disk),
writing files, running commands in terminals (real processes, each in its own session/process group), and answering
`session/request_permission` from a script or holding the answer until the test decides. It plugs into a
`tests.support.acp_client.FakeClient` by registering handlers in `client.handlers`; every result it returns goes
back through the client's conformance checker, so it must (and does) match the ACP schema.

Usage::

    async with in_process_agent(runner) as client:
        editor = FakeEditor(client, root=tmp_path)
        await client.initialize(editor.capabilities())
        ...
        assert editor.unreleased() == [] and editor.live_pids() == []
        await editor.aclose()

Cleanup: each terminal is watched by one background task (started in `task_group`, else in `client._task_group`)
that collects output and reaps the process. If that task group is cancelled (e.g. `in_process_agent` exiting), the
task kills the terminal's whole process group and reaps the leader before it ends (shielded), so nothing outlives
the test. `terminal/release` and `terminal/kill` kill the whole group; `aclose()` kills every group this editor
created, waits for the watchers, and answers held permission requests with "cancelled". `live_pids()` lists any
process still alive in one of those groups (zombies excluded).
"""

from __future__ import annotations

import codecs
import contextlib
import itertools
import os
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import anyio
from anyio.abc import Process, TaskGroup

from tests.support.acp_client import FakeClient, RpcFailure
from tests.support.processes import group_members

__all__ = ["PERMISSION_CHOICES", "FakeEditor", "PendingPermission", "Terminal", "capabilities"]

NOT_FOUND: Final = -32002  # ACP's "resource not found"
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603

PERMISSION_CHOICES: Final = ("allow_once", "allow_always", "reject_once", "reject_always", "cancelled")
RAW_ANSWER: Final = "id:"
"""A scripted answer `id:<text>` selects the option id `<text>` whatever was offered (a client that answers badly)."""
OPTION: Final = "option:"
"""A scripted answer `option:<id>` selects the offered option with that id (prompts whose options share a kind)."""

_EXIT_POLL: Final = 0.05  # older anyio only notices an exit once the pipes close; poll returncode meanwhile
_DRAIN_GRACE: Final = 0.2  # after the command exits, how long to wait for the last output before reporting the exit
_REAP_TIMEOUT: Final = 5.0
_READ_CHUNK: Final = 65536


def capabilities(fs: bool = True, terminal: bool = True) -> dict[str, Any]:
    """The `clientCapabilities` JSON for `client.initialize(...)`."""
    return {"fs": {"readTextFile": fs, "writeTextFile": fs}, "terminal": terminal}


def _failure(code: int, message: str) -> RpcFailure:
    return RpcFailure({"code": code, "message": message})


def _absolute(params: dict[str, Any], key: str = "path") -> str:
    path = params[key]
    if not os.path.isabs(path):
        raise _failure(INVALID_PARAMS, f"{key} must be absolute, got {path!r}")
    return os.path.normpath(path)


def _select_lines(text: str, line: int | None, limit: int | None) -> str:
    """Lines `line` (1-based) .. `line + limit - 1` of `text`, each with its newline, as an editor slices a buffer."""
    if line is None and limit is None:
        return text
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    start = max((line or 1) - 1, 0)
    end = len(lines) if limit is None else start + limit
    return "".join(lines[start:end])


@dataclass(eq=False)
class Terminal:
    """One terminal the agent created; kept after release so tests can inspect it."""

    terminal_id: str
    session_id: str
    command: str
    args: list[str]
    argv: list[str]  # what was actually executed
    cwd: str
    env: dict[str, str]  # only the variables the agent asked for
    output_byte_limit: int | None
    process: Process
    pgid: int
    output: bytearray = field(default_factory=bytearray)
    truncated: bool = False
    exit_code: int | None = None
    signal: str | None = None
    released: bool = False
    exited: anyio.Event = field(default_factory=anyio.Event)  # the command exited (and its output was drained)
    eof: anyio.Event = field(default_factory=anyio.Event)  # every writer of the output pipe is gone
    done: anyio.Event = field(default_factory=anyio.Event)  # the watcher finished: process reaped, pipe closed

    def append(self, data: bytes) -> None:
        """Add output, dropping bytes from the beginning past the limit, at a UTF-8 character boundary."""
        self.output += data
        limit = self.output_byte_limit
        if limit is None or len(self.output) <= limit:
            return
        cut = len(self.output) - limit
        while cut < len(self.output) and self.output[cut] & 0xC0 == 0x80:  # never start inside a character
            cut += 1
        del self.output[:cut]
        self.truncated = True

    def text(self) -> str:
        """The retained output; a trailing incomplete character is held back until it completes or the pipe ends."""
        return codecs.getincrementaldecoder("utf-8")("replace").decode(bytes(self.output), final=self.eof.is_set())

    def exit_status(self) -> dict[str, Any]:
        return {"exitCode": self.exit_code, "signal": self.signal}

    def record_exit(self, returncode: int) -> None:
        if returncode < 0:
            try:
                self.signal = signal.Signals(-returncode).name
            except ValueError:
                self.signal = f"SIG{-returncode}"
            self.exit_code = None
        else:
            self.exit_code = returncode
            self.signal = None


@dataclass(eq=False)
class PendingPermission:
    """A held `session/request_permission`; `resolve(choice)` answers it."""

    params: dict[str, Any]
    choice: str | None = None
    answered: anyio.Event = field(default_factory=anyio.Event)

    @property
    def session_id(self) -> str:
        return str(self.params["sessionId"])

    def resolve(self, choice: str | None = None) -> None:
        """Answer with `choice` (see PERMISSION_CHOICES); None takes the next scripted answer."""
        if choice is not None and choice not in PERMISSION_CHOICES and not choice.startswith((RAW_ANSWER, OPTION)):
            raise ValueError(f"unknown permission choice {choice!r}; use one of {PERMISSION_CHOICES}")
        if not self.answered.is_set():
            self.choice = choice
            self.answered.set()


class FakeEditor:
    """The editor behind a FakeClient: files under a real directory, real processes, scripted permission answers.

    Only the methods advertised by `capabilities()` are served (fs and terminal on by default); the others stay
    unregistered, so the FakeClient answers them with -32601 as an editor without the capability would.
    """

    def __init__(
        self,
        client: FakeClient,
        root: str | os.PathLike[str] | None = None,
        *,
        fs: bool = True,
        terminal: bool = True,
        task_group: TaskGroup | None = None,
    ) -> None:
        self.client = client
        self.root = Path(root).resolve() if root is not None else None
        self._task_group = task_group
        self._ids = itertools.count(1)
        self._closed = False
        # fs
        self.buffers: dict[str, str] = {}  # unsaved editor buffers by normalized absolute path
        self.reads: list[dict[str, Any]] = []  # params of every fs/read_text_file
        self.writes: list[tuple[str, str]] = []  # (path, content) of every successful fs/write_text_file
        self.fail_writes = False
        # terminals
        self.terminals: dict[str, Terminal] = {}  # every terminal created, in order (released ones included)
        self.released: list[str] = []  # ids, in release order
        self.shell_without_args = True  # a command with no args runs as a shell line (`sh -c command`)
        # permissions
        self.permission_answers: list[str] = []  # consumed first-in first-out
        self.default_permission = "allow_once"
        self.hold_permissions = False
        self.permission_requests: list[dict[str, Any]] = []  # params of every request, in arrival order
        self.permission_outcomes: list[dict[str, Any]] = []  # the outcome object sent for each answered request
        self.pending_permissions: list[PendingPermission] = []  # held, not yet answered
        self._permission_arrived: anyio.Event | None = None  # created lazily: __init__ may run outside the loop
        self.client.handlers["session/request_permission"] = self.request_permission
        self.capabilities(fs=fs, terminal=terminal)

    # ---- setup ----------------------------------------------------------------------------------

    def capabilities(self, fs: bool | None = None, terminal: bool | None = None) -> dict[str, Any]:
        """The `clientCapabilities` to initialize with; passing a flag also (un)registers the matching handlers."""
        if fs is not None:
            self.fs = fs
            self._register(fs, {"fs/read_text_file": self.read_text_file, "fs/write_text_file": self.write_text_file})
        if terminal is not None:
            self.terminal = terminal
            self._register(
                terminal,
                {
                    "terminal/create": self.terminal_create,
                    "terminal/output": self.terminal_output,
                    "terminal/wait_for_exit": self.terminal_wait_for_exit,
                    "terminal/kill": self.terminal_kill,
                    "terminal/release": self.terminal_release,
                },
            )
        return capabilities(self.fs, self.terminal)

    def _register(self, on: bool, handlers: dict[str, Any]) -> None:
        for method, handler in handlers.items():
            if on:
                self.client.handlers[method] = handler
            else:
                self.client.handlers.pop(method, None)

    def path(self, *parts: str) -> str:
        """An absolute path under `root`."""
        if self.root is None:
            raise RuntimeError("FakeEditor has no root directory")
        return str(self.root.joinpath(*parts))

    def set_buffer(self, path: str | os.PathLike[str], text: str) -> None:
        """Simulate an open buffer with unsaved changes: reads of `path` see `text`, not the disk."""
        self.buffers[os.path.normpath(os.fspath(path))] = text

    # ---- fs -------------------------------------------------------------------------------------

    async def read_text_file(self, params: dict[str, Any]) -> dict[str, Any]:
        self.reads.append(params)
        path = _absolute(params)
        text = self.buffers.get(path)
        if text is None:
            try:
                with open(path, encoding="utf-8", newline="") as f:  # noqa: ASYNC230 - small local test files
                    text = f.read()
            except FileNotFoundError:
                raise _failure(NOT_FOUND, f"Resource not found: {path}") from None
            except (OSError, UnicodeDecodeError) as error:
                raise _failure(INTERNAL_ERROR, f"cannot read {path}: {error}") from None
        return {"content": _select_lines(text, params.get("line"), params.get("limit"))}

    async def write_text_file(self, params: dict[str, Any]) -> dict[str, Any]:
        path = _absolute(params)
        content: str = params["content"]
        if self.fail_writes:
            raise _failure(INTERNAL_ERROR, f"cannot write {path}: writes fail in this test")
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8", newline="") as f:  # noqa: ASYNC230 - small local test files
                f.write(content)
        except OSError as error:
            raise _failure(INTERNAL_ERROR, f"cannot write {path}: {error}") from None
        self.buffers.pop(path, None)  # the buffer is saved: it now matches the disk
        self.writes.append((path, content))
        return {}

    # ---- terminals ------------------------------------------------------------------------------

    async def terminal_create(self, params: dict[str, Any]) -> dict[str, Any]:
        if self._closed:
            raise _failure(INTERNAL_ERROR, "the editor is closed")
        command: str = params["command"]
        args: list[str] = list(params.get("args") or [])
        env_list: list[dict[str, str]] = list(params.get("env") or [])
        env = {item["name"]: item["value"] for item in env_list}
        if params.get("cwd") is not None:
            cwd = _absolute(params, "cwd")
        else:
            cwd = str(self.root) if self.root is not None else os.getcwd()
        argv = ["/bin/sh", "-c", command] if not args and self.shell_without_args else [command, *args]
        task_group = self._task_group or self.client._task_group
        if task_group is None:
            raise RuntimeError("FakeEditor needs a task group: pass task_group= or set client._task_group")
        try:
            process = await anyio.open_process(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                env={**os.environ, **env},
                start_new_session=True,
            )
        except OSError as error:
            raise _failure(INTERNAL_ERROR, f"cannot start {command!r}: {error}") from None
        terminal = Terminal(
            terminal_id=f"term-{next(self._ids)}",
            session_id=str(params["sessionId"]),
            command=command,
            args=args,
            argv=argv,
            cwd=cwd,
            env=env,
            output_byte_limit=params.get("outputByteLimit"),
            process=process,
            pgid=process.pid,  # start_new_session: the leader's pid names its session and process group
        )
        self.terminals[terminal.terminal_id] = terminal
        task_group.start_soon(self._watch, terminal)
        return {"terminalId": terminal.terminal_id}

    async def terminal_output(self, params: dict[str, Any]) -> dict[str, Any]:
        terminal = self._terminal(params)
        result: dict[str, Any] = {"output": terminal.text(), "truncated": terminal.truncated}
        if terminal.exited.is_set():
            result["exitStatus"] = terminal.exit_status()
        return result

    async def terminal_wait_for_exit(self, params: dict[str, Any]) -> dict[str, Any]:
        terminal = self._terminal(params)
        await terminal.exited.wait()
        return terminal.exit_status()

    async def terminal_kill(self, params: dict[str, Any]) -> dict[str, Any]:
        terminal = self._terminal(params)
        self._kill_group(terminal)
        return {}

    async def terminal_release(self, params: dict[str, Any]) -> dict[str, Any]:
        terminal = self._terminal(params)
        terminal.released = True
        self.released.append(terminal.terminal_id)
        self._kill_group(terminal)  # also takes background children left behind by a command that exited
        with anyio.move_on_after(_REAP_TIMEOUT):
            await terminal.done.wait()
        return {}

    def _terminal(self, params: dict[str, Any]) -> Terminal:
        terminal_id = params["terminalId"]
        terminal = self.terminals.get(terminal_id)
        if terminal is None or terminal.released:
            raise _failure(NOT_FOUND, f"Resource not found: terminal {terminal_id!r}")
        if terminal.session_id != params["sessionId"]:
            session_id = params["sessionId"]
            raise _failure(NOT_FOUND, f"Resource not found: terminal {terminal_id!r} in session {session_id!r}")
        return terminal

    def unreleased(self) -> list[str]:
        """Ids of terminals the agent created and has not released."""
        return [t.terminal_id for t in self.terminals.values() if not t.released]

    @staticmethod
    def _kill_group(terminal: Terminal) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):  # the whole group is gone already
            os.killpg(terminal.pgid, signal.SIGKILL)

    async def _watch(self, terminal: Terminal) -> None:
        """Collect the terminal's output and record its exit; on cancellation, kill its group and reap it."""
        process = terminal.process
        finished = False
        try:
            async with anyio.create_task_group() as pumps:
                pumps.start_soon(self._pump, terminal)
                while process.returncode is None:
                    with anyio.move_on_after(_EXIT_POLL):
                        await process.wait()
                with anyio.move_on_after(_DRAIN_GRACE):  # children may hold the pipe open: don't wait for them
                    await terminal.eof.wait()
                terminal.record_exit(process.returncode)
                terminal.exited.set()
                # the pump goes on until every writer is gone (children exit, or kill/release/aclose kills them)
            finished = True
        finally:
            with anyio.CancelScope(shield=True):
                if not finished:
                    self._kill_group(terminal)
                with anyio.move_on_after(_REAP_TIMEOUT):
                    await process.aclose()
                if not terminal.exited.is_set() and process.returncode is not None:
                    terminal.record_exit(process.returncode)
                    terminal.exited.set()
                terminal.done.set()

    @staticmethod
    async def _pump(terminal: Terminal) -> None:
        stream = terminal.process.stdout
        assert stream is not None
        try:
            while True:
                terminal.append(await stream.receive(_READ_CHUNK))
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            terminal.eof.set()

    def live_pids(self) -> list[int]:
        """PIDs still alive (zombies excluded) in any process group this editor created."""
        return group_members(*{t.pgid for t in self.terminals.values()})

    async def wait_no_live_pids(self, timeout: float = 5.0) -> list[int]:
        """Poll until `live_pids()` is empty (SIGKILL is not instantaneous); return what is still alive at timeout."""
        with anyio.move_on_after(timeout):
            while self.live_pids():
                await anyio.sleep(0.02)
        return self.live_pids()

    # ---- permissions ----------------------------------------------------------------------------

    async def request_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        self.permission_requests.append(params)
        if self.hold_permissions and not self._closed:
            pending = PendingPermission(params)
            self.pending_permissions.append(pending)
            if self._permission_arrived is not None:
                self._permission_arrived.set()
                self._permission_arrived = None
            try:
                await pending.answered.wait()
            finally:
                if pending in self.pending_permissions:
                    self.pending_permissions.remove(pending)
            choice = pending.choice or self._next_choice()
        else:
            choice = self._next_choice()
        outcome = self._outcome(params, choice)
        self.permission_outcomes.append(outcome)
        return {"outcome": outcome}

    def _next_choice(self) -> str:
        choice = self.permission_answers.pop(0) if self.permission_answers else self.default_permission
        if choice not in PERMISSION_CHOICES and not choice.startswith((RAW_ANSWER, OPTION)):
            raise AssertionError(f"unknown scripted permission answer {choice!r}; use one of {PERMISSION_CHOICES}")
        return choice

    @staticmethod
    def _outcome(params: dict[str, Any], choice: str) -> dict[str, Any]:
        if choice == "cancelled":
            return {"outcome": "cancelled"}
        if choice.startswith(RAW_ANSWER):
            return {"outcome": "selected", "optionId": choice.removeprefix(RAW_ANSWER)}
        if choice.startswith(OPTION):
            wanted = choice.removeprefix(OPTION)
            ids = [option["optionId"] for option in params["options"]]
            if wanted not in ids:
                raise AssertionError(f"the editor was scripted to pick the option {wanted!r}; {ids} were offered")
            return {"outcome": "selected", "optionId": wanted}
        for option in params["options"]:
            if option["kind"] == choice:
                return {"outcome": "selected", "optionId": option["optionId"]}
        kinds = [option["kind"] for option in params["options"]]
        raise AssertionError(f"the editor was scripted to pick {choice!r}, but the agent only offered {kinds}")

    async def wait_for_permission_request(self, count: int = 1, timeout: float = 10.0) -> PendingPermission:
        """Wait until at least `count` requests are held; return the `count`-th (oldest first)."""
        with anyio.fail_after(timeout):
            while len(self.pending_permissions) < count:
                if self._permission_arrived is None:
                    self._permission_arrived = anyio.Event()
                await self._permission_arrived.wait()
        return self.pending_permissions[count - 1]

    def release_permissions(self, choice: str | None = None, session_id: str | None = None) -> int:
        """Answer the held requests (of `session_id`, if given) with `choice` (None: the script); return how many."""
        pending = [p for p in self.pending_permissions if session_id is None or p.session_id == session_id]
        for request in pending:
            request.resolve(choice)
        return len(pending)

    async def cancel(self, session_id: str) -> None:
        """What an editor does when the user cancels a turn: send `session/cancel`, then answer held requests
        of that session with the "cancelled" outcome (ACP: the Client MUST respond to them with it)."""
        await self.client.notify("session/cancel", {"sessionId": session_id})
        self.release_permissions("cancelled", session_id)

    # ---- cleanup --------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Kill every process group this editor started, wait for the watchers, cancel held permissions."""
        self._closed = True
        self.release_permissions("cancelled")
        for terminal in self.terminals.values():
            self._kill_group(terminal)
        with anyio.move_on_after(_REAP_TIMEOUT):
            for terminal in self.terminals.values():
                await terminal.done.wait()

    async def __aenter__(self) -> FakeEditor:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
