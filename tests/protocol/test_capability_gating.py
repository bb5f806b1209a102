"""Nothing the client did not advertise is ever sent: one session exercises every client-facing method (fs, terminals,
form and URL elicitation with its completion, notices, compaction updates) with capabilities on, off and split
in halves. Every frame is checked against what `initialize` advertised (`tests/support/conformance.py`); here we
check each method is used exactly where it was advertised, that the fallbacks happened elsewhere, and that notices
are never replayed by `session/load`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from coder_agent.model.scripted import Call, Reply, ScriptedModel
from coder_agent.store import SessionStore
from tests.support.asker import FakeAsker, accept
from tests.support.editor import FakeEditor
from tests.support.scripted_agent import scripted_agent

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
FEATURES = ("fs", "terminal", "form", "url", "notices", "compaction")
CASES = {
    "none": set(),
    "all": set(FEATURES),
    "fs-form-notices": {"fs", "form", "notices"},
    "terminal-url-compaction": {"terminal", "url", "compaction"},
}


def capabilities(on: set[str]) -> dict[str, Any]:
    caps: dict[str, Any] = {
        "fs": {"readTextFile": "fs" in on, "writeTextFile": "fs" in on},
        "terminal": "terminal" in on,
        "session": {key: {} for key in ("notices", "compaction") if key in on},
    }
    modes = {key: {} for key in ("form", "url") if key in on}
    if modes:
        caps["elicitation"] = modes
    return caps


def answer(params: dict[str, Any]) -> dict[str, Any]:
    if params["mode"] == "url":
        return accept()
    if "color" in params["requestedSchema"]["properties"]:
        return accept(color="red")
    return accept(choice="tabs")


def script(form: bool) -> list[Reply]:
    turn = [
        Reply(calls=[Call("read_file", {"path": "notes.txt"}, id="r1")]),
        Reply(calls=[Call("run_command", {"command": "echo from-a-command"}, id="c1")]),
        Reply(calls=[Call("mcp__asker__ask_form", {}, id="f1")]),
        Reply(calls=[Call("mcp__asker__sign_in", {}, id="u1")]),
        Reply(calls=[Call("ask_user", {"question": "Tabs or spaces?", "options": ["tabs", "spaces"]}, id="q1")]),
    ]
    done = [Reply("All done.")] if form else []  # without forms the question ends the turn
    return [*turn, *done, Reply("SUMMARY of it all", chunk_size=4)]


@pytest.mark.parametrize("case", list(CASES))
async def test_each_method_is_sent_exactly_where_it_was_advertised(tmp_path: Path, case: str) -> None:
    on = CASES[case]
    work = tmp_path / "work"
    (work / ".coder-agent").mkdir(parents=True)
    (work / ".coder-agent" / "config.toml").write_text('max_tokens = "lots"\n')
    (work / "notes.txt").write_text("remember the milk\n")
    store = SessionStore(tmp_path / "store")
    servers = [
        {
            "name": "asker",
            "command": sys.executable,
            "args": ["-m", "tests.support.mcp_servers.asking"],
            "env": [{"name": "PYTHONPATH", "value": str(ROOT)}],
        },
        {"name": "missing", "command": str(tmp_path / "no-such-server"), "args": [], "env": []},
    ]
    model = ScriptedModel(script("form" in on))
    caps = capabilities(on)
    async with scripted_agent(
        tmp_path, model, capabilities=caps, store=store, open_session=False, default_mode="full-auto"
    ) as (client, _, _):
        editor = FakeEditor(client, root=work, fs="fs" in on, terminal="terminal" in on)
        asker = FakeAsker(client)
        asker.default = answer
        params = {"cwd": str(work), "mcpServers": servers}
        session = (await client.request("session/new", params, timeout=60))["sessionId"]
        await client.wait_for(lambda: "missing" in str(client.session_updates(session)))
        assert await client.prompt(session, "work", timeout=60) == "end_turn"
        assert await client.prompt(session, "/compact") == "end_turn"
        if "url" in on:
            await client.wait_for(lambda: bool(asker.completed()))
        text = client.agent_text(session)
        await editor.aclose()

    methods = [f.get("method", "") for f in client.frames]
    updates = [u["sessionUpdate"] for u in client.session_updates(session)]
    modes = [r["mode"] for r in asker.requests]
    sent = {
        "fs": any(m.startswith("fs/") for m in methods),
        "terminal": any(m.startswith("terminal/") for m in methods),
        "form": "form" in modes,
        "url": "url" in modes and bool(asker.completed()),
        "notices": "notice" in updates,
        "compaction": "compaction_update" in updates and "compaction_summary_chunk" in updates,
    }
    assert sent == {feature: feature in on for feature in FEATURES}
    if "form" not in on:
        assert "Tabs or spaces?" in text, "the question became the agent's message"
    if "compaction" not in on:
        assert "Context compacted" in text
    notices = ["could not be started", "project config was left out"]
    if "fs" not in on:
        notices.append("Files are read and written on disk")
    if "terminal" not in on:
        notices.append("Commands run as local processes")
    if "notices" in on:
        shown = " ".join(f"{u['title']} {u.get('description', '')}" for u in client.session_updates(session, "notice"))
    else:
        shown = text
    assert all(notice in shown for notice in notices), shown

    async with scripted_agent(tmp_path, ScriptedModel(), capabilities=caps, store=store, open_session=False) as (
        client,
        _,
        _,
    ):
        await client.request("session/load", {"sessionId": session, "cwd": str(work), "mcpServers": []})
        replayed = client.session_updates(session)
    assert "notice" not in [u["sessionUpdate"] for u in replayed]
    replayed_text = " ".join(str(u.get("content", "")) for u in replayed)
    assert not any(notice in replayed_text for notice in notices), "notices are live only"
    assert ("compaction_update" in [u["sessionUpdate"] for u in replayed]) is ("compaction" in on)
