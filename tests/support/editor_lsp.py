"""A fake editor's own language servers, offered the way ACP's draft "Language Server Proxy" says: the `lsp` client
capability (under `_meta`), `lsp/servers` listing them, `lsp/request` forwarding `textDocument/diagnostic`. Its one
server checks `.mk` files by the rules of the test server (`tests/support/lsp_servers/rules.py`), on the file as
the editor has it (its buffer, else the disk), so it follows the agent's writes as an editor's server would."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import anyio

from tests.support.editor import FakeEditor
from tests.support.lsp_servers.rules import diagnostics

SERVER_ID = "marked@workspace"


class EditorLanguageServers:
    """Serve `lsp/servers` and `lsp/request` for `editor`; `requests` records each `lsp/request`'s params."""

    def __init__(self, editor: FakeEditor, workspace: Path) -> None:
        self.editor = editor
        self.workspace = workspace
        self.requests: list[dict[str, Any]] = []
        self.listings = 0
        self.extra_servers: list[dict[str, Any]] = []
        editor.client.handlers["lsp/servers"] = self.servers
        editor.client.handlers["lsp/request"] = self.request

    @staticmethod
    def capabilities(editor: FakeEditor) -> dict[str, Any]:
        return {**editor.capabilities(), "_meta": {"lsp": {}}}

    async def servers(self, params: dict[str, Any]) -> dict[str, Any]:
        self.listings += 1
        marked = {
            "serverId": SERVER_ID,
            "name": "marked",
            "workspacePath": str(self.workspace),
            "languageId": "marked",
            "fileExtensions": ["mk"],
            "state": "running",
            "capabilities": {"diagnosticProvider": {"interFileDependencies": False, "workspaceDiagnostics": False}},
        }
        return {"servers": [*self.extra_servers, marked], "availableMethods": ["textDocument/diagnostic"]}

    async def request(self, params: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(params)
        uri = params["params"]["textDocument"]["uri"]
        path = Path(unquote(urlparse(uri).path))
        text = self.editor.buffers.get(str(path))
        if text is None:
            on_disk = anyio.Path(path)
            text = await on_disk.read_text(encoding="utf-8") if await on_disk.exists() else ""
        return {"lspResult": {"kind": "full", "items": diagnostics(text)}}
