"""MCP servers' tools as agent tools: the same announcement, permission and reporting as the built-in ones.

An MCP tool keeps its server's JSON schema and gets a namespaced name (`mcp__<server>__<tool>`). Its
annotations decide its permission kind: `readOnlyHint` → read (never asks inside the workspace),
`destructiveHint` → delete, anything else → other (asks unless the session is in full-auto mode); a
`readOnlyHint` tool is also `read_only` (its calls in one reply may run side by side).
"""

from __future__ import annotations

import json
from functools import cache
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter

from coder_agent.permissions import Action
from coder_agent.protocol.content import ContentBlock, ContentToolCallContent, ToolCallContent, ToolKind
from coder_agent.tools.calls import Outcome, Prepared, ToolError
from coder_agent.tools.context import ToolContext

if TYPE_CHECKING:
    from coder_agent.mcp.hub import McpHub
    from coder_agent.mcp.types import McpTool

MCP_CALL_TIMEOUT = 300.0


def mcp_kind(tool: McpTool) -> ToolKind:
    if tool.read_only:
        return "read"
    if tool.destructive:
        return "delete"
    return "other"


class McpToolCall:
    """One MCP tool, seen through the `Tool` interface of the executor."""

    announced = True
    runs_in_parallel = False

    def __init__(self, tool: McpTool, hub: McpHub) -> None:
        self.tool = tool
        self.hub = hub
        self.name = tool.qualified_name
        self.kind = mcp_kind(tool)
        self.read_only = bool(tool.read_only)
        """The server marks it `readOnlyHint`: its calls in one reply may run side by side."""

    def spec(self) -> dict[str, Any]:
        schema = dict(self.tool.input_schema) or {"type": "object", "properties": {}}
        schema.setdefault("type", "object")
        description = self.tool.description or self.tool.title or self.tool.name
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": f"{description}\n\n(Tool `{self.tool.name}` of the MCP server `{self.tool.server}`.)",
                "parameters": schema,
            },
        }

    def parse(self, arguments: str) -> dict[str, Any]:
        try:
            parsed = json.loads(arguments or "{}")
        except ValueError as exc:
            raise ToolError(f"Invalid arguments for {self.name}: not JSON ({exc})") from None
        if not isinstance(parsed, dict):
            raise ToolError(f"Invalid arguments for {self.name}: expected a JSON object")
        return parsed

    def title(self, params: dict[str, Any], ctx: ToolContext) -> str:
        return f"{self.tool.server}: {self.tool.title or self.tool.name}"

    async def prepare(self, params: dict[str, Any], ctx: ToolContext) -> Prepared:
        async def run() -> Outcome:
            result = await self.hub.call(self.name, params, timeout=MCP_CALL_TIMEOUT, caller=ctx.call_id)
            display: list[ToolCallContent] = [_display(block) for block in result.display]
            output: str | list[dict[str, Any]] = result.content
            if all(part.get("type") == "text" for part in result.content):
                output = "\n".join(str(part.get("text", "")) for part in result.content) or "(no output)"
            return Outcome(output, display, failed=result.is_error)

        action = Action(self.kind, tool=self.name)
        return Prepared(action, self.title(params, ctx), run)


@cache
def _content_adapter() -> TypeAdapter[ContentBlock]:
    return TypeAdapter(ContentBlock)


def _display(block: dict[str, Any]) -> ToolCallContent:
    return ContentToolCallContent(content=_content_adapter().validate_python(block))
