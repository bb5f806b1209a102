"""An MCP server that sleeps `SLOW_START_SECONDS` (default 2) before it serves (before importing mcp, too)."""

from __future__ import annotations

import os
import sys
import time

if __name__ == "__main__":
    delay = float(os.environ.get("SLOW_START_SECONDS", "2"))
    print(f"slow_start: pid {os.getpid()} sleeping {delay:g} s", file=sys.stderr, flush=True)
    time.sleep(delay)

    from mcp.server.mcpserver import MCPServer

    server: MCPServer = MCPServer("slow_start", log_level="WARNING")

    @server.tool(description="Answers ready.")
    def ready() -> str:
        return "ready"

    server.run()
