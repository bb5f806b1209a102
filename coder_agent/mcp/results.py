"""MCP answers in our terms: listed tools as `McpTool`s, a `tools/call` result as parts for the model and ACP content
blocks for the editor, cut to a size the model can take (saying so).

Works on the wire JSON of MCP results (`model_dump(by_alias=True, mode="json")`), so it never imports `mcp`.
"""

from __future__ import annotations

import json
from typing import Any

from coder_agent.mcp.types import McpCallResult, McpTool, qualified_name

MAX_RESULT_CHARS = 50_000
"""Text of one tool result, in total, beyond which it is cut (with a note saying so)."""
MAX_IMAGE_BASE64 = 7_000_000
"""Base64 characters of one image (~5 MB decoded) beyond which it is replaced by a note."""


def to_tools(server: str, listed: list[Any]) -> list[McpTool]:
    tools = []
    for tool in listed:
        schema = dict(tool.input_schema or {})
        schema.setdefault("type", "object")
        annotations = tool.annotations
        tools.append(
            McpTool(
                server=server,
                name=tool.name,
                qualified_name=qualified_name(server, tool.name),
                description=tool.description or tool.title or (annotations.title if annotations else None) or "",
                input_schema=schema,
                title=tool.title or (annotations.title if annotations else None),
                read_only=annotations.read_only_hint if annotations else None,
                destructive=annotations.destructive_hint if annotations else None,
            )
        )
    return tools


def model_parts(block: dict[str, Any]) -> list[dict[str, Any]]:
    """One MCP content block (wire JSON) as OpenAI-style parts for the model."""
    kind = block.get("type")
    if kind == "text":
        return [{"type": "text", "text": block.get("text", "")}]
    if kind == "image":
        data, mime = block.get("data", ""), block.get("mimeType", "image/png")
        if len(data) > MAX_IMAGE_BASE64:
            return [{"type": "text", "text": f"[image ({mime}, {len(data) * 3 // 4:,} bytes) too large to show]"}]
        return [{"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}}]
    if kind == "audio":
        size = len(block.get("data", "")) * 3 // 4
        return [{"type": "text", "text": f"[audio ({block.get('mimeType', '?')}, {size:,} bytes) not shown]"}]
    if kind == "resource_link":
        name = block.get("title") or block.get("name") or block.get("uri")
        extra = f", {block['mimeType']}" if block.get("mimeType") else ""
        about = f": {block['description']}" if block.get("description") else ""
        return [{"type": "text", "text": f"[resource link: {name} <{block.get('uri')}>{extra}{about}]"}]
    if kind == "resource":
        resource = block.get("resource") or {}
        uri, mime = resource.get("uri", "?"), resource.get("mimeType")
        if "text" in resource:
            return [{"type": "text", "text": f"[resource <{uri}>]\n{resource['text']}"}]
        blob = resource.get("blob", "")
        if mime and mime.startswith("image/") and len(blob) <= MAX_IMAGE_BASE64:
            return [{"type": "image_url", "image_url": {"url": f"data:{mime};base64,{blob}"}}]
        return [{"type": "text", "text": f"[resource <{uri}> ({mime or 'binary'}, {len(blob) * 3 // 4:,} bytes)]"}]
    return [{"type": "text", "text": json.dumps(block)[:2000]}]


def display_block(block: dict[str, Any]) -> dict[str, Any]:
    """MCP content blocks and ACP content blocks share their shapes; drop what ACP does not know."""
    kind = block.get("type")
    keep = {
        "text": ("type", "text", "annotations"),
        "image": ("type", "data", "mimeType", "uri", "annotations"),
        "audio": ("type", "data", "mimeType", "annotations"),
        "resource": ("type", "resource", "annotations"),
        "resource_link": ("type", "uri", "name", "title", "description", "mimeType", "size", "annotations"),
    }.get(str(kind))
    if keep is None:
        return {"type": "text", "text": json.dumps(block)[:2000]}
    shown = {key: block[key] for key in keep if key in block}
    if kind == "resource" and isinstance(shown.get("resource"), dict):
        shown["resource"] = {k: v for k, v in shown["resource"].items() if k in ("uri", "mimeType", "text", "blob")}
    return shown


def map_result(raw: dict[str, Any], max_chars: int) -> McpCallResult:
    blocks: list[dict[str, Any]] = list(raw.get("content") or [])
    structured = raw.get("structuredContent")
    content: list[dict[str, Any]] = []
    display: list[dict[str, Any]] = []
    for block in blocks:
        content.extend(model_parts(block))
        display.append(display_block(block))
    if structured is not None and not any(part["type"] == "text" for part in content):
        text = json.dumps(structured, ensure_ascii=False, indent=1)
        content.insert(0, {"type": "text", "text": text})
        display.insert(0, {"type": "text", "text": f"```json\n{text}\n```"})
    content, cut = truncate(content, max_chars)
    display, _ = truncate(display, max_chars)
    if not content:
        content = [{"type": "text", "text": "(no output)"}]
    return McpCallResult(
        content=content, display=display, is_error=bool(raw.get("isError")), structured=structured, truncated=cut
    )


def truncate(parts: list[dict[str, Any]], limit: int) -> tuple[list[dict[str, Any]], bool]:
    """Cut the text parts to `limit` characters in total, saying so in a last text part."""
    total = sum(len(p["text"]) for p in parts if p.get("type") == "text" and isinstance(p.get("text"), str))
    if total <= limit:
        return parts, False
    room = limit
    kept: list[dict[str, Any]] = []
    for part in parts:
        if part.get("type") != "text":
            kept.append(part)
            continue
        text = str(part.get("text", ""))
        if room <= 0:
            continue
        kept.append({**part, "text": text[:room]})
        room -= min(len(text), room)
    note = f"[output truncated: the tool returned {total:,} characters of text; only the first {limit:,} are shown]"
    kept.append({"type": "text", "text": note})
    return kept, True
