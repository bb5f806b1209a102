"""The shape of a tool: `Tool`, what the executor needs of one, and `BuiltinTool`, the base of our own (with
`Params`, the base of their arguments, and the schema the model reads).

A built-in tool is one module (`tools/read_file.py`, `tools/grep.py`, …) with a name, a kind (how the
permission policy and the editor see it), a pydantic params model, a description the model reads
(`prompts/tools/<name>.md`), a `title` for the editor, and `prepare`: check the call and say what it will
do (`Prepared`, with how to run it). MCP servers' tools have the same shape (`tools.mcp_tool`).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Protocol

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError

from coder_agent import prompts
from coder_agent.errors import field_problems
from coder_agent.protocol.content import ToolKind
from coder_agent.tools.calls import Prepared, ToolError
from coder_agent.tools.context import ToolContext


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _no_nul(path: str) -> str:
    if "\x00" in path:
        raise ValueError("the path holds a NUL character, which no file name can")
    return path


PathText = Annotated[str, AfterValidator(_no_nul)]
"""A path argument: text without NUL (the OS would refuse it later, in the middle of a check)."""


def describe_validation(exc: ValidationError) -> str:
    """A tool call's bad arguments, in one line for the model."""
    return "; ".join(f"{p.field or 'arguments'}: {p.message}" for p in field_problems(exc))


def clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON schema without pydantic's titles, with $defs inlined (some providers reject $ref)."""
    defs = schema.pop("$defs", {})

    def clean(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return clean(dict(defs[node["$ref"].rsplit("/", 1)[-1]]))
            if "anyOf" in node and any(branch == {"type": "null"} for branch in node["anyOf"]):
                others = [branch for branch in node["anyOf"] if branch != {"type": "null"}]
                if len(others) == 1:
                    merged = {**{k: v for k, v in node.items() if k != "anyOf"}, **others[0]}
                    merged.pop("default", None)
                    return clean(merged)
            return {key: clean(value) for key, value in node.items() if key != "title"}
        if isinstance(node, list):
            return [clean(item) for item in node]
        return node

    cleaned: dict[str, Any] = clean(schema)
    return cleaned


class Tool(Protocol):
    """What the executor needs of a tool."""

    name: str
    kind: ToolKind
    announced: bool
    """Whether a call is shown as a tool call (an `update_plan` shows as the plan itself)."""
    runs_in_parallel: bool
    """Whether its calls in one reply run side by side (`task`: each waits on a sub-agent of its own)."""
    read_only: bool
    """Whether a call only reads (files, the web, a read-only MCP tool) and changes nothing: consecutive calls of
    such tools in one reply run side by side (`agent.call_groups`). A new tool that only reads says so here."""

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
    runs_in_parallel = False
    read_only = False

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
