"""What an MCP server asks of us, as the `mcp` client's callbacks: elicitation (a question for the user) and sampling
(a completion from the model), translated between `mcp`'s types and ours and answered by the session's hooks.

The `mcp` client offers servers both elicitation modes whatever the editor shows, so a question of a kind the
editor does not offer is declined, with the reason in the result's `_meta` (`REASON_KEY`).
Form schemas are cut down to what an ACP form shows (a flat object of string, number, integer, boolean and
multi-select fields, each keyword checked); a form with a field that cannot be shown is declined, saying why.
Sampling takes text and images; tool use inside sampling is not offered (`sampling.tools` is not advertised).
A refusal goes back to the server as an error it can show (code -1, as MCP suggests for a user's rejection).
"""

from __future__ import annotations

import logging
from typing import Any, Protocol, TypeGuard

from coder_agent.mcp.results import model_parts
from coder_agent.mcp.types import (
    McpClientHooks,
    McpElicitation,
    McpElicitationAnswer,
    McpRefused,
    McpSampling,
)

log = logging.getLogger(__name__)


class Asking(Protocol):
    """What the callbacks need of the server that asks (a `connection.Server`): its name, and the tool calls
    running on it now."""

    name: str
    callers: list[str]


REASON_KEY = "io.github.coder-agent/reason"
"""Where a declined elicitation says why, in the result's `_meta`."""
REJECTED = -1
FORMATS = frozenset({"email", "uri", "date", "date-time"})
_COMMON = {"title": str, "description": str}
_KEYWORDS: dict[str, dict[str, Any]] = {
    "string": {**_COMMON, "minLength": int, "maxLength": int, "pattern": str, "default": str},
    "number": {**_COMMON, "minimum": (int, float), "maximum": (int, float), "default": (int, float)},
    "integer": {**_COMMON, "minimum": int, "maximum": int, "default": int},
    "boolean": {**_COMMON, "default": bool},
    "array": {**_COMMON, "minItems": int, "maxItems": int},
}


def caller_of(server: Asking) -> str | None:
    """The tool call running on the server, when there is exactly one (a request is tied to it)."""
    return server.callers[0] if len(server.callers) == 1 else None


def elicitation_callback(server: Asking, hooks: McpClientHooks) -> Any:
    """The `mcp` client's elicitation callback for one server."""
    from mcp_types import ElicitRequestURLParams, ElicitResult, ErrorData

    async def elicit(context: Any, params: Any) -> Any:
        if hooks.elicit is None:
            return ElicitResult(action="decline", _meta={REASON_KEY: "this client has no one to ask"})
        if isinstance(params, ElicitRequestURLParams):
            question = McpElicitation(
                server.name,
                "url",
                params.message,
                url=params.url,
                elicitation_id=params.elicitation_id,
                caller=caller_of(server),
            )
        else:
            schema, problem = form_schema(params.requested_schema)
            if problem is not None:
                return _declined(McpElicitationAnswer("decline", reason=problem))
            question = McpElicitation(server.name, "form", params.message, schema=schema, caller=caller_of(server))
        try:
            answer = await hooks.elicit(question)
        except Exception:
            log.exception("MCP server %r: relaying its elicitation failed", server.name)
            return ErrorData(code=-32603, message="The client failed to ask the user.")
        return _declined(answer) if answer.reason else ElicitResult(action=answer.action, content=answer.content)

    return elicit


def _declined(answer: McpElicitationAnswer) -> Any:
    from mcp_types import ElicitResult

    log.info("declined an MCP elicitation without asking: %s", answer.reason)
    return ElicitResult(action="decline", _meta={REASON_KEY: answer.reason})


def sampling_callback(server: Asking, hooks: McpClientHooks) -> Any:
    """The `mcp` client's sampling callback for one server (only installed when the session can sample)."""
    from mcp_types import CreateMessageResult, ErrorData, TextContent

    async def sample(context: Any, params: Any) -> Any:
        assert hooks.sample is not None
        if params.tools or params.tool_choice:
            return ErrorData(code=-32602, message="Tool use in sampling is not supported by this client.")
        try:
            messages = [_message(m.model_dump(by_alias=True, mode="json", exclude_none=True)) for m in params.messages]
        except McpRefused as exc:
            return ErrorData(code=-32602, message=str(exc))
        request = McpSampling(server.name, messages, params.system_prompt, params.max_tokens, caller_of(server))
        try:
            sampled = await hooks.sample(request)
        except McpRefused as exc:
            return ErrorData(code=REJECTED, message=str(exc))
        except Exception:
            log.exception("MCP server %r: serving its sampling request failed", server.name)
            return ErrorData(code=-32603, message="The client failed to sample the model.")
        return CreateMessageResult(
            role="assistant",
            content=TextContent(text=sampled.text),
            model=sampled.model,
            stop_reason=sampled.stop_reason,
        )

    return sample


