"""Tests for the cheap corners of coder_agent.mcp: the types (qualified names, specs from ACP) and `support`."""

from __future__ import annotations

import re
import subprocess
import sys

from coder_agent.mcp.support import supported_transports
from coder_agent.mcp.types import McpServerSpec, qualified_name

NAME_OK = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def test_qualified_names_are_valid_unique_and_stable() -> None:
    assert qualified_name("github", "create_issue") == "mcp__github__create_issue"
    long_server, long_tool = "a-very-long-server-name-" * 3, "and_an_even_longer_tool_name_" * 3
    names = [
        qualified_name(long_server, long_tool),
        qualified_name(long_server, long_tool + "x"),
        qualified_name("my server", "read.file"),
        qualified_name("my_server", "read_file"),
        qualified_name("ünïcode", "tööl"),
        qualified_name("s", ""),
    ]
    for name in names:
        assert NAME_OK.match(name), name
    assert len(set(names)) == len(names)
    assert qualified_name(long_server, long_tool) == names[0]  # stable
    assert names[0].startswith("mcp__a-very-long-serv__and_an_even")


def test_supported_transports() -> None:
    assert supported_transports() == {"stdio": True, "http": True, "sse": True}


def test_supported_transports_imports_neither_mcp_nor_anyio() -> None:
    """It answers `initialize`: the package and the module must stay cheap to import."""
    code = (
        "import sys\n"
        "from coder_agent.mcp.support import supported_transports\n"
        "assert supported_transports()['stdio']\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types', 'anyio', 'pydantic')))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_spec_from_acp_models_and_dicts() -> None:
    from coder_agent.protocol.schema import McpServerHttp, McpServerStdio

    stdio = McpServerStdio.model_validate(
        {"name": "fs", "command": "/bin/fs", "args": ["-v"], "env": [{"name": "A", "value": "1"}]}
    )
    spec = McpServerSpec.from_acp(stdio, cwd="/projects/demo")
    assert spec == McpServerSpec(
        name="fs", transport="stdio", command="/bin/fs", args=["-v"], env={"A": "1"}, cwd="/projects/demo"
    )
    http = McpServerHttp.model_validate(
        {"type": "http", "name": "web", "url": "http://h/mcp", "headers": [{"name": "Authorization", "value": "x"}]}
    )
    assert McpServerSpec.from_acp(http).headers == {"Authorization": "x"}
    wire = {"type": "sse", "name": "old", "url": "http://h/sse", "headers": []}
    assert McpServerSpec.from_acp(wire).transport == "sse"
