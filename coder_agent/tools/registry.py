"""The tools a session's model gets: the built-in ones, in a fixed order, then its MCP servers' tools.

The specs the model reads are built once for the built-in tools and kept in a stable order (MCP tools after
them, sorted by name), so requests share their prefix from one call to the next. Adding a built-in tool is
one module plus its description in `prompts/tools/<name>.md`, and one line in `BUILTIN`.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from coder_agent.tools.ask_user import AskUser
from coder_agent.tools.edit_file import EditFile
from coder_agent.tools.fetch import Fetch
from coder_agent.tools.glob import Glob
from coder_agent.tools.grep import Grep
from coder_agent.tools.mcp_tool import McpToolCall
from coder_agent.tools.read_file import ReadFile
from coder_agent.tools.run_command import RunCommand
from coder_agent.tools.tool import BuiltinTool, Tool
from coder_agent.tools.update_plan import UpdatePlan
from coder_agent.tools.write_file import WriteFile

if TYPE_CHECKING:
    from coder_agent.mcp.hub import McpHub

BUILTIN: tuple[BuiltinTool, ...] = (
    ReadFile(),
    WriteFile(),
    EditFile(),
    Glob(),
    Grep(),
    RunCommand(),
    Fetch(),
    UpdatePlan(),
    AskUser(),
)
BUILTIN_NAMES = frozenset(tool.name for tool in BUILTIN)


@cache
def builtin_specs() -> tuple[dict[str, Any], ...]:
    """The built-in tools' schemas, built once (the model sees the same bytes every call)."""
    return tuple(tool.spec() for tool in BUILTIN)


def session_tools(hub: McpHub | None) -> dict[str, Tool]:
    """The session's tools by name: the built-in ones, then its MCP servers' (asked each time: their list can
    change)."""
    tools: dict[str, Tool] = {tool.name: tool for tool in BUILTIN}
    if hub is not None:
        for tool in sorted(hub.tools(), key=lambda t: t.qualified_name):
            if tool.qualified_name not in tools:
                tools[tool.qualified_name] = McpToolCall(tool, hub)
    return tools


def session_specs(hub: McpHub | None) -> list[dict[str, Any]]:
    """The schemas the model gets, in a stable order."""
    specs = list(builtin_specs())
    if hub is not None:
        tools = sorted(hub.tools(), key=lambda t: t.qualified_name)
        specs += [McpToolCall(t, hub).spec() for t in tools if t.qualified_name not in BUILTIN_NAMES]
    return specs