def _message(message: dict[str, Any]) -> dict[str, Any]:
    """An MCP sampling message as an OpenAI-style chat message (text and images)."""
    blocks = message.get("content")
    blocks = blocks if isinstance(blocks, list) else [blocks]
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if not isinstance(block, dict) or block.get("type") not in ("text", "image", "audio"):
            raise McpRefused("Only text and image content can be sampled by this client.")
        parts.extend(model_parts(block))
    role = "assistant" if message.get("role") == "assistant" else "user"
    if all(part["type"] == "text" for part in parts):
        return {"role": role, "content": "\n".join(part["text"] for part in parts)}
    return {"role": role, "content": parts}


def form_schema(raw: Any) -> tuple[dict[str, Any], str | None]:
    """The requested schema as an ACP form shows it, or why it cannot be shown."""
    if not isinstance(raw, dict) or not isinstance(raw.get("properties", {}), dict):
        return {}, "the form's schema is not an object of fields"
    properties: dict[str, Any] = {}
    for name, prop in raw.get("properties", {}).items():
        field = _field(prop)
        if field is None:
            return {}, f"the form's field {name!r} is of a kind the editor cannot show"
        properties[str(name)] = field
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    required = raw.get("required")
    if isinstance(required, list):
        schema["required"] = [str(name) for name in required if name in properties]
    for key in ("title", "description"):
        if isinstance(raw.get(key), str):
            schema[key] = raw[key]
    return schema, None


def _field(prop: Any) -> dict[str, Any] | None:
    """One field, keeping only the keywords ACP defines for its type, each of the right type."""
    if not isinstance(prop, dict):
        return None
    kind = prop.get("type")
    allowed = _KEYWORDS.get(kind) if isinstance(kind, str) else None
    if allowed is None:
        return None
    field: dict[str, Any] = {"type": kind}
    for key, types in allowed.items():
        value = prop.get(key)
        if isinstance(value, types) and not (isinstance(value, bool) and types is not bool):
            field[key] = value
    if kind == "string":
        return _string_choices(prop, field)
    if kind == "array":
        return _multi_select(prop, field)
    return field


def _string_choices(prop: dict[str, Any], field: dict[str, Any]) -> dict[str, Any] | None:
    if prop.get("format") in FORMATS:
        field["format"] = prop["format"]
    enum, names, one_of = prop.get("enum"), prop.get("enumNames"), prop.get("oneOf")
    if _strings(enum) and _strings(names) and len(names) == len(enum):  # the 2025 titled form
        field["oneOf"] = [{"const": value, "title": title} for value, title in zip(enum, names, strict=True)]
    elif _strings(enum):
        field["enum"] = list(enum)
    elif isinstance(one_of, list) and one_of:
        options = [_option(option) for option in one_of]
        if any(option is None for option in options):
            return None
        field["oneOf"] = options
    return field


def _multi_select(prop: dict[str, Any], field: dict[str, Any]) -> dict[str, Any] | None:
    items = prop.get("items")
    if not isinstance(items, dict):
        return None
    if _strings(items.get("enum")):
        field["items"] = {"type": "string", "enum": list(items["enum"])}
    elif isinstance(items.get("anyOf"), list) and items["anyOf"]:
        options = [_option(option) for option in items["anyOf"]]
        if any(option is None for option in options):
            return None
        field["items"] = {"anyOf": options}
    else:
        return None
    if _strings(prop.get("default")):
        field["default"] = list(prop["default"])
    return field


def _option(option: Any) -> dict[str, str] | None:
    if isinstance(option, dict) and isinstance(option.get("const"), str):
        title = option.get("title")
        return {"const": option["const"], "title": title if isinstance(title, str) else option["const"]}
    return None


def _strings(value: Any) -> TypeGuard[list[str]]:
    return isinstance(value, list) and bool(value) and all(isinstance(item, str) for item in value)
