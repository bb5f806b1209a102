"""A small language server that publishes diagnostics (it offers none on request): every line holding the word
`ERROR` is an error, `WARN` a warning, and a line `USES name` where `name` is never defined by a line `DEF name` is
an error too (so an edit elsewhere can add one).

What it does besides is set by `MARKED_MODE` in its environment, to play a server that misbehaves:
`silent-start` never answers `initialize`; `garbage` writes lines that are not the protocol to stdout before every
answer; `flood` publishes 2,000 diagnostics per file 5 times over; `die-later` exits when it is told of a document the
second time (the agent's next edit); `slow-later` takes an hour to publish from the second time on;
`env` adds a warning on line 1 naming every variable of its environment whose name holds KEY or TOKEN, and tries to
write the file `MARKED_ESCAPE` names (outside the workspace), saying on line 1 whether it could.
"""

from __future__ import annotations

import os
import sys

from lsprotocol import types
from pygls.lsp.server import LanguageServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rules import diagnostics

MODE = os.environ.get("MARKED_MODE", "")
server = LanguageServer("marked", "1")


def _diagnostics(text: str) -> list[types.Diagnostic]:
    found = [server.protocol._converter.structure(item, types.Diagnostic) for item in diagnostics(text)]
    if MODE == "env":
        names = sorted(name for name in os.environ if "KEY" in name.upper() or "TOKEN" in name.upper())
        first = types.Range(types.Position(0, 0), types.Position(0, 1))
        message = "keys in my environment: " + (", ".join(names) or "none")
        escape = os.environ.get("MARKED_ESCAPE")
        if escape:
            try:
                with open(escape, "w") as planted:
                    planted.write("written by a language server")
                message += "; wrote outside"
            except OSError as exc:
                message += f"; could not write outside ({exc.strerror})"
        found.append(types.Diagnostic(first, message, types.DiagnosticSeverity.Warning, "ENV"))
    return found


def _publish(uri: str, text: str, version: int | None) -> None:
    if MODE == "garbage":
        sys.stdout.buffer.write(b"this is not the protocol\r\n\r\nContent-Length: nonsense\r\n")
        sys.stdout.buffer.flush()
    if MODE == "flood":
        many = [
            types.Diagnostic(types.Range(types.Position(n, 0), types.Position(n, 1)), f"flood {n}") for n in range(2000)
        ]
        for _ in range(5):
            server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri, many, version))
    server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri, _diagnostics(text), version))


if MODE == "silent-start":

    @server.feature(types.INITIALIZE)
    async def never(params: types.InitializeParams) -> None:
        import asyncio

        await asyncio.sleep(3600)


told = 0


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
async def opened(params: types.DidOpenTextDocumentParams) -> None:
    _second_time()
    if MODE == "slow-later" and told >= 2:
        import asyncio

        await asyncio.sleep(3600)
    _publish(params.text_document.uri, params.text_document.text, params.text_document.version)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def changed(params: types.DidChangeTextDocumentParams) -> None:
    _second_time()
    document = server.workspace.get_text_document(params.text_document.uri)
    _publish(document.uri, document.source, params.text_document.version)


def _second_time() -> None:
    global told
    told += 1
    if MODE == "die-later" and told >= 2:
        sys.stderr.write("marked: dying as asked\n")
        sys.stderr.flush()
        os._exit(3)


if __name__ == "__main__":
    server.start_io()
