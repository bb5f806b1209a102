"""The tools a session's model gets: the built-in ones, in a fixed order, then its MCP servers' tools.

The specs the model reads are built once for the built-in tools and kept in a stable order (MCP tools after
them, sorted by name), so requests share their prefix from one call to the next. Adding a built-in tool is
one module plus its description in `prompts/tools/<name>.md`, and one line in `BUILTIN`.

One edit tool is offered per model family (`edit_tool_for`): `apply_patch` to the families trained on the patch
format, `edit_file` to the others, unless the config's `edit_tool` names one. A call of the other one still runs
(a model that reaches for the tool it was not offered is not turned away). `use_skill` is offered when the model
was told of skills (its environment lists them), so a session without any pays nothing for it.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from coder_agent.config import Config
from coder_agent.model.families import trained_on_apply_patch
from coder_agent.tools.apply_patch import ApplyPatch
from coder_agent.tools.ask_user import AskUser
from coder_agent.tools.diagnostics import Diagnostics
from coder_agent.tools.edit_file import EditFile
from coder_agent.tools.fetch import Fetch
from coder_agent.tools.glob import Glob
from coder_agent.tools.grep import Grep
from coder_agent.tools.jobs import JobInput, JobKill, JobList, JobOutput, JobWait
from coder_agent.tools.mcp_tool import McpToolCall
from coder_agent.tools.propose_plan import ProposePlan
from coder_agent.tools.read_file import ReadFile
from coder_agent.tools.run_command import RunCommand
from coder_agent.tools.task import Task
from coder_agent.tools.tool import BuiltinTool, Tool
from coder_agent.tools.update_plan import UpdatePlan
from coder_agent.tools.use_skill import UseSkill
from coder_agent.tools.write_file import WriteFile

if TYPE_CHECKING:
    from coder_agent.mcp.hub import McpHub

BUILTIN: tuple[BuiltinTool, ...] = (
    ReadFile(),
    WriteFile(),
    EditFile(),
    ApplyPatch(),
    Glob(),
    Grep(),
    Diagnostics(),
    RunCommand(),
    JobOutput(),
    JobWait(),
    JobInput(),
    JobKill(),
    JobList(),
    Fetch(),
    UpdatePlan(),
    Task(),
    ProposePlan(),
    AskUser(),
    UseSkill(),
)
BUILTIN_NAMES = frozenset(tool.name for tool in BUILTIN)
EDIT_TOOLS = ("edit_file", "apply_patch")


def edit_tool_for(config: Config) -> str:
    """The edit tool the model is offered: the config's choice, or the one its family was trained on."""
    if config.edit_tool != "auto":
        return config.edit_tool
    return "apply_patch" if trained_on_apply_patch(config.model or "") else "edit_file"


@cache
def builtin_specs(edit_tool: str = "edit_file", skills: bool = False) -> tuple[dict[str, Any], ...]:
    """The built-in tools' schemas with one edit tool, and `use_skill` when there are skills, built once (the model
    sees the same bytes every call)."""
    left_out = {name for name in EDIT_TOOLS if name != edit_tool} | (set() if skills else {"use_skill"})
    return tuple(tool.spec() for tool in BUILTIN if tool.name not in left_out)


def session_tools(hub: McpHub | None) -> dict[str, Tool]:
    """The session's tools by name: the built-in ones, then its MCP servers' (asked each time: their list can
    change)."""
    tools: dict[str, Tool] = {tool.name: tool for tool in BUILTIN}
    if hub is not None:
        for tool in sorted(hub.tools(), key=lambda t: t.qualified_name):
            if tool.qualified_name not in tools:
                tools[tool.qualified_name] = McpToolCall(tool, hub)
    return tools


def session_specs(hub: McpHub | None, edit_tool: str = "edit_file", skills: bool = False) -> list[dict[str, Any]]:
    """The schemas the model gets, in a stable order, with `edit_tool` as the one edit tool (and `use_skill` when
    the model was told of skills)."""
    specs = list(builtin_specs(edit_tool, skills))
    if hub is not None:
        tools = sorted(hub.tools(), key=lambda t: t.qualified_name)
        specs += [McpToolCall(t, hub).spec() for t in tools if t.qualified_name not in BUILTIN_NAMES]
    return specs
