"""One language server the agent started: its process, the LSP conversation with it (pygls's client and
lsprotocol's types: no framing of our own), the documents it was told of, and the diagnostics it gave.

The server is the agent's own child (`process.spawn_group`: its own process group, ended with the agent), started
inside the session's walls when there are some (`wrap`, as sandboxed MCP servers are), with the environment
commands get (no keys). Its stdout is read through a bounded reader: a header line over 64 KiB or a message over
64 MiB ends the connection (a server printing garbage or flooding cannot make the agent hold more); its stderr
goes to the log (its last lines explain a crash).

Diagnostics come one of two ways: a server that offers them on request (`diagnosticProvider`: basedpyright,
pyright) is asked (`textDocument/diagnostic`) after each change; a server that only publishes them
(typescript-language-server, gopls, rust-analyzer, clangd) is made to analyse the file afresh (the document is
closed and opened again with the new text: every one of them publishes on open, while some publish nothing when
a change leaves a file as clean as it was) and its publications are collected until it has been quiet for a short
while. Either way the wait is bounded: the caller's deadline ends it, and the diagnostics are then unknown (None).
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import Process, TaskGroup
from anyio.streams.buffered import BufferedByteReceiveStream

from coder_agent.lsp.diagnostics import Diagnostic, from_lsp
from coder_agent.lsp.servers import ServerKind, initialization_options, language_id
from coder_agent.process import spawn_group, stop_group
from coder_agent.secrets import child_environ

if TYPE_CHECKING:
    from pygls.lsp.client import LanguageClient

log = logging.getLogger(__name__)

CommandWrapper = Callable[[list[str]], Awaitable[tuple[list[str], dict[str, str]]]]
"""Turns a command line into one that runs it inside the session's walls, with the environment additions."""

MAX_HEADER_BYTES = 64 * 1024
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
STDERR_TAIL_LINES = 12
SHUTDOWN_GRACE = 1.0
STDERR_GRACE = 0.5
PULL_RETRY_PAUSE = 0.1
"""Before asking a server that refused (busy) for a file's diagnostics again."""
INTERPRETERS = ("python", "node", "bun", "deno", "java", "ruby", "perl")


class ServerFailed(Exception):
    """The server could not start, stopped answering, or died; the message says which, for one notice."""


@dataclass
class _Published:
    """What the server last published for one document."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    version: int | None = None
    count: int = 0
    """How many publications arrived for it (to tell a new one from the last)."""


@dataclass
class _Document:
    text: str
    version: int


class _Reader:
    """pygls's reader interface over the server's stdout, bounded (see the module docstring)."""

    def __init__(self, stream: BufferedByteReceiveStream) -> None:
        self._stream = stream

    async def readline(self) -> bytes:
        try:
            return await self._stream.receive_until(b"\n", MAX_HEADER_BYTES) + b"\n"
        except anyio.DelimiterNotFound:
            log.warning("a language server wrote a line over %d bytes to stdout; dropping it", MAX_HEADER_BYTES)
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        return b""

    async def readexactly(self, size: int) -> bytes:
        if size > MAX_MESSAGE_BYTES:
            log.warning("a language server sent a message of %d bytes; dropping it", size)
            return b""
        try:
            return await self._stream.receive_exactly(size)
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.ClosedResourceError, anyio.BrokenResourceError):
            return b""


class _Writer:
    """pygls's writer interface: messages queued in order, sent to the server's stdin by one task."""

    def __init__(self) -> None:
        self.send, self.receive = anyio.create_memory_object_stream[bytes](math.inf)

    def write(self, data: bytes) -> None:
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            self.send.send_nowait(data)

    def close(self) -> None:
        self.send.close()


class _QuietLog:
    """The logger pygls's read loop reports to: a message it could not handle is one line, not a traceback."""

    def debug(self, message: str, *args: object) -> None:
        log.debug(message, *args)

    def exception(self, message: str, *args: object) -> None:
        log.info("language server: " + message, *args)


