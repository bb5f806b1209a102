"""An MCP server's sampling request as a call the user sees and allows: the session's model answers it.

It is not a tool the model has; the executor runs it like one (`ToolExecutor.run_tool`), so it is shown as a
tool call naming the server, with the messages it sends, and goes through the permission policy as the tool
`sampling/<server>`: it asks (an "always" is remembered per server), full-auto allows it, read-only mode
refuses it, and rules can name it (`other:sampling/github`). The model gets the server's messages and system
prompt only, never the session's conversation; the completion is billed to the session (its model is metered).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from coder_agent.mcp.types import McpSampled, McpSampling
from coder_agent.model.base import Model, ModelError, StreamSink, settled
from coder_agent.permissions import Action
from coder_agent.permissions.always import SAMPLING_PREFIX
from coder_agent.protocol.content import ToolCallContent, ToolKind
from coder_agent.tools.calls import Outcome, Prepared, ToolError, text_content
from coder_agent.tools.context import ToolContext

SHOWN_CHARS = 20_000
"""The messages shown in the request, at most (the model gets them whole)."""
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def sampling_tool_name(server: str) -> str:
    """`sampling/<server>`, with a name that could not be a literal glob made safe (and kept unique by a hash)."""
    safe = _UNSAFE.sub("_", server) or "_"
    if safe != server:
        safe += "_" + hashlib.sha256(server.encode()).hexdigest()[:8]
    return SAMPLING_PREFIX + safe


def raw_input(request: McpSampling) -> dict[str, Any]:
    """What the request shows as the call's input: the server, its system prompt and messages (images named)."""
    return {
        "server": request.server,
        "systemPrompt": request.system_prompt,
        "messages": [{"role": m["role"], "content": _text(m)} for m in request.messages],
        "maxTokens": request.max_tokens,
    }


class SamplingRequest:
    """One sampling request of one server, as the executor's `Tool`."""

    name = "mcp_sampling"
    kind: ToolKind = "other"
    announced = True
    runs_in_parallel = False
    read_only = False

    def __init__(self, request: McpSampling, model: Model) -> None:
        self.request = request
        self.model = model
        self.sampled: McpSampled | None = None

    def spec(self) -> dict[str, Any]:
        raise NotImplementedError("sampling requests come from MCP servers, never from the model")

    def parse(self, arguments: str) -> McpSampling:
        return self.request

    def title(self, params: McpSampling, ctx: ToolContext) -> str:
        return f"The MCP server {params.server} asks the model for a completion"

    async def prepare(self, params: McpSampling, ctx: ToolContext) -> Prepared:
        async def run() -> Outcome:
            system = [{"role": "system", "content": params.system_prompt}] if params.system_prompt else []
            sink = StreamSink(on_text=_ignore, on_thought=_ignore, on_retry=lambda note: _retrying(ctx, note))
            try:
                turn = await self.model.stream([*system, *params.messages], (), sink)
            except ModelError as exc:
                raise ToolError(f"The model call failed: {exc}") from None
            await settled(turn)  # the model is the session's, metered: the call's bill is counted there
            stop = "maxTokens" if turn.finish_reason == "length" else "endTurn"
            self.sampled = McpSampled(turn.text, self.model.name, stop)
            return Outcome(f"Answered ({len(turn.text)} characters).", [text_content(turn.text or "(empty)")])

        preview: list[ToolCallContent] = [text_content(_transcript(params))]
        action = Action("other", tool=sampling_tool_name(params.server))
        return Prepared(action, self.title(params, ctx), run, preview=preview)


async def _ignore(_: str) -> None:
    return None


async def _retrying(ctx: ToolContext, note: str) -> None:
    await ctx.notice("warning", "The model call failed; retrying", note)


def _transcript(request: McpSampling) -> str:
    parts = [f"**System prompt:** {request.system_prompt}"] if request.system_prompt else []
    parts += [f"**{m['role']}:** {_text(m)}" for m in request.messages]
    text = "\n\n".join(parts)
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + f"\n\n[… {len(text) - SHOWN_CHARS:,} more]"


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    pieces = [p.get("text", "") if p.get("type") == "text" else "[image]" for p in content or [] if isinstance(p, dict)]
    return "\n".join(pieces)
