"""Titles the user reads to decide (a tool call's, in its updates and its permission request) never carry hidden
characters: a path, URL, glob or MCP tool title holding a bidirectional override, a terminal escape or a zero-width
character reaches the editor with each written as an escape, whichever tool made it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from coder_agent.model.scripted import Call, Reply, ScriptedModel
from coder_agent.visible import visible
from tests.support.scripted_agent import tool_agent

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
HIDDEN = ("\u202e", "\x1b", "\u200b", "\u2066")
CALLS = [
    Call("write_file", {"path": "notes\u202etxt.exe\u200b", "content": "x"}),
    Call("fetch", {"url": "http://127.0.0.1:9/\u2066docs\x1b[2K"}),
    Call("glob", {"pattern": "*.py\u202e\x1b[8m"}),
    Call("read_file", {"path": "\u202emissing.txt"}),
]


def titles(frames: Any) -> list[str]:
    return [frame["title"] for frame in frames if frame.get("title")]


async def test_every_tool_title_is_shown_with_its_hidden_characters_escaped(tmp_path: Path) -> None:
    model = ScriptedModel([Reply(calls=[call]) for call in CALLS] + [Reply("Done.")])
    async with tool_agent(tmp_path, model) as (client, editor, session, work):
        editor.default_permission = "reject_once"
        await client.prompt(session, "go")
        shown = titles(client.session_updates(session, "tool_call"))
        shown += titles(client.session_updates(session, "tool_call_update"))
        asked = titles(request["toolCall"] for request in editor.permission_requests)
    assert len(asked) == 2, "write_file and the local fetch asked"
    assert len(shown) >= len(CALLS)
    for title in shown + asked:
        assert not any(char in title for char in HIDDEN), title
        assert visible(title) == title
    assert any("\\u202e" in title for title in asked), "the hidden character is shown, as an escape"


async def test_an_mcp_tool_title_chosen_by_the_server_is_escaped(tmp_path: Path) -> None:
    model = ScriptedModel([Reply(calls=[Call("mcp__local__disguised", {})]), Reply("Done.")])
    server = {
        "name": "local",
        "command": sys.executable,
        "args": ["-m", "tests.support.mcp_servers.basic"],
        "env": [{"name": "PYTHONPATH", "value": str(ROOT)}],
    }
    async with tool_agent(tmp_path, model, open_session=False) as (client, editor, _, work):
        result = await client.request("session/new", {"cwd": str(work), "mcpServers": [server]}, timeout=60)
        session = result["sessionId"]
        editor.default_permission = "reject_once"
        await client.prompt(session, "go", timeout=60)
        started = titles(client.session_updates(session, "tool_call"))
        asked = titles(request["toolCall"] for request in editor.permission_requests)
    assert asked and started
    for title in started + asked:
        assert not any(char in title for char in HIDDEN), title
    assert asked[0] == "local: Read the notes\\u202e\\x1b[8m (harmless)\\u200b"
