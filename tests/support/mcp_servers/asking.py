"""An MCP server that asks its client things: the user (elicitation, form and URL mode) and the model (sampling).

By default it serves the 2025 handshake era only (as most servers do today), where it sends `elicitation/create` and
`sampling/createMessage` requests in the middle of a tool call and `notifications/elicitation/complete` after a URL
elicitation. `ASKING_ERA=modern` serves both eras; a 2026-07-28 client then gets the questions of the `modern_*`
tools as an `InputRequiredResult` (the SDK's resolver markers), answered through the same client callbacks.
Every tool reports what came back (the action, the content, and the reason a decline gave in its `_meta`).
"""

from __future__ import annotations

import os
import warnings
from typing import Annotated, Any

from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve, Sample
from mcp_types import CreateMessageResult, ImageContent, SamplingMessage, TextContent, ToolAnnotations
from pydantic import BaseModel

from tests.support.mcp_servers.basic import tiny_png

REASON_KEY = "io.github.coder-agent/reason"

server: MCPServer = MCPServer("asking", log_level="WARNING")
warnings.simplefilter("ignore")  # sampling is deprecated as of 2026-07-28; 2025-era clients still serve it


def outcome(result: Any) -> str:
    reason = (result.meta or {}).get(REASON_KEY)
    content = f" {sorted(result.content.items())}" if result.content else ""
    return f"{result.action}{content}" + (f" (reason: {reason})" if reason else "")


@server.tool(description="Asks the user for a color and a size (a form).")
async def ask_form(ctx: Context) -> str:
    schema = {
        "type": "object",
        "properties": {
            "color": {"type": "string", "title": "Color", "enum": ["red", "green"], "enumNames": ["Red", "Green"]},
            "size": {"type": "integer", "minimum": 1, "maximum": 10},
            "gift": {"type": "boolean", "default": False},
            "extras": {"type": "array", "items": {"type": "string", "enum": ["bag", "card"]}},
        },
        "required": ["color"],
    }
    return outcome(await ctx.session.elicit_form("Pick your order", schema))


@server.tool(description="Asks the user for a password in a form (which clients must refuse).")
async def ask_password(ctx: Context) -> str:
    schema = {"type": "object", "properties": {"password": {"type": "string", "title": "Password"}}}
    return outcome(await ctx.session.elicit_form("Log in to the registry", schema))


@server.tool(description="Asks with a form field of a kind no client shows.")
async def ask_nested(ctx: Context) -> str:
    schema = {"type": "object", "properties": {"address": {"type": "object", "properties": {}}}}
    return outcome(await ctx.session.elicit_form("Where to?", schema))


@server.tool(description="Sends the user to a sign-in page (URL mode), then says it is done.")
async def sign_in(ctx: Context, url: str = "https://auth.example.com/login?session=42") -> str:
    result = await ctx.session.elicit_url("Sign in to continue", url, "login-1")
    if result.action == "accept":
        await ctx.session.send_elicit_complete("login-1")
    return outcome(result)


@server.tool(
    description="Asks the client's model to summarise a text (sampling).",
    annotations=ToolAnnotations(read_only_hint=True),
)
async def summarize(ctx: Context, text: str, with_image: bool = False) -> str:
    content: Any = TextContent(text=f"Summarise: {text}")
    if with_image:
        image = ImageContent(data=__import__("base64").b64encode(tiny_png()).decode(), mime_type="image/png")
        content = [content, image]
    result = await ctx.session.create_message(
        [SamplingMessage(role="user", content=content)], max_tokens=64, system_prompt="You summarise."
    )
    text_out = result.content.text if isinstance(result.content, TextContent) else "?"
    return f"{result.model}: {text_out} ({result.stop_reason})"


class Pick(BaseModel):
    color: str


def _pick() -> Elicit[Pick]:
    return Elicit("Pick a color", Pick)


def _sample() -> Sample:
    return Sample([SamplingMessage(role="user", content=TextContent(text="Say hi"))], max_tokens=32)


@server.tool(description="Asks the user for a color, in either protocol era.")
async def modern_ask(pick: Annotated[ElicitationResult[Pick], Resolve(_pick)]) -> str:
    data = getattr(pick, "data", None)
    return f"{pick.action} {data.color if data else ''}".strip()


@server.tool(description="Asks the model to say hi, in either protocol era.")
async def modern_sample(result: Annotated[CreateMessageResult, Resolve(_sample)]) -> str:
    return f"{result.model}: {result.content.text if isinstance(result.content, TextContent) else '?'}"


async def serve_2025_era() -> None:
    from mcp.server.runner import serve_loop
    from mcp.server.stdio import stdio_server

    lowlevel = server._lowlevel_server
    async with stdio_server() as (read, write), lowlevel.lifespan(lowlevel) as state:
        await serve_loop(
            lowlevel, read, write, lifespan_state=state, init_options=lowlevel.create_initialization_options()
        )


if __name__ == "__main__":
    if os.environ.get("ASKING_ERA") == "modern":
        server.run()
    else:
        import anyio

        anyio.run(serve_2025_era)
