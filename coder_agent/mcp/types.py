"""The MCP vocabulary the rest of the agent uses: server specs, tools, statuses, call results, prompt infos,
`McpError`, the model-facing qualified tool names, and what servers ask of the session (questions for the user,
completions from the model) with the hooks that answer them.

Plain dataclasses and a hash: importing this module costs nothing and never imports `mcp`.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

from coder_agent.errors import CallFailed

Transport = Literal["stdio", "http", "sse"]

_NAME_LIMIT = 64
_NAME_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


class McpError(CallFailed):
    """An MCP server could not be reached or did not answer a call; the message says which and why."""


@dataclass(frozen=True)
class McpServerSpec:
    """One MCP server to connect, as ACP's `McpServer` describes it (see `from_acp`)."""

    name: str
    transport: Transport
    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    """Merged over the agent's own environment."""
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    """Working directory of a stdio server; the session's cwd is the sensible choice. None: the agent's."""

    @classmethod
    def from_acp(cls, server: Any, *, cwd: str | Path | None = None) -> McpServerSpec:
        """From an ACP `McpServer` (a pydantic model or its wire dict): stdio has no `type`, http/sse have one."""

        def get(key: str, default: Any = None) -> Any:
            if isinstance(server, dict):
                return server.get(key, default)
            return getattr(server, key, default)

        def pairs(items: Any) -> dict[str, str]:
            result: dict[str, str] = {}
            for item in items or []:
                key = item.get("name") if isinstance(item, dict) else item.name
                value = item.get("value") if isinstance(item, dict) else item.value
                result[str(key)] = str(value)
            return result

        kind = get("type") or "stdio"
        if kind not in ("stdio", "http", "sse"):
            raise ValueError(f"MCP server {get('name')!r}: unsupported transport {kind!r}")
        if kind == "stdio":
            return cls(
                name=str(get("name")),
                transport="stdio",
                command=str(get("command")),
                args=[str(a) for a in get("args") or []],
                env=pairs(get("env")),
                cwd=str(cwd) if cwd is not None else None,
            )
        transport: Transport = "http" if kind == "http" else "sse"
        return cls(name=str(get("name")), transport=transport, url=str(get("url")), headers=pairs(get("headers")))

    def describe(self) -> str:
        """`stdio: npx -y server` or `http: https://…`, for messages."""
        if self.transport == "stdio":
            command = shlex.join([self.command or "", *self.args])
            return f"stdio: {command if len(command) <= 120 else command[:117] + '...'}"
        return f"{self.transport}: {self.url}"


@dataclass(frozen=True)
class McpTool:
    """A tool of a connected server, under the name the model sees."""

    server: str
    name: str
    qualified_name: str
    """`mcp__<server>__<tool>`, valid for every provider (^[a-zA-Z0-9_-]{1,64}$), unique in the hub, stable."""
    description: str
    input_schema: dict[str, Any]
    title: str | None = None
    read_only: bool | None = None
    destructive: bool | None = None


@dataclass(frozen=True)
class ServerStatus:
    name: str
    transport: str
    state: Literal["connected", "failed", "closed"]
    error: str | None
    tool_count: int
    protocol_version: str | None = None
    pid: int | None = None
    """The stdio server's process id while it runs."""


@dataclass(frozen=True)
class McpCallResult:
    content: list[dict[str, Any]]
    """OpenAI-style parts for the model: `text` and `image_url` (data: URLs)."""
    display: list[dict[str, Any]]
    """ACP ContentBlock JSON for the editor: text, image, audio, resource, resource_link."""
    is_error: bool
    structured: Any | None = None
    truncated: bool = False


@dataclass(frozen=True)
class McpPromptArgument:
    name: str
    description: str | None
    required: bool


@dataclass(frozen=True)
class McpPromptInfo:
    server: str
    name: str
    description: str | None
    arguments: list[McpPromptArgument]
    title: str | None = None


@dataclass(frozen=True)
class McpElicitation:
    """A server's question for the user (MCP elicitation): a form, or a web page to open."""

    server: str
    mode: Literal["form", "url"]
    message: str
    schema: dict[str, Any] = field(default_factory=dict)
    """Form mode: the requested schema, cut down to what ACP forms show (flat, primitive fields)."""
    url: str | None = None
    elicitation_id: str | None = None
    """URL mode: the server's id for it (2025-era servers), named again when the server says it is done."""
    caller: str | None = None
    """The tool call running on that server when it asked, if there is exactly one."""


@dataclass(frozen=True)
class McpElicitationAnswer:
    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None
    reason: str | None = None
    """Why it was declined without asking anyone (sent to the server in the result's `_meta`)."""


@dataclass(frozen=True)
class McpSampling:
    """A server's request for a completion from the session's model (MCP sampling)."""

    server: str
    messages: list[dict[str, Any]]
    """OpenAI-style chat messages (text and image parts), without the system prompt."""
    system_prompt: str | None
    max_tokens: int
    caller: str | None = None


@dataclass(frozen=True)
class McpSampled:
    text: str
    model: str
    stop_reason: str = "endTurn"


class McpRefused(Exception):
    """A server's request was refused (the user rejected it, or it cannot be served); the message says why."""


@dataclass(frozen=True)
class McpClientHooks:
    """What the session does when its servers ask something of it. A missing hook: that request is not offered
    to servers (sampling), or is answered without anyone (elicitation declined, notices dropped)."""

    elicit: Callable[[McpElicitation], Awaitable[McpElicitationAnswer]] | None = None
    elicitation_done: Callable[[str, str], Awaitable[None]] | None = None
    """(server, the server's elicitation id): a URL elicitation the server says is finished."""
    sample: Callable[[McpSampling], Awaitable[McpSampled]] | None = None
    """Raises `McpRefused` to refuse."""
    notice: Callable[[Literal["info", "warning", "error"], str, str | None], Awaitable[None]] | None = None
    """Something the user should know now (a server that could not be restarted)."""


CommandWrapper = Callable[[list[str]], Awaitable[tuple[list[str], dict[str, str]]]]
"""Given a stdio server's command line: the command line that runs it (inside the session's sandbox) and what its
environment gets on top."""


@cache
def qualified_name(server: str, tool: str) -> str:
    """The model-facing name of `tool` on `server`: `mcp__<server>__<tool>`.

    Names that are already safe and short enough are kept as they are; others are sanitized, shortened and given
    an 8-hex hash of the exact (server, tool) pair, so they stay unique and never change between sessions.
    """
    safe_server = _NAME_UNSAFE.sub("_", server) or "_"
    safe_tool = _NAME_UNSAFE.sub("_", tool) or "_"
    plain = f"mcp__{safe_server}__{safe_tool}"
    if len(plain) <= _NAME_LIMIT and safe_server == server and safe_tool == tool:
        return plain
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]
    room = _NAME_LIMIT - len("mcp____") - 1 - len(digest)
    server_part = safe_server[: max(16, room - len(safe_tool))]
    tool_part = safe_tool[: room - len(server_part)]
    return f"mcp__{server_part}__{tool_part}_{digest}"
