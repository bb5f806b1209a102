"""Which MCP transports this installation can use, answered without importing `mcp` (it costs ~2 s)."""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path


def supported_transports() -> dict[str, bool]:
    """Which MCP transports the installed `mcp` package can connect to (for `mcpCapabilities`)."""
    spec = find_spec("mcp")  # a top-level find_spec does not run the package
    if spec is None or not spec.submodule_search_locations:
        return {"stdio": False, "http": False, "sse": False}
    client = Path(next(iter(spec.submodule_search_locations))) / "client"
    return {
        "stdio": (client / "session.py").is_file(),
        "http": (client / "streamable_http.py").is_file(),
        "sse": (client / "sse.py").is_file(),
    }
