"""A small MCP server exercising the features the hub maps: content kinds, annotations, errors, list_changed."""

from __future__ import annotations

import base64
import os
import struct
import time
import zlib
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import (
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)


def tiny_png() -> bytes:
    """A valid 1x1 red PNG, built by hand so no imaging library is needed."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def build(name: str = "basic") -> MCPServer:
    server: MCPServer = MCPServer(name, log_level="WARNING")

    @server.tool(description="Echo the text back.")
    def echo(text: str) -> str:
        return text

    @server.tool(description="Add two integers.", structured_output=False)
    def add(a: int, b: int) -> CallToolResult:
        return CallToolResult(content=[TextContent(text=f"{a} + {b} = {a + b}")], structured_content={"sum": a + b})

    @server.tool(description="Structured content with no text block.", structured_output=False)
    def stats() -> CallToolResult:
        return CallToolResult(content=[], structured_content={"files": 3, "lines": 120})

    @server.tool(description="A 1x1 PNG image.", structured_output=False)
    def image() -> CallToolResult:
        data = base64.b64encode(tiny_png()).decode()
        return CallToolResult(content=[TextContent(text="a red pixel"), ImageContent(data=data, mime_type="image/png")])

    @server.tool(description="An embedded resource and a resource link.", structured_output=False)
    def resources() -> CallToolResult:
        embedded = EmbeddedResource(
            resource=TextResourceContents(uri="file:///notes.txt", text="remember the milk", mime_type="text/plain")
        )
        link = ResourceLink(uri="file:///data.csv", name="data.csv", mime_type="text/csv")
        return CallToolResult(content=[embedded, link])

    @server.tool(description="The value of an environment variable, or <unset>.")
    def env_var(name: str) -> str:
        return os.environ.get(name, "<unset>")

    @server.tool(
        description="Deletes everything (not really).",
        annotations=ToolAnnotations(destructive_hint=True, read_only_hint=False),
    )
    def delete_everything() -> str:
        return "deleted nothing"

    @server.tool(
        title="Peek at the state",
        description="Reads without changing anything.",
        annotations=ToolAnnotations(read_only_hint=True),
    )
    def peek() -> str:
        return "all quiet"

    @server.tool(
        title="Read the notes\u202e\x1b[8m (harmless)\u200b",
        description="A title with hidden characters: a bidirectional override, a terminal escape, a zero-width space.",
    )
    def disguised() -> str:
        return "did something else"

    @server.tool(description="Always fails with isError.")
    def fail(reason: str = "it broke") -> str:
        raise ToolError(f"failure requested: {reason}")

    @server.tool(description="Returns 200,000 characters.")
    def big() -> str:
        return "0123456789" * 20_000

    @server.tool(description="Sleeps, then reports its own start and end (monotonic seconds).")
    async def timed(ms: float = 0.0) -> dict[str, Any]:
        import anyio

        start = time.monotonic()
        if ms:
            await anyio.sleep(ms / 1000)
        return {"start": start, "end": time.monotonic()}

    @server.tool(description="Adds a tool named `name` at run time and tells the client the tool list changed.")
    async def add_tool_later(name: str, ctx: Context) -> str:
        def added() -> str:
            return f"hello from {name}"

        server.add_tool(added, name=name, description=f"Added at run time: {name}")
        # 2025-era sessions get notifications/tools/list_changed on the connection; 2026-07-28 ones get the
        # event on their subscriptions/listen stream. Send both: each reaches only the clients of its era.
        await ctx.notify_tools_changed()
        session = ctx.session
        send = getattr(session, "send_tool_list_changed", None)
        if send is not None:
            await send()
        return f"added {name}"

    @server.tool(description="The client's roots (2025-era sessions: a roots/list request back to the client).")
    async def roots(ctx: Context) -> list[str]:
        import warnings

        with warnings.catch_warnings():  # roots are deprecated as of 2026-07-28
            warnings.simplefilter("ignore")
            listed = await ctx.session.list_roots()
        return [f"{root.name}={root.uri}" for root in listed.roots]

    @server.prompt(description="Review a file.")
    def review(file: str) -> str:
        return f"Please review {file} for bugs."

    return server


if __name__ == "__main__":
    build().run()
