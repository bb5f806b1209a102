"""MCP servers that ask: their elicitations relayed to the editor (form or URL, as the server asked and the client
shows), refused when they must be, and their sampling requests served by the session's model after the user allows
it. Real MCP servers (`tests/support/mcp_servers/asking.py`) over stdio; the editor answers through `FakeAsker`."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from coder_agent.model.scripted import Call, Reply, ScriptedModel
from tests.support.acp_client import FakeClient
from tests.support.asker import FakeAsker, accept, elicitation_capabilities
from tests.support.editor import FakeEditor
from tests.support.scripted_agent import scripted_agent

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
NO_FS = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False, "session": {"notices": {}}}
ALL = {**NO_FS, "elicitation": elicitation_capabilities()}
CONNECT = 60.0


def asking_server(**env: str) -> dict[str, Any]:
    variables = {"PYTHONPATH": str(ROOT), **env}
    return {
        "name": "asker",
        "command": sys.executable,
        "args": ["-m", "tests.support.mcp_servers.asking"],
        "env": [{"name": k, "value": v} for k, v in variables.items()],
    }


@asynccontextmanager
async def asking_agent(
    tmp_path: Path, model: ScriptedModel, capabilities: dict[str, Any], *, era: str = "2025", **fields: Any
) -> AsyncIterator[tuple[FakeClient, str, FakeAsker, FakeEditor]]:
    async with scripted_agent(tmp_path, model, capabilities=capabilities, open_session=False, **fields) as (
        client,
        _,
        _,
    ):
        asker = FakeAsker(client)
        editor = FakeEditor(client, root=tmp_path / "work", fs=False, terminal=False)
        server = asking_server(**({"ASKING_ERA": "modern"} if era == "modern" else {}))
        params = {"cwd": str(tmp_path / "work"), "mcpServers": [server]}
        session = (await client.request("session/new", params, timeout=CONNECT))["sessionId"]
        try:
            yield client, session, asker, editor
        finally:
            await editor.aclose()


def calls(*calls: tuple[str, str, dict[str, Any]]) -> list[Reply]:
    """One model reply per MCP tool call (id, tool, arguments), then a closing one."""
    return [Reply(calls=[Call(f"mcp__asker__{tool}", arguments, id=call_id)]) for call_id, tool, arguments in calls]


def result_of(model: ScriptedModel, call_id: str) -> str:
    for request in reversed(model.requests):
        for message in request.messages:
            if message.get("role") == "tool" and message.get("tool_call_id") == call_id:
                return str(message["content"])
    raise AssertionError(f"no result for {call_id}")


async def test_forms_and_web_pages_reach_the_editor_and_answers_go_back(tmp_path: Path) -> None:
    bad_urls = ["javascript:alert(1)", "https://user:hunter2@auth.example.com/", "file:///etc/passwd"]
    script = calls(
        ("t1", "ask_form", {}),
        ("t2", "ask_password", {}),
        ("t3", "ask_nested", {}),
        ("t4", "sign_in", {}),
        *[(f"bad{i}", "sign_in", {"url": url}) for i, url in enumerate(bad_urls)],
    )
    model = ScriptedModel([*script, Reply("done")])
    async with asking_agent(tmp_path, model, ALL, default_mode="full-auto") as (client, session, asker, _):
        asker.answers = [accept(color="green", size=3, extras=["card"]), accept()]
        assert await client.prompt(session, "order", timeout=CONNECT) == "end_turn"
        await client.wait_for(lambda: len(asker.completed()) == 1)
    form, url = asker.requests
    assert form["mode"] == "form" and form["toolCallId"] == "t1" and form["sessionId"] == session
    assert "asker" in form["message"] and "Pick your order" in form["message"]
    color = form["requestedSchema"]["properties"]["color"]
    assert color["oneOf"] == [{"const": "red", "title": "Red"}, {"const": "green", "title": "Green"}]
    assert "enumNames" not in color
    assert form["requestedSchema"]["required"] == ["color"]
    assert result_of(model, "t1") == "accept [('color', 'green'), ('extras', ['card']), ('size', 3)]"
    assert "decline" in result_of(model, "t2") and "secret" in result_of(model, "t2"), "no password in a form"
    assert "decline" in result_of(model, "t3") and "cannot show" in result_of(model, "t3")
    assert url["mode"] == "url" and url["url"] == "https://auth.example.com/login?session=42"
    assert url["toolCallId"] == "t4" and url["elicitationId"].startswith("mcp_")
    assert result_of(model, "t4") == "accept"
    assert asker.completed() == [url["elicitationId"]], "the server's completion reaches the editor under our id"
    for i in range(len(bad_urls)):
        assert result_of(model, f"bad{i}").startswith("decline (reason: Not asked:")


@pytest.mark.parametrize("forms", [False, True])
async def test_what_the_client_cannot_show_is_declined_with_a_reason(tmp_path: Path, forms: bool) -> None:
    capabilities = {**NO_FS, "elicitation": elicitation_capabilities(form=True, url=False)} if forms else NO_FS
    model = ScriptedModel([*calls(("t1", "ask_form", {}), ("t2", "sign_in", {})), Reply("done")])
    async with asking_agent(tmp_path, model, capabilities, default_mode="full-auto") as (client, session, asker, _):
        asker.answers = [accept(color="red")]
        await client.prompt(session, "order", timeout=CONNECT)
    assert [r["mode"] for r in asker.requests] == (["form"] if forms else [])
    if forms:
        assert result_of(model, "t1") == "accept [('color', 'red')]"
    else:
        assert "editor cannot show questions" in result_of(model, "t1")
    assert "decline (reason: Not asked: the editor cannot send the user to a web page" in result_of(model, "t2")
    assert asker.completed() == []


async def test_sampling_asks_once_per_server_with_always_and_adds_the_cost(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            *calls(("t1", "summarize", {"text": "hello", "with_image": True})),
            Reply("A short summary.", cost=0.5),  # the sampling request
            *calls(("t2", "summarize", {"text": "again"})),
            Reply("Another summary.", cost=0.25),
            Reply("done"),
        ]
    )
    async with asking_agent(tmp_path, model, ALL) as (client, session, _, editor):
        editor.permission_answers = ["allow_always"]
        assert await client.prompt(session, "summarise", timeout=CONNECT) == "end_turn"
    [request] = editor.permission_requests
    shown = request["toolCall"]
    assert "asker" in shown["title"] and shown["kind"] == "other"
    assert "Summarise: hello" in str(shown["content"]) and "You summarise." in str(shown["content"])
    always = next(o for o in request["options"] if o["kind"] == "allow_always")
    assert "completions for the MCP server `asker`" in always["name"]
    sampled = model.requests[1]
    assert sampled.tools == []
    assert sampled.messages[0] == {"role": "system", "content": "You summarise."}
    parts = sampled.messages[1]["content"]
    assert parts[0] == {"type": "text", "text": "Summarise: hello"} and parts[1]["type"] == "image_url"
    assert len(sampled.messages) == 2, "the session's conversation is not sent to the server's completion"
    assert result_of(model, "t1") == "scripted/model: A short summary. (endTurn)"
    assert result_of(model, "t2") == "scripted/model: Another summary. (endTurn)"
    costs = [u["cost"]["amount"] for u in client.session_updates(session, "usage_update") if "cost" in u]
    assert costs[-1] == 0.75
    titles = [u["title"] for u in client.session_updates(session, "tool_call")]
    assert titles.count("The MCP server asker asks the model for a completion") == 2


@pytest.mark.parametrize(("mode", "answer"), [("default", "reject_once"), ("read-only", None)])
async def test_rejected_or_read_only_sampling_fails_at_the_server(
    tmp_path: Path, mode: str, answer: str | None
) -> None:
    model = ScriptedModel([*calls(("t1", "summarize", {"text": "hello"})), Reply("done")])
    async with asking_agent(tmp_path, model, ALL, default_mode=mode) as (client, session, _, editor):
        editor.permission_answers = [answer] if answer else []
        await client.prompt(session, "summarise", timeout=CONNECT)
    assert len(model.requests) == 2, "the model was never sampled"
    assert len(editor.permission_requests) == (1 if answer else 0), "read-only refuses without asking"
    assert ("rejected" if answer else "read-only") in result_of(model, "t1")


async def test_session_cancel_cancels_a_relayed_question(tmp_path: Path) -> None:
    model = ScriptedModel([*calls(("t1", "ask_form", {})), Reply("unused")])
    async with asking_agent(tmp_path, model, ALL, default_mode="full-auto") as (client, session, asker, _):
        asker.hold = True
        answers: list[str] = []

        async def prompt() -> None:
            answers.append(await client.prompt(session, "order", timeout=CONNECT))

        async with anyio.create_task_group() as task_group:
            task_group.start_soon(prompt)
            await asker.wait_for_request(timeout=CONNECT)
            await asker.cancel(session)
        await client.wait_for(lambda: any(f.get("method") == "$/cancel_request" for f in client.frames))
    assert answers == ["cancelled"]
    [question] = [f for f in client.frames if f.get("method") == "elicitation/create"]
    assert [f["params"]["requestId"] for f in client.frames if f.get("method") == "$/cancel_request"] == [
        question["id"]
    ]


async def test_a_2026_era_server_asks_through_the_same_callbacks(tmp_path: Path) -> None:
    model = ScriptedModel([*calls(("t1", "modern_ask", {}), ("t2", "modern_sample", {})), Reply("hi"), Reply("done")])
    async with asking_agent(tmp_path, model, ALL, era="modern", default_mode="full-auto") as (
        client,
        session,
        asker,
        _,
    ):
        asker.answers = [accept(color="blue")]
        await client.prompt(session, "go", timeout=CONNECT)
    assert asker.requests[0]["toolCallId"] == "t1"
    assert result_of(model, "t1") == "accept blue"
    assert result_of(model, "t2") == "scripted/model: hi"
