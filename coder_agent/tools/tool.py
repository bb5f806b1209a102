"""The shape of a tool: `Tool`, what the executor needs of one, and `BuiltinTool`, the base of our own.

A built-in tool is one module (`tools/read_file.py`, `tools/grep.py`, …) with a name, a kind (how the
permission policy and the editor see it), a pydantic params model, a description the model reads
(`prompts/tools/<name>.md`), a `title` for the editor, and `prepare`: check the call and say what it will
do (`Prepared`, with how to run it). MCP servers' tools have the same shape (`tools.mcp_tool`).
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol

from pydantic import ValidationError

from coder_agent import prompts
from coder_agent.protocol.content import ToolKind
from coder_agent.tools.calls import Params, Prepared, ToolError, clean_schema, describe_validation
from coder_agent.tools.context import ToolContext


class Tool(Protocol):
    """What the executor needs of a tool."""

    name: str
    kind: ToolKind
    announced: bool
    """Whether a call is shown as a tool call (an `update_plan` shows as the plan itself)."""

    def spec(self) -> dict[str, Any]: ...

    def parse(self, arguments: str) -> Any:
        """The call's arguments, checked; ToolError if they do not fit."""
        ...

    def title(self, params: Any, ctx: ToolContext) -> str: ...

    async def prepare(self, params: Any, ctx: ToolContext) -> Prepared: ...


class BuiltinTool:
    """One built-in tool: its name, kind and parameters, and how to prepare a call."""

    name: str
    kind: ToolKind
    params: ClassVar[type[Params]]
    announced = True

    def parse(self, arguments: str) -> Any:
        try:
            return self.params.model_validate_json(arguments or "{}")
        except ValidationError as exc:
            raise ToolError(f"Invalid arguments for {self.name}: {describe_validation(exc)}") from None

    def spec(self) -> dict[str, Any]:
        schema = clean_schema(self.params.model_json_schema())
        return {
            "type": "function",
            "function": {"name": self.name, "description": prompts.load(f"tools/{self.name}.md"), "parameters": schema},
        }

    def title(self, params: Any, ctx: ToolContext) -> str:
        return self.name

    async def prepare(self, params: Any, ctx: ToolContext) -> Prepared:
        raise NotImplementedError