class ServerConnection:
    """A started language server for one root folder (see the module docstring)."""

    def __init__(self, kind: ServerKind, root: Path, command: list[str], wrap: CommandWrapper | None) -> None:
        self.kind = kind
        self.root = root
        self.command = command
        self._wrap = wrap
        self._process: Process | None = None
        self._client: LanguageClient | None = None
        self._writer = _Writer()
        self._documents: dict[str, _Document] = {}
        self._published: dict[str, _Published] = {}
        self._news = anyio.Event()
        self.stderr: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self._stderr_done = anyio.Event()
        self.pulls = False
        """The server offers diagnostics on request (`textDocument/diagnostic`)."""
        self.failure: str | None = None
        """Why the server is no longer usable; None while it is."""
        self.analysed = False
        """It has given diagnostics once (later waits are the short one)."""
        program = Path(command[0]).name
        self.name = kind.name if program.startswith(INTERPRETERS) else program
        """The server as the user reads it: its program, or its kind when the program is an interpreter."""

    @property
    def pid(self) -> int | None:
        """The server's process id (the leader of its process group); None before it started."""
        return self._process.pid if self._process is not None else None

    @property
    def usable(self) -> bool:
        return self.failure is None and self._process is not None and self._process.returncode is None

    async def start(self, tasks: TaskGroup, timeout: float) -> None:
        """Spawn the server and finish `initialize`; ServerFailed when it cannot, within `timeout` seconds."""
        from lsprotocol import types
        from pygls.io_ import run_async
        from pygls.lsp.client import LanguageClient

        from coder_agent import __version__

        logging.getLogger("pygls").setLevel(logging.ERROR)  # a server's own notifications are not warnings of ours
        env = child_environ()
        argv = list(self.command)
        if self._wrap is not None:
            argv, extra = await self._wrap(argv)
            env = {**env, **extra}
        read_fd, write_fd = os.pipe()
        try:
            self._process = await spawn_group(argv, env=env, cwd=self.root, stderr=write_fd)
        except OSError as exc:
            os.close(read_fd)
            raise ServerFailed(f"{self.name} could not start: {exc.strerror or exc}") from None
        finally:
            os.close(write_fd)
        process = self._process
        client = LanguageClient("coder-agent", __version__)
        self._client = client
        self._register(client)
        client.protocol.set_writer(self._writer)
        assert process.stdout is not None
        reader = _Reader(BufferedByteReceiveStream(process.stdout))
        tasks.start_soon(self._pump_stderr, read_fd)
        tasks.start_soon(self._pump_stdin)
        tasks.start_soon(self._read, run_async, reader)
        params = types.InitializeParams(
            process_id=os.getpid(),
            root_uri=self.root.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=self.root.as_uri(), name=self.root.name)],
            capabilities=_client_capabilities(),
            initialization_options=initialization_options(self.kind, self.command, self.root) or None,
            client_info=types.ClientInfo(name="coder-agent", version=__version__),
        )
        result = await self._request(client.initialize_async(params), timeout, "initialize")
        self.pulls = result.capabilities.diagnostic_provider is not None
        client.initialized(types.InitializedParams())
        if self.kind.settings:
            client.workspace_did_change_configuration(
                types.DidChangeConfigurationParams(settings=dict(self.kind.settings))
            )

    def _register(self, client: LanguageClient) -> None:
        from lsprotocol import types

        def published(params: types.PublishDiagnosticsParams) -> None:
            entry = self._published.setdefault(params.uri, _Published())
            entry.diagnostics = from_lsp(params.diagnostics)
            entry.version = params.version
            entry.count += 1
            self._wake()

        def configuration(params: types.ConfigurationParams) -> list[Any]:
            settings = self.kind.settings or {}
            return [_section(settings, item.section) for item in params.items]

        def folders(_params: None) -> list[types.WorkspaceFolder]:
            return [types.WorkspaceFolder(uri=self.root.as_uri(), name=self.root.name)]

        def register(params: types.RegistrationParams) -> None:
            if any(r.method == types.TEXT_DOCUMENT_DIAGNOSTIC for r in params.registrations):
                self.pulls = True  # offered later rather than in initialize's answer (basedpyright, pyright)
                self._wake()

        _handle(client, types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, published)
        _handle(client, types.WORKSPACE_CONFIGURATION, configuration)
        _handle(client, types.WORKSPACE_WORKSPACE_FOLDERS, folders)
        _handle(client, types.CLIENT_REGISTER_CAPABILITY, register)
        for method in (types.WINDOW_LOG_MESSAGE, types.WINDOW_SHOW_MESSAGE, types.PROGRESS, types.TELEMETRY_EVENT):
            _handle(client, method, _ignore)

        for method in (
            types.CLIENT_UNREGISTER_CAPABILITY,
            types.WINDOW_WORK_DONE_PROGRESS_CREATE,
            types.WINDOW_SHOW_MESSAGE_REQUEST,
            types.WORKSPACE_DIAGNOSTIC_REFRESH,
        ):
            _handle(client, method, _answer_nothing)

    async def _read(self, run_async: Any, reader: _Reader) -> None:
        assert self._client is not None
        try:
            await run_async(
                stop_event=self._client._stop_event,
                reader=reader,
                protocol=self._client.protocol,
                logger=_QuietLog(),
            )
        finally:
            self._lost("its output ended")

    def _wake(self) -> None:
        """Something a wait for diagnostics looks at changed (a publication, a registration)."""
        self._news.set()
        self._news = anyio.Event()

    def _lost(self, why: str) -> None:
        if self.failure is None:
            self.failure = f"{self.name} stopped: {why}"
        if self._client is not None:
            for future in list(self._client.protocol._request_futures.values()):
                if not future.done():
                    future.set_exception(ServerFailed(self.failure))
        self._news.set()

    async def _pump_stdin(self) -> None:
        process = self._process
        assert process is not None
        assert process.stdin is not None
        try:
            async with self._writer.receive:
                async for data in self._writer.receive:
                    await process.stdin.send(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            self._lost("it stopped reading")

    async def _pump_stderr(self, fd: int) -> None:
        try:
            async with anyio.wrap_file(os.fdopen(fd, "rb", buffering=0)) as stream:
                async for raw in stream:
                    line = raw.decode("utf-8", "replace").rstrip()
                    if line:
                        self.stderr.append(line[:300])
                        log.debug("%s: %s", self.name, line[:1000])
        finally:
            self._stderr_done.set()

    async def explain(self, why: str) -> str:
        """`why`, with the last lines the server wrote to stderr (waited for briefly: a dying server's last words
        often arrive after its output ended)."""
        with anyio.move_on_after(STDERR_GRACE):
            await self._stderr_done.wait()
        return why + ("; its last lines: " + " | ".join(self.stderr) if self.stderr else "")

    async def _request(self, request: Awaitable[Any], timeout: float, what: str) -> Any:
        with anyio.move_on_after(timeout) as scope:
            try:
                return await request
            except ServerFailed:
                raise
            except Exception as exc:  # an LSP error answer, or the future failed as the server died
                if self.failure is not None:
                    raise ServerFailed(self.failure) from None
                raise ServerFailed(f"{self.name} answered {what} with an error: {exc}") from None
        assert scope.cancelled_caught
        raise ServerFailed(f"{self.name} did not answer {what} within {timeout:g} s")

    # --- documents ---------------------------------------------------------------------------------------------

    def knows(self, path: Path, text: str) -> bool:
        """The server has `path` open with exactly `text`."""
        document = self._documents.get(path.as_uri())
        return document is not None and document.text == text

    async def diagnostics_of(self, path: Path, text: str, wait: float, settle: float) -> list[Diagnostic] | None:
        """Tell the server `path` now holds `text` (opened, or changed and saved), and return its diagnostics for
        it: None when they did not come within `wait` seconds (a publishing server's count as complete once it has
        been quiet for `settle` seconds). ServerFailed when the server is gone."""
        from lsprotocol import types

        client = self._require()
        uri = path.as_uri()
        document = self._documents.get(uri)
        seen = self._published.get(uri, _Published()).count
        if document is not None and self.pulls:
            version = document.version + 1
            self._documents[uri] = _Document(text, version)
            client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                    content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
                )
            )
            client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri), text))
        else:
            if document is not None:  # a publishing server analyses a reopened file afresh (module docstring)
                client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))
            version = (document.version + 1) if document is not None else 1
            self._documents[uri] = _Document(text, version)
            client.text_document_did_open(
                types.DidOpenTextDocumentParams(
                    types.TextDocumentItem(
                        uri=uri, language_id=language_id(path, self.kind), version=version, text=text
                    )
                )
            )
        if self.pulls:
            return await self._pull(uri, wait)
        with anyio.move_on_after(wait) as deadline:
            found = await self._collect(uri, seen, version, settle)
            if found is None:  # it offered diagnostics on request meanwhile (registered after initialize)
                return await self._pull(uri, deadline.deadline - anyio.current_time())
            return found
        return None

    async def _pull(self, uri: str, wait: float) -> list[Diagnostic] | None:
        from lsprotocol import types

        client = self._require()
        params = types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri))
        with anyio.move_on_after(wait):
            while True:  # a busy server may ask to be asked again (ServerCancelled, retriggerRequest)
                try:
                    report = await client.text_document_diagnostic_async(params)
                except Exception as exc:
                    if self.failure is not None:
                        raise ServerFailed(self.failure) from None
                    log.debug("%s: textDocument/diagnostic failed, asking again: %s", self.name, exc)
                    await anyio.sleep(PULL_RETRY_PAUSE)
                    continue
                items = getattr(report, "items", None)
                return from_lsp(items) if items is not None else None
        return None

    async def _collect(self, uri: str, seen: int, version: int, settle: float) -> list[Diagnostic] | None:
        """The publications for `uri` after the `seen`-th, until the server has been quiet for `settle` seconds; None
        as soon as the server offers diagnostics on request instead (the caller's deadline bounds the wait)."""
        result: list[Diagnostic] | None = None
        while True:
            entry = self._published.get(uri)
            fresh = entry is not None and entry.count > seen and (entry.version is None or entry.version >= version)
            if fresh and entry is not None:
                result = list(entry.diagnostics)
                seen = entry.count
            if self.failure is not None:
                raise ServerFailed(self.failure)
            if result is None and self.pulls:
                return None
            news = self._news
            if result is None:
                await news.wait()
                continue
            with anyio.move_on_after(settle) as quiet:
                await news.wait()
            if quiet.cancelled_caught:
                return result

    def forget(self, path: Path) -> None:
        """The file is gone: close it in the server."""
        from lsprotocol import types

        uri = path.as_uri()
        if self._documents.pop(uri, None) is not None and self.usable and self._client is not None:
            self._client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))
        self._published.pop(uri, None)

    def known_diagnostics(self) -> dict[Path, list[Diagnostic]]:
        """What the server last said of each file it has open (from its publications)."""
        out: dict[Path, list[Diagnostic]] = {}
        for uri, entry in self._published.items():
            if uri in self._documents:
                out[_path_of(uri)] = list(entry.diagnostics)
        return out

    def _require(self) -> LanguageClient:
        if self.failure is not None:
            raise ServerFailed(self.failure)
        if self._client is None or self._process is None:
            raise ServerFailed(f"{self.name} is not running")
        if self._process.returncode is not None:
            self._lost(f"it exited with status {self._process.returncode}")
            raise ServerFailed(self.failure or "")
        return self._client

    async def aclose(self) -> None:
        """`shutdown` and `exit` when it still answers, then its process group ended (SIGTERM, SIGKILL)."""
        client, process = self._client, self._process
        with anyio.CancelScope(shield=True):
            if client is not None and self.usable:
                with contextlib.suppress(Exception), anyio.move_on_after(SHUTDOWN_GRACE):
                    await client.shutdown_async(None)
                    client.exit(None)
            if self.failure is None:
                self.failure = f"{self.name} was stopped"
            if client is not None:
                client._stop_event.set()
            self._writer.close()
            if process is not None:
                await stop_group(process, stdin_grace=SHUTDOWN_GRACE, grace=SHUTDOWN_GRACE)
                with contextlib.suppress(Exception):
                    await process.aclose()


