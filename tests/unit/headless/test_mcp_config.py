"""`--mcp-config FILE`: the JSON shapes editors and peer agents keep their MCP servers in, `${NAME}` taken from the
environment, and a problem named with its file, server and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coder_agent.headless.mcp_config import McpConfigError, load_mcp_config, merged, stored_servers
from coder_agent.protocol.schema import McpServerHttp, McpServerSse, McpServerStdio

ENV = {"GITHUB_TOKEN": "ghp_123", "HOME": "/home/dev"}


def write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("section", ["mcpServers", "context_servers", "servers"])
def test_the_editors_shapes_are_read(tmp_path: Path, section: str) -> None:
    path = write(
        tmp_path,
        {
            section: {
                "github": {
                    "command": "npx",
                    "args": ["-y", "server-github"],
                    "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}", "DEPTH": 2},
                },
                "docs": {"type": "http", "url": "https://docs.example/mcp", "headers": {"Authorization": "Bearer x"}},
                "events": {"type": "sse", "url": "https://events.example/sse"},
                "remote": {"url": "https://remote.example/mcp"},
                "off": {"command": "never", "disabled": True},
                "also-off": {"command": "never", "enabled": False},
            }
        },
    )
    github, docs, events, remote = load_mcp_config(path, ENV)
    assert isinstance(github, McpServerStdio)
    assert (github.name, github.command, github.args) == ("github", "npx", ["-y", "server-github"])
    assert [(e.name, e.value) for e in github.env] == [("GITHUB_PERSONAL_ACCESS_TOKEN", "ghp_123"), ("DEPTH", "2")]
    assert isinstance(docs, McpServerHttp) and [(h.name, h.value) for h in docs.headers] == [
        ("Authorization", "Bearer x")
    ]
    assert isinstance(events, McpServerSse) and events.url == "https://events.example/sse"
    assert isinstance(remote, McpServerHttp)


def test_zeds_older_command_object_and_acps_own_list(tmp_path: Path) -> None:
    zed = write(tmp_path, {"context_servers": {"z": {"command": {"path": "zs", "args": ["--x"], "env": {"A": "b"}}}}})
    [server] = load_mcp_config(zed, ENV)
    assert isinstance(server, McpServerStdio) and (server.command, server.args) == ("zs", ["--x"])
    acp = write(tmp_path, [{"name": "a", "command": "srv", "args": [], "env": [{"name": "K", "value": "v"}]}])
    assert load_mcp_config(acp, ENV)[0].name == "a"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"mcpServers": {"s": {"command": "x", "env": {"T": "${MISSING}"}}}},
            r"server 's': env.T: \$\{MISSING\} is not set",
        ),
        ({"mcpServers": {"s": {"type": "ws", "url": "x"}}}, "server 's': type: 'ws' is not a transport"),
        ({"mcpServers": {"s": {"type": "stdio"}}}, "server 's': command: missing"),
        ({"mcpServers": {"s": {"url": "file:///etc/passwd"}}}, "is not an http:// or https:// address"),
        ({"mcpServers": {"s": {"command": "x", "args": "-y"}}}, "args: expected a list"),
        ({"mcp": {}}, "no servers"),
        ([{"name": "a"}], "server 1 is not an ACP McpServer"),
    ],
)
def test_problems_name_the_file_server_and_field(tmp_path: Path, data: object, message: str) -> None:
    with pytest.raises(McpConfigError, match=message):
        load_mcp_config(write(tmp_path, data), ENV)


def test_a_default_stands_in_for_an_unset_variable(tmp_path: Path) -> None:
    path = write(tmp_path, {"mcpServers": {"s": {"url": "${MCP_URL:-http://localhost:9000/mcp}"}}})
    assert load_mcp_config(path, {})[0].url == "http://localhost:9000/mcp"  # type: ignore[union-attr]


def test_not_json_or_missing(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("{nope")
    with pytest.raises(McpConfigError, match="is not JSON"):
        load_mcp_config(tmp_path / "bad.json", ENV)
    with pytest.raises(McpConfigError, match="No such file"):
        load_mcp_config(tmp_path / "absent.json", ENV)


def test_a_flags_server_takes_the_place_of_a_stored_one_of_the_same_name() -> None:
    stored = stored_servers([{"name": "a", "command": "old"}, {"name": "b", "command": "b"}, {"broken": True}])
    given = [McpServerStdio(name="a", command="new")]
    assert [(s.name, getattr(s, "command", None)) for s in merged(stored, given)] == [("b", "b"), ("a", "new")]
