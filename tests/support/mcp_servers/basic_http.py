"""The `basic` server over streamable HTTP or SSE, on 127.0.0.1 at a free port, served from a thread.

    with serve_http("http") as url:   # http://127.0.0.1:PORT/mcp
        ...
    with serve_http("sse") as url:    # http://127.0.0.1:PORT/sse

`python -m tests.support.mcp_servers.basic_http [http|sse]` serves until interrupted and prints the URL to stderr.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

import uvicorn

from tests.support.mcp_servers.basic import build


@contextmanager
def serve_http(transport: Literal["http", "sse"] = "http", *, name: str = "basic") -> Iterator[str]:
    server = build(name)
    app = server.streamable_http_app() if transport == "http" else server.sse_app()
    path = "/mcp" if transport == "http" else "/sse"
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1)
    uv = uvicorn.Server(config)
    thread = threading.Thread(target=uv.run, kwargs={"sockets": [sock]}, name=f"mcp-{transport}", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not uv.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"the {transport} MCP test server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}{path}"
    finally:
        uv.should_exit = True
        thread.join(10)
        sock.close()


if __name__ == "__main__":
    kind: Literal["http", "sse"] = "sse" if sys.argv[1:] == ["sse"] else "http"
    with serve_http(kind) as url:
        print(url, file=sys.stderr, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
