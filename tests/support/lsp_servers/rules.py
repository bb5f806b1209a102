"""The rules of the test language server (`marked.py`), also used by the fake editor that offers its own servers
(`tests/support/editor_lsp.py`): every line holding `ERROR` is an error, `WARN` a warning, and a line `USES name`
where `name` is never defined by a line `DEF name` is an error too."""

from __future__ import annotations

import re
from typing import Any


def diagnostics(text: str) -> list[dict[str, Any]]:
    """The file's diagnostics in LSP's JSON shape."""
    found = []
    lines = text.splitlines()
    defined = {m.group(1) for line in lines if (m := re.match(r"DEF (\w+)", line))}
    for number, line in enumerate(lines):
        where = {"start": {"line": number, "character": 0}, "end": {"line": number, "character": len(line)}}
        if "ERROR" in line:
            found.append({"range": where, "message": "an error is marked here", "severity": 1, "code": "E1"})
        if "WARN" in line:
            found.append({"range": where, "message": "a warning is marked here", "severity": 2, "code": "W1"})
        used = re.match(r"USES (\w+)", line)
        if used and used.group(1) not in defined:
            message = f"'{used.group(1)}' is not defined"
            found.append({"range": where, "message": message, "severity": 1, "code": "E2"})
    return found
