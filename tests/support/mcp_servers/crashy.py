"""An MCP server that dies on request (`die`), or at start (`CRASHY_AT_START=<exit code>`), or at every start but the
first (`CRASHY_ONCE=<a file it creates>`: a restart fails).

`CRASHY_STUBBORN=1` makes it ignore the close of its stdin, broken pipes and SIGTERM, and start a grandchild
(`sleep`) in its process group, whose pid the tool `grandchild_pid` returns: only a kill of the whole
group ends them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

if os.environ.get("CRASHY_ONCE"):
    marker = os.environ["CRASHY_ONCE"]
    if os.path.exists(marker):
        print("crashy: refusing to start a second time", file=sys.stderr, flush=True)
        sys.exit(4)
    open(marker, "w").close()

if os.environ.get("CRASHY_AT_START"):
    print("crashy: refusing to start: CRASHY_AT_START is set", file=sys.stderr, flush=True)
    sys.exit(int(os.environ["CRASHY_AT_START"]))

from mcp.server.mcpserver import MCPServer

server: MCPServer = MCPServer("crashy", log_level="WARNING")
grandchild: subprocess.Popen[bytes] | None = None


@server.tool(description="Answers ok.")
def ok() -> str:
    return "ok"


@server.tool(description="Ends the server process with the given exit code, after a line on stderr.")
def die(code: int = 3) -> str:
    print(f"crashy: dying with code {code} as asked", file=sys.stderr, flush=True)
    os._exit(code)


@server.tool(description="The pid of the child process this server started (0 if none).")
def grandchild_pid() -> int:
    return grandchild.pid if grandchild is not None else 0


if __name__ == "__main__":
    stubborn = bool(os.environ.get("CRASHY_STUBBORN"))
    if stubborn:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        grandchild = subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    try:
        server.run()
    except Exception:  # e.g. its client died mid-session and the pipes broke
        if not stubborn:
            raise
    if stubborn:
        with contextlib.suppress(OSError):  # stderr may be gone with the client: stay anyway
            print("crashy: stdin closed, staying alive anyway", file=sys.stderr, flush=True)
        time.sleep(300)
