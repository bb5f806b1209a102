"""Which tools only read, so that their calls in one reply run side by side (`agent.call_groups`): a property of each
tool's definition, so a new tool opts in by saying so."""

from __future__ import annotations

from coder_agent.mcp.types import McpTool
from coder_agent.tools.mcp_tool import McpToolCall
from coder_agent.tools.registry import BUILTIN


def test_the_built_in_tools_that_only_read_are_the_reads_the_searches_diagnostics_and_fetch() -> None:
    assert {tool.name for tool in BUILTIN if tool.read_only} == {"read_file", "grep", "glob", "diagnostics", "fetch"}


def test_an_mcp_tool_only_reads_when_its_server_marks_it_read_only() -> None:
    def tool(read_only: bool | None) -> McpToolCall:
        spec = McpTool("srv", "t", "mcp__srv__t", "A tool.", {}, read_only=read_only)
        return McpToolCall(spec, hub=None)  # type: ignore[arg-type]  # the hub is only used to call it

    assert [tool(hint).read_only for hint in (True, False, None)] == [True, False, False]
