"""`run --mcp-config FILE`: MCP servers from the JSON files editors and peer agents already keep.

Accepted shapes, each a map from a server's name to its entry: `{"mcpServers": {...}}` (Claude Desktop, Claude
Code's `.mcp.json`, Cursor, Gemini CLI), `{"context_servers": {...}}` (Zed's settings) and `{"servers": {...}}`
(VS Code's `mcp.json`); or ACP's own list of `McpServer` objects. An entry is a local server — `command`, `args`,
`env` (Zed's older `"command": {"path", "args", "env"}` too) — or a remote one — `url` and `headers`, over
streamable HTTP unless its `type` (or `transport`) says `sse`. Entries marked `"disabled": true` or
`"enabled": false` are left out. `${NAME}` and `${NAME:-default}` in a command, its arguments, env values, a URL
and header values are taken from the environment, so a file can name a token without holding it.

Every problem is a `McpConfigError` naming the file, the server and the field, found before any session opens.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from coder_agent.protocol.schema import EnvVariable, HttpHeader, McpServer, McpServerHttp, McpServerSse, McpServerStdio

SECTIONS = ("mcpServers", "context_servers", "servers")
VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class McpConfigError(Exception):
    """An MCP config file that cannot be used; the message names the file and what is wrong."""


def load_mcp_config(path: Path, environ: Mapping[str, str] | None = None) -> list[McpServer]:
    """The MCP servers a config file describes."""
    environ = os.environ if environ is None else environ
    try:
        data = json.loads(path.expanduser().read_text(encoding="utf-8"))
    except OSError as exc:
        raise McpConfigError(f"{path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise McpConfigError(f"{path} is not JSON: {exc}") from None
    if isinstance(data, list):
        return [_acp_entry(path, n, item) for n, item in enumerate(data)]
    if not isinstance(data, dict):
        raise McpConfigError(f"{path}: expected an object with {', '.join(SECTIONS)}, or a list of servers")
    section = next((data[name] for name in SECTIONS if name in data), None)
    if not isinstance(section, dict):
        raise McpConfigError(f"{path}: no servers: expected an object under one of {', '.join(SECTIONS)}")
    servers: list[McpServer] = []
    for name, entry in section.items():
        if not isinstance(entry, dict):
            raise McpConfigError(f"{path}: server {name!r}: expected an object")
        if entry.get("disabled") is True or entry.get("enabled") is False:
            continue
        servers.append(_entry(_Place(path, str(name), environ), entry))
    return servers


class _Place:
    """Where a value comes from, for messages, and the environment its `${NAME}`s are taken from."""

    def __init__(self, path: Path, server: str, environ: Mapping[str, str]) -> None:
        self.path = path
        self.server = server
        self.environ = environ

    def error(self, field: str, problem: str) -> McpConfigError:
        return McpConfigError(f"{self.path}: server {self.server!r}: {field}: {problem}")

    def text(self, field: str, value: Any) -> str:
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise self.error(field, "expected a string")

        def expand(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            found = self.environ.get(name)
            if found is not None:
                return found
            if default is not None:
                return default
            raise self.error(field, f"${{{name}}} is not set in the environment")

        return VARIABLE.sub(expand, str(value))

    def pairs(self, field: str, value: Any) -> dict[str, str]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.error(field, "expected an object of names to strings")
        return {str(key): self.text(f"{field}.{key}", item) for key, item in value.items()}


def _entry(place: _Place, entry: dict[str, Any]) -> McpServer:
    command = entry.get("command")
    if isinstance(command, dict):  # Zed's older shape
        entry = {**entry, **command, "command": command.get("path")}
        command = entry["command"]
    kind = str(entry.get("type") or entry.get("transport") or ("stdio" if command is not None else "http")).lower()
    if kind == "stdio":
        if command is None:
            raise place.error("command", "missing (a local server needs the program to start)")
        args = entry.get("args") or []
        if not isinstance(args, list):
            raise place.error("args", "expected a list of strings")
        return McpServerStdio(
            name=place.server,
            command=place.text("command", command),
            args=[place.text(f"args[{n}]", arg) for n, arg in enumerate(args)],
            env=[EnvVariable(name=k, value=v) for k, v in place.pairs("env", entry.get("env")).items()],
        )
    if kind not in ("http", "streamable-http", "streamablehttp", "streamable_http", "sse"):
        raise place.error("type", f"{kind!r} is not a transport (stdio, http or sse)")
    url = entry.get("url") or entry.get("serverUrl")
    if url is None:
        raise place.error("url", "missing (a remote server needs its address)")
    address = place.text("url", url)
    if not address.startswith(("http://", "https://")):
        raise place.error("url", f"{address!r} is not an http:// or https:// address")
    headers = [HttpHeader(name=k, value=v) for k, v in place.pairs("headers", entry.get("headers")).items()]
    if kind == "sse":
        return McpServerSse(type="sse", name=place.server, url=address, headers=headers)
    return McpServerHttp(type="http", name=place.server, url=address, headers=headers)


_ACP_SERVER: TypeAdapter[McpServer] = TypeAdapter(McpServer)


def _acp_entry(path: Path, index: int, item: Any) -> McpServer:
    try:
        return _ACP_SERVER.validate_python(item)
    except ValidationError as exc:
        problem = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3])
        raise McpConfigError(f"{path}: server {index + 1} is not an ACP McpServer: {problem}") from None


def stored_servers(stored: list[dict[str, Any]]) -> list[McpServer]:
    """The MCP servers a session record keeps (ACP's shape); one that no longer parses is left out."""
    servers: list[McpServer] = []
    for item in stored:
        try:
            servers.append(_ACP_SERVER.validate_python(item))
        except ValidationError:
            continue
    return servers


def merged(first: list[McpServer], then: list[McpServer]) -> list[McpServer]:
    """`first`, with a server of `then` in place of the one of the same name, and the others of `then` after."""
    names = {server.name for server in then}
    return [*(server for server in first if server.name not in names), *then]
