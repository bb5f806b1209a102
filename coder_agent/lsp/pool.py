"""A session's language servers: started lazily, one per root folder and server kind, the first time a file they
check is edited; what they said before and after an edit; their ends.

A server that cannot be found, cannot start within `start_timeout`, or dies is not started again for that root in
this session (a crashing server would cost every edit its start), and the session is told once, in a notice, that
the edits of those files get only the syntax check. A server whose answer is late (beyond `wait`) costs that edit
its diagnostics, not the server. Servers start only where the session's commands are sandboxed, unless the config's
`without_sandbox` says otherwise (they load the project's own code: see `LspConfig.without_sandbox`).

Where the editor offers its own servers (`editor.EditorServers`), a file one of them checks is asked of it instead,
before the edit is written and after (`prefer_editor`): its servers know the project as the user set it up.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
from anyio.abc import TaskGroup

from coder_agent.lsp.connection import CommandWrapper, ServerConnection, ServerFailed, command_line
from coder_agent.lsp.diagnostics import Diagnostic, new_since
from coder_agent.lsp.editor import EditorServer, EditorServers
from coder_agent.lsp.servers import ServerKind, find_command, kind_for, planted, root_for, server_kinds
from coder_agent.lsp.settings import LspConfig
from coder_agent.secrets import child_environ

log = logging.getLogger(__name__)

MAX_FILE_CHARS = 2_000_000
"""Files longer than this are not sent to a server (a generated or minified file: slow, and not what was meant)."""

SETTLE_FRACTION = 0.2
"""Of the wait after an edit: how long a publishing server must stay quiet before its diagnostics count as done."""
MIN_SETTLE = 0.15

Tell = Callable[[str, str], Awaitable[None]]
"""Tell the user something once (title, description): a notice."""


@dataclass(frozen=True)
class EditDiagnostics:
    """What a server said of one edited file."""

    path: Path
    server: str
    new: list[Diagnostic]
    """Errors and warnings the edit introduced (see `diagnostics.new_since`)."""
    after: list[Diagnostic]
    """Everything the server reports for the file now."""
    baseline: bool = True
    """What the server said before the edit is known (False: `new` is every error and warning there is now)."""


class LanguageServers:
    """One session's language servers (see the module docstring)."""

    def __init__(
        self,
        config: LspConfig,
        roots: Sequence[Path],
        tasks: TaskGroup,
        *,
        wrap: CommandWrapper | None,
        sandboxed: bool,
        tell: Tell,
        environ: Mapping[str, str] | None = None,
        editor: EditorServers | None = None,
    ) -> None:
        self._config = config
        self._editor = editor if config.prefer_editor else None
        self._roots = tuple(roots)
        self._tasks = tasks
        self._wrap = wrap
        self._sandboxed = sandboxed
        self._tell = tell
        self._environ = environ
        self._kinds = server_kinds(config)
        self._servers: dict[tuple[str, Path], ServerConnection] = {}
        self._starting: dict[tuple[str, Path], anyio.Lock] = {}
        self._given_up: set[tuple[str, Path]] = set()
        self._told: set[str] = set()
        self._last: dict[Path, list[Diagnostic]] = {}
        """What the agent last learnt of each file it checked (for the workspace's error count)."""
        self._closed = False

    @property
    def enabled(self) -> bool:
        """Servers of our own may be started (the editor's are asked either way)."""
        return self._config.enabled and (self._sandboxed or self._config.without_sandbox)

    def checks(self, path: Path) -> bool:
        """A server would check `path` (its kind is known; it may still be missing)."""
        return self.enabled and kind_for(path, self._kinds) is not None

    async def before_write(self, path: Path) -> None:
        """An edit of `path` is about to be written: the editor's server is asked what it says of the file now (ours
        are told the old text when the edit is checked, so they need nothing here)."""
        if self._editor is not None:
            await self._editor.remember_before(path, self._config.wait)

    async def after_edit(self, path: Path, old: str | None, new: str) -> EditDiagnostics | None:
        """The diagnostics `new` (the file's text after an edit) has that `old` (before; None: a new file) did not.
        None when no server checks the file or its answer did not come in time; never raises."""
        server = await self._route(path, new)
        if server is None:
            return None
        before: list[Diagnostic] | None = []
        if old is None:
            pass
        elif isinstance(server, EditorServer):
            before = self._editor.take_before(path) if self._editor is not None else None
        elif server.knows(path, old):
            before = self._last.get(path, [])
        else:
            before = await self._diagnostics(server, path, old)
            if not server.usable:
                return None
        after = await self._diagnostics(server, path, new)
        if after is None:
            return None
        return EditDiagnostics(path, _name(server), new_since(before or [], after), after, before is not None)

    async def current(self, path: Path, text: str) -> tuple[str, list[Diagnostic]] | None:
        """(server name, every diagnostic of `path` holding `text`), or None when no server gives them in time."""
        server = await self._route(path, text)
        found = await self._diagnostics(server, path, text) if server is not None else None
        return (_name(server), found) if server is not None and found is not None else None

    async def _route(self, path: Path, text: str) -> EditorServer | ServerConnection | None:
        """Who checks `path`: the editor's server for it, else ours (started now if need be); None when none does,
        or the text is not one to send (too long, binary)."""
        if len(text) > MAX_FILE_CHARS or "\0" in text:
            return None
        if self._editor is not None and (editor_server := await self._editor.server_for(path)) is not None:
            return editor_server
        return await self._server_for(path) if self.enabled else None

    async def _diagnostics(
        self, server: EditorServer | ServerConnection, path: Path, text: str
    ) -> list[Diagnostic] | None:
        """What `server` says of `path` holding `text` (kept as the latest word on it); None when it did not answer
        in time, or it failed (then it is given up, and the user told once)."""
        if isinstance(server, EditorServer):
            found = await self._editor.diagnostics(server, path, self._config.wait) if self._editor else None
        else:
            try:
                found = await server.diagnostics_of(path, text, self._wait(server), self._settle)
            except ServerFailed as exc:
                await self._give_up(server, str(exc))
                return None
            if found is None:
                log.info("%s: no diagnostics for %s within the wait", server.name, path)
            else:
                server.analysed = True
        if found is not None:
            self._last[path] = found
        return found

    def forget(self, path: Path) -> None:
        """`path` was deleted: close it in its server, drop what was known of it."""
        self._last.pop(path, None)
        for server in self._servers.values():
            server.forget(path)

    def running(self) -> list[ServerConnection]:
        """The servers started and not given up."""
        return list(self._servers.values())

    def known(self) -> dict[Path, list[Diagnostic]]:
        """What the agent last learnt of each file a server checked."""
        return {path: list(found) for path, found in self._last.items()}

    @property
    def _settle(self) -> float:
        """How long a publishing server must stay quiet before its diagnostics count as complete."""
        return max(MIN_SETTLE, self._config.wait * SETTLE_FRACTION)

    def _wait(self, server: ServerConnection) -> float:
        """The first analysis may load the whole project: until one came, a server gets the start's time."""
        return self._config.wait if server.analysed else max(self._config.wait, self._config.start_timeout)

    async def _server_for(self, path: Path) -> ServerConnection | None:
        kind = kind_for(path, self._kinds)
        if kind is None or self._closed:
            return None
        root = root_for(path, self._roots, kind)
        if root is None:
            return None
        key = (kind.name, root)
        if key in self._given_up:
            return None
        server = self._servers.get(key)
        if server is not None and server.usable:
            return server
        lock = self._starting.setdefault(key, anyio.Lock())
        async with lock:
            server = self._servers.get(key)
            if server is not None and server.usable:
                return server
            if key in self._given_up or self._closed:
                return None
            return await self._start(kind, root, key)

    async def _start(self, kind: ServerKind, root: Path, key: tuple[str, Path]) -> ServerConnection | None:
        environ = child_environ() if self._environ is None else dict(self._environ)
        outside = () if self._sandboxed else self._roots  # without walls: no program a command may have planted
        command = find_command(kind, environ, outside)
        if command is None:
            self._given_up.add(key)
            names = " or ".join(f"`{c[0]}`" for c in kind.commands)
            inside = planted(kind, environ) if outside else None
            where = (
                f"The one found, {inside}, lies inside the session's folders, which commands may write, and servers "
                "run outside the walls here: give its full path in the config's command to use it anyway."
                if inside is not None
                else f"{names} is not on PATH. Install one, or name another in the config's [lsp.servers.{kind.name}]."
            )
            await self._tell_once(
                f"missing:{kind.name}", f"No {kind.name} language server: edits get the syntax check only", where
            )
            return None
        server = ServerConnection(kind, root, command, self._wrap)
        self._servers[key] = server
        try:
            await server.start(self._tasks, self._config.start_timeout)
        except ServerFailed as exc:
            await self._give_up(server, str(exc))
            return None
        log.info("started %s for %s (%s)", server.name, root, command_line(command))
        return server

    async def _give_up(self, server: ServerConnection, why: str) -> None:
        key = (server.kind.name, server.root)
        self._given_up.add(key)
        self._servers.pop(key, None)
        self._tasks.start_soon(server.aclose)
        started = server.analysed or server.pulls or "initialize" not in why
        await self._tell_once(
            f"failed:{server.kind.name}:{server.root}",
            f"The {server.kind.name} language server {'stopped' if started else 'could not start'}: edits get the "
            "syntax check only",
            await server.explain(why),
        )

    async def _tell_once(self, key: str, title: str, description: str) -> None:
        if key in self._told:
            return
        self._told.add(key)
        log.warning("%s (%s)", title, description)
        try:
            await self._tell(title, description)
        except Exception:
            log.exception("could not tell the user about the language server")

    async def aclose(self) -> None:
        """End every server (shutdown, exit, then its process group)."""
        self._closed = True
        servers, self._servers = list(self._servers.values()), {}
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as group:
                for server in servers:
                    group.start_soon(server.aclose)


def _name(server: EditorServer | ServerConnection) -> str:
    return f"{server.name} (the editor's)" if isinstance(server, EditorServer) else server.name