def _handle(client: Any, method: str, handler: Callable[..., Any]) -> None:
    """Answer (or take) the server's `method` with `handler` (pygls's feature registration, untyped)."""
    client.feature(method)(handler)


def _answer_nothing(_params: Any) -> None:
    return None


def _ignore(_params: Any) -> None:
    """A server's log lines and progress: not what the agent reads (its stderr tail explains failures)."""


def _section(settings: Mapping[str, object], section: str | None) -> Any:
    """The value of a dotted `section` of `settings` (None: all of them); None where it is not set."""
    if not section:
        return dict(settings)
    value: Any = settings
    for part in section.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def _path_of(uri: str) -> Path:
    from urllib.parse import unquote, urlparse

    return Path(unquote(urlparse(uri).path))


def _client_capabilities() -> Any:
    from lsprotocol import types

    return types.ClientCapabilities(
        text_document=types.TextDocumentClientCapabilities(
            synchronization=types.TextDocumentSyncClientCapabilities(did_save=True),
            publish_diagnostics=types.PublishDiagnosticsClientCapabilities(version_support=True),
            diagnostic=types.DiagnosticClientCapabilities(dynamic_registration=True, related_document_support=False),
        ),
        workspace=types.WorkspaceClientCapabilities(configuration=True, workspace_folders=True),
        window=types.WindowClientCapabilities(work_done_progress=False),
        general=types.GeneralClientCapabilities(position_encodings=[types.PositionEncodingKind.Utf16]),
    )


def command_line(command: Sequence[str]) -> str:
    """The command as one line, for notices."""
    import shlex

    return " ".join(shlex.quote(word) for word in command)
