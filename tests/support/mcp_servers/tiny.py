"""A hand-written stdio MCP server that does not import `mcp`, so it starts in tens of milliseconds.

For the connect benchmark: with the SDK, a server spends ~1 s of CPU importing, and five of them on two
cores measure the CPU rather than the hub's concurrency. `TINY_START_SECONDS` adds an idle (not CPU)
start delay. It speaks the 2025 handshake: `server/discover` gets "method not found", as from a 2025 server.
Tools: `timed(ms)` sleeps and reports its own start and end (monotonic seconds) as structured content.
"""

from __future__ import annotations

import json
import os
import sys
import time

TOOLS = [
    {
        "name": "timed",
        "description": "Sleeps ms milliseconds; returns its own start and end.",
        "inputSchema": {"type": "object", "properties": {"ms": {"type": "number"}}},
    }
]


def answer(request: dict[str, object]) -> dict[str, object] | None:
    method = request.get("method")
    params = request.get("params") or {}
    assert isinstance(params, dict)
    if "id" not in request:
        return None
    if method == "initialize":
        result: object = {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "tiny", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        start = time.monotonic()
        ms = float((params.get("arguments") or {}).get("ms", 0))  # type: ignore[union-attr]
        if ms:
            time.sleep(ms / 1000)
        data = {"start": start, "end": time.monotonic()}
        result = {"content": [{"type": "text", "text": json.dumps(data)}], "structuredContent": data}
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": f"no method {method}"}}
    return {"jsonrpc": "2.0", "id": request["id"], "result": result}


def main() -> None:
    delay = float(os.environ.get("TINY_START_SECONDS", "0"))
    if delay:
        time.sleep(delay)
    for line in sys.stdin:
        if not line.strip():
            continue
        reply = answer(json.loads(line))
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
