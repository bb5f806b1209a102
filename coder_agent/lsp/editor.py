"""The editor's own language servers, reached through the client (ACP's draft "Language Server Proxy": client methods
`lsp/servers` and `lsp/request`, offered with an `lsp` client capability, under `_meta` until it is stable).

The editor keeps its servers in step with every file, the agent's writes included, so the agent opens nothing: it
lists the servers (kept for `LISTING_SECONDS`), picks the one for a file (running, its workspace holding the file
and inside the session's folders, the file's extension among its own, offering diagnostics on request) and asks
`textDocument/diagnostic` for the file, before an edit is written and after. What the client answers is read like
anything else from outside: malformed entries are left out, and a listing or a report is bounded.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from coder_agent.lsp.diagnostics import Diagnostic, from_lsp

log = logging.getLogger(__name__)

LspCall = Callable[[str, dict[str, Any]], Awaitable[Any]]
"""Send `lsp/servers` or `lsp/request` (with the session id added) to the client; raises on a failed answer."""

LISTING_SECONDS = 10.0
"""How long a listing of the editor's servers is used before asking again."""
MAX_SERVERS = 64
DIAGNOSTIC_METHOD = "textDocument/diagnostic"


@dataclass(frozen=True)
class EditorServer:
    server_id: str
    name: str
    workspace: Path
    extensions: frozenset[str]


class EditorServers:
    """The editor's servers for one session (see the module docstring)."""

    def __init__(self, call: LspCall, roots: Sequence[Path]) -> None:
        self._call = call
        self._roots = tuple(roots)
        self._servers: list[EditorServer] = []
        self._listed_at: float | None = None
        self._before: dict[Path, list[Diagnostic]] = {}
        self.broken: str | None = None
        """Why the editor's servers are no longer asked (its answers failed); None while they are."""

    async def server_for(self, path: Path) -> EditorServer | None:
        """The editor's server that checks `path`, if it has one (the most specific workspace)."""
        if self.broken is not None:
            return None
        now = time.monotonic()
        if self._listed_at is None or now - self._listed_at > LISTING_SECONDS:
            await self._list()
            self._listed_at = now
        extension = path.suffix.removeprefix(".").lower()
        fitting = [
            server
            for server in self._servers
            if path.is_relative_to(server.workspace) and (not server.extensions or extension in server.extensions)
        ]
        return max(fitting, key=lambda server: len(server.workspace.parts), default=None)

    async def _list(self) -> None:
        try:
            answer = await self._call("lsp/servers", {})
        except Exception as exc:
            self._stop(f"the editor's lsp/servers failed: {exc}")
            return
        if not isinstance(answer, Mapping):
            self._stop("the editor's lsp/servers answer is not an object")
            return
        methods = answer.get("availableMethods")
        if not isinstance(methods, list) or DIAGNOSTIC_METHOD not in methods:
            self._servers = []
            return
        entries = answer.get("servers")
        self._servers = [
            server
            for entry in (entries if isinstance(entries, list) else [])[:MAX_SERVERS]
            if (server := self._server(entry)) is not None
        ]

    def _server(self, entry: Any) -> EditorServer | None:
        if not isinstance(entry, Mapping) or entry.get("state") != "running":
            return None
        server_id, name, workspace = entry.get("serverId"), entry.get("name"), entry.get("workspacePath")
        capabilities = entry.get("capabilities")
        if not (isinstance(server_id, str) and isinstance(workspace, str) and isinstance(capabilities, Mapping)):
            return None
        if capabilities.get("diagnosticProvider") is None:
            return None
        folder = Path(workspace)
        if not folder.is_absolute() or not any(
            folder.is_relative_to(root) or root.is_relative_to(folder) for root in self._roots
        ):
            return None  # a server of another project: not this session's to ask
        extensions = entry.get("fileExtensions")
        listed = frozenset(e.lower() for e in extensions if isinstance(e, str)) if isinstance(extensions, list) else ()
        shown = name if isinstance(name, str) and name else server_id
        return EditorServer(server_id, shown[:80], folder, frozenset(listed))

    async def diagnostics(self, server: EditorServer, path: Path, wait: float) -> list[Diagnostic] | None:
        """The server's diagnostics of `path` as the editor has it now; None when none came within `wait`."""
        params = {
            "serverId": server.server_id,
            "method": DIAGNOSTIC_METHOD,
            "params": {"textDocument": {"uri": path.as_uri()}},
        }
        with anyio.move_on_after(wait):
            try:
                answer = await self._call("lsp/request", params)
            except Exception as exc:
                log.info("the editor's %s gave no diagnostics for %s: %s", server.name, path, exc)
                self._listed_at = None  # list again next time: the server may have restarted or gone
                return None
            report = answer.get("lspResult") if isinstance(answer, Mapping) else None
            items = report.get("items") if isinstance(report, Mapping) else None
            return from_lsp(items) if isinstance(items, list) else None
        return None

    async def remember_before(self, path: Path, wait: float) -> None:
        """Keep the diagnostics of `path` as they are before an edit is written (when the editor checks it)."""
        server = await self.server_for(path)
        if server is None:
            return
        found = await self.diagnostics(server, path, wait)
        if found is not None:
            self._before[path] = found

    def take_before(self, path: Path) -> list[Diagnostic] | None:
        return self._before.pop(path, None)

    def _stop(self, why: str) -> None:
        log.info("not asking the editor's language servers again: %s", why)
        self.broken = why
        self._servers = []
