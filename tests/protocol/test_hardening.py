"""Interop and bad input, as other people's clients and an adversarial run met them (issue 10)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from coder_agent.model.scripted import Call, Reply, ScriptedModel
from coder_agent.store import SessionStore
from tests.support.acp_client import RpcFailure
from tests.support.scripted_agent import scripted_agent

pytestmark = pytest.mark.anyio


def reopen_params(session: str, work: Path) -> dict[str, Any]:
    return {"sessionId": session, "cwd": str(work), "mcpServers": []}


@pytest.mark.parametrize("method", ["session/resume", "session/load"])
async def test_a_session_never_prompted_can_be_reopened_by_a_new_agent(tmp_path: Path, method: str) -> None:
    store = SessionStore(tmp_path / "store")
    async with scripted_agent(tmp_path, ScriptedModel(), store=store) as (client, session, _):
        pass
    model = ScriptedModel([Reply("hello again")])
    async with scripted_agent(tmp_path, model, store=store, open_session=False) as (client, _, _):
        await client.request(method, reopen_params(session, tmp_path / "work"))
        assert await client.prompt(session, "hi") == "end_turn"
    assert client.agent_messages(session)[-1] == "hello again"


async def test_mode_and_options_changed_after_the_last_prompt_survive_a_restart(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "store")
    async with scripted_agent(tmp_path, ScriptedModel([Reply("ok")]), store=store) as (client, session, _):
        await client.prompt(session, "hi")
        await client.request("session/set_mode", {"sessionId": session, "modeId": "read-only"})
        await client.request(
            "session/set_config_option", {"sessionId": session, "configId": "reasoning_effort", "value": "high"}
        )
    async with scripted_agent(tmp_path, ScriptedModel(), store=store, open_session=False) as (client, _, _):
        result = await client.request("session/resume", reopen_params(session, tmp_path / "work"))
    assert result["modes"]["currentModeId"] == "read-only"
    effort = next(o for o in result["configOptions"] if o["id"] == "reasoning_effort")
    assert effort["currentValue"] == "high"


@pytest.mark.parametrize("kind", ["missing", "file"])
async def test_a_cwd_that_is_not_a_folder_is_invalid_params(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "nothing-here"
    if kind == "file":
        target.write_text("x")
    async with scripted_agent(tmp_path, ScriptedModel(), open_session=False) as (client, _, _):
        with pytest.raises(RpcFailure) as failure:
            await client.new_session(str(target))
    assert failure.value.code == -32602
    assert "cwd" in failure.value.message


async def test_resource_links_do_not_break_the_prompt_text(tmp_path: Path) -> None:
    model = ScriptedModel([Reply("ok")])
    async with scripted_agent(tmp_path, model) as (client, session, _):
        prompt = [
            {"type": "text", "text": "Look at "},
            {"type": "resource_link", "uri": "file:///w/foo.rs", "name": "foo.rs"},
            {"type": "text", "text": " and fix it."},
        ]
        await client.request("session/prompt", {"sessionId": session, "prompt": prompt})
    text = model.last_request.messages[-1]["content"]
    assert isinstance(text, str)
    assert "\n" not in text, text
    assert text.startswith("Look at ") and text.endswith(" and fix it.")
    assert "foo.rs" in text


async def test_a_lone_surrogate_in_a_prompt_does_not_break_the_session(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "store")
    model = ScriptedModel([Reply("first"), Reply("second")])
    async with scripted_agent(tmp_path, model, store=store) as (client, session, _):
        await client.send_raw(
            b'{"jsonrpc":"2.0","id":"s1","method":"session/prompt","params":{"sessionId":"'
            + session.encode()
            + b'","prompt":[{"type":"text","text":"bad \\ud800 text"}]}}\n'
        )
        answer = await client.next_stray()
        assert answer["result"]["stopReason"] == "end_turn"
        assert await client.prompt(session, "next") == "end_turn"
    first_prompt = model.requests[0].messages[-1]["content"]
    assert first_prompt == "bad \ufffd text"
    json.dumps(model.last_request.messages).encode("utf-8")
    record = store.load(session)
    assert next(m for m in record.messages if m["role"] == "user")["content"] == "bad \ufffd text"
    assert "could not be saved" not in client.agent_text(session)


async def test_deeply_nested_meta_is_invalid_params(tmp_path: Path) -> None:
    async with scripted_agent(tmp_path, ScriptedModel(), open_session=False) as (client, _, _):
        meta: dict[str, Any] = {}
        for _ in range(400):
            meta = {"x": meta}
        with pytest.raises(RpcFailure) as failure:
            await client.request(
                "session/new", {"cwd": str(tmp_path / "work"), "mcpServers": [], "_meta": meta}, strict=False
            )
    assert failure.value.code == -32602


async def test_a_history_cut_by_a_kill_is_repaired_on_load(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "store")
    async with scripted_agent(tmp_path, ScriptedModel([Reply("ok")]), store=store) as (client, session, _):
        await client.prompt(session, "hi")
    record = store.load(session)
    call = {"id": "call_1", "type": "function", "function": {"name": "run_command", "arguments": '{"command":"x"}'}}
    record.messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
    record.events.append(
        {"sessionUpdate": "tool_call", "toolCallId": "call_1", "title": "x", "kind": "execute", "status": "in_progress"}
    )
    store.save(record)
    model = ScriptedModel([Reply("recovered")])
    async with scripted_agent(tmp_path, model, store=store, open_session=False) as (client, _, _):
        await client.request("session/load", reopen_params(session, tmp_path / "work"))
        replayed = [u for u in client.session_updates(session, "tool_call") if u["toolCallId"] == "call_1"]
        assert replayed[0]["status"] == "failed"
        assert await client.prompt(session, "go on") == "end_turn"
    messages = model.last_request.messages
    tool = next(m for m in messages if m.get("role") == "tool")
    assert tool["tool_call_id"] == "call_1"
    assert "interrupted" in tool["content"]
    assert messages.index(tool) == next(i for i, m in enumerate(messages) if m.get("tool_calls")) + 1


async def test_an_invalid_project_config_opens_the_session_and_says_what_was_wrong(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / ".coder-agent").mkdir(parents=True)
    (work / ".coder-agent" / "config.toml").write_text("temperature = 9\n")
    model = ScriptedModel([Reply("ok")])
    async with scripted_agent(tmp_path, model) as (client, session, _):
        await client.wait_for(lambda: "config.toml" in client.agent_text(session))
        notice = client.agent_text(session)
        assert "temperature" in notice
        assert await client.prompt(session, "hi") == "end_turn"


async def test_a_tool_call_then_a_result_in_one_turn_sends_no_empty_update(tmp_path: Path) -> None:
    model = ScriptedModel([Reply(calls=[Call("update_plan", {"entries": []})]), Reply("done")])
    async with scripted_agent(tmp_path, model) as (client, session, _):
        await client.prompt(session, "plan")
    for update in client.session_updates(session, "tool_call_update"):
        assert set(update) - {"sessionUpdate", "toolCallId"}, f"an update that changes nothing: {update}"


def tool_results(model: ScriptedModel) -> list[str]:
    return [str(m["content"]) for m in model.last_request.messages if m.get("role") == "tool"]


def agent_requests(client: Any, method: str) -> list[dict[str, Any]]:
    return [f for f in client.frames if f.get("method") == method]


async def test_a_cancelled_permission_ends_the_call_failed_in_the_replay_not_live(tmp_path: Path) -> None:
    """The call never started: the client marks it cancelled itself, and a status sent now would override that (a
    call that was running gets one: tests/protocol/test_cancelled_calls.py)."""
    store = SessionStore(tmp_path / "store")
    model = ScriptedModel([Reply(calls=[Call("run_command", {"command": "echo hi"}, id="c1")])])
    async with scripted_agent(tmp_path, model, store=store, editor=True) as (client, session, editor):
        assert editor is not None
        editor.hold_permissions = True
        answers: list[str] = []

        async def prompt() -> None:
            answers.append(await client.prompt(session, "run it"))

        async with anyio.create_task_group() as task_group:
            task_group.start_soon(prompt)
            await editor.wait_for_permission_request()
            editor.release_permissions("cancelled", session)  # the editor answers first, then cancels the turn
        await client.notify("session/cancel", {"sessionId": session})
        assert answers == ["cancelled"]
        assert not [u for u in client.session_updates(session, "tool_call_update") if u.get("status") == "failed"]
        assert not agent_requests(client, "$/cancel_request"), "an answered request is not cancelled again"
    async with scripted_agent(tmp_path, ScriptedModel(), store=store, open_session=False) as (client, _, _):
        await client.request("session/load", reopen_params(session, tmp_path / "work"))
    call = next(u for u in client.session_updates(session, "tool_call") if u["toolCallId"] == "c1")
    assert call["status"] == "failed"


async def test_the_user_reads_a_short_sentence_and_the_model_reads_more(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            Reply(calls=[Call("run_command", {"command": "echo one"}, id="c1")]),
            Reply(calls=[Call("run_command", {"command": "rm -f x"}, id="c2")]),
            Reply("ok"),
        ]
    )
    async with scripted_agent(tmp_path, model, editor=True) as (client, session, editor):
        assert editor is not None
        editor.permission_answers = ["reject_once"]
        await client.prompt(session, "go")
    shown = {
        u["toolCallId"]: u["content"][0]["content"]["text"]
        for u in client.session_updates(session, "tool_call_update")
        if u.get("status") == "failed"
    }
    assert shown["c1"] == "Rejected."
    results = tool_results(model)
    assert "Do not retry it" in results[0]
    assert "Do not retry" not in " ".join(shown.values())


@pytest.mark.parametrize("terminal", [True, False])
async def test_a_command_whose_folder_vanished_is_a_failed_call_not_an_error(tmp_path: Path, terminal: bool) -> None:
    work = tmp_path / "work"
    model = ScriptedModel([Reply(calls=[Call("run_command", {"command": "echo hi"}, id="c1")]), Reply("noted")])
    fs_only = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": terminal}
    async with scripted_agent(tmp_path, model, editor=True, capabilities=fs_only, default_mode="full-auto") as (
        client,
        session,
        _,
    ):
        work.rename(tmp_path / "gone")
        assert await client.prompt(session, "run it") == "end_turn"
        (tmp_path / "gone").rename(work)
    statuses = [u.get("status") for u in client.session_updates(session, "tool_call_update")]
    assert statuses[-1] == "failed"
    result = tool_results(model)[0]
    assert "could not start" in result.lower() or "no longer exists" in result or "failed" in result.lower()


@pytest.mark.parametrize("fs", [True, False])
async def test_reading_20_lines_of_a_huge_file_reads_only_those(tmp_path: Path, fs: bool) -> None:
    work = tmp_path / "work"
    work.mkdir()
    line = "x" * 99 + "\n"
    with (work / "huge.log").open("w") as handle:
        for _ in range(60_000):  # 6 MB: past what is read whole
            handle.write(line)
    model = ScriptedModel(
        [Reply(calls=[Call("read_file", {"path": "huge.log", "offset": 100, "limit": 20})]), Reply("ok")]
    )
    capabilities = {"fs": {"readTextFile": fs, "writeTextFile": fs}, "terminal": False}
    async with scripted_agent(tmp_path, model, editor=True, capabilities=capabilities) as (client, session, editor):
        assert editor is not None
        assert await client.prompt(session, "look") == "end_turn"
    result = tool_results(model)[0]
    numbered = [row for row in result.splitlines() if "\t" in row]
    assert len(numbered) == 20
    assert numbered[0].split("\t")[0].strip() == "100"
    assert "too big to read whole" in result
    if fs:
        assert editor.reads[-1]["line"] == 100
        assert editor.reads[-1]["limit"] == 20
