"""What a cancelled tool call shows, as three clients written by others expect it (the interop pass of issue 30).

- Zed's own end-to-end test "cancel" (`crates/agent_servers/src/e2e_tests.rs`), replayed message for message: a
  command waits for permission, the user cancels; Zed marks the call Canceled itself (`mark_pending_entries_as_
  canceled`: pending, waiting or in progress), sends `session/cancel` and answers the request `cancelled`; the call
  must stay Canceled (a later status would override it), and the next prompt ends with an assistant message.
- Toad and acpx show a call without a final status as running forever: a command the agent killed at the cancel
  ends `failed` "Cancelled." before the prompt's response (Toad runs it in its terminal; acpx with its terminal
  turned off, as a local process).

The replay of a loaded session ends every cancelled call `failed` "Cancelled.", as before. And acp.el, which turns
every warning on the agent's stderr into an error event: its answer to a request the agent already cancelled (as
the spec asks of it) is expected, and logged at debug only.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anyio
import pytest

from coder_agent.model.scripted import Call, Reply, ScriptedModel
from coder_agent.store import SessionStore
from tests.support.acp_client import FakeClient
from tests.support.scripted_agent import scripted_agent

pytestmark = pytest.mark.anyio

COMMAND = 'touch hello.txt && echo "Hello, world!" | tee hello.txt'


class ZedThread:
    """The entries Zed's `AcpThread` keeps, reduced to what its cancel test reads: each tool call's status, and
    the kind of the last entry."""

    def __init__(self) -> None:
        self.calls: dict[str, str] = {}
        self.entries: list[tuple[str, str]] = []  # (kind, id): "user", "assistant" or "tool_call"

    def read(self, params: dict[str, Any]) -> None:
        update = params["update"]
        kind = update["sessionUpdate"]
        if kind in ("tool_call", "tool_call_update"):
            call = update["toolCallId"]
            if call not in self.calls:
                self.entries.append(("tool_call", call))
            if "status" in update or call not in self.calls:
                self.calls[call] = update.get("status", "pending")
        elif kind == "agent_message_chunk" and self.entries[-1:] != [("assistant", update["messageId"])]:
            self.entries.append(("assistant", update["messageId"]))
        elif kind == "user_message_chunk":
            self.entries.append(("user", update["messageId"]))

    def asked(self, call: str) -> None:
        self.calls[call] = "waiting_for_confirmation"

    def cancel(self) -> None:
        for call, status in self.calls.items():
            if status in ("pending", "waiting_for_confirmation", "in_progress"):
                self.calls[call] = "canceled"


def _seen_since(client: FakeClient, start: int) -> list[dict[str, Any]]:
    return [f["params"] for f in client.frames[start:] if f.get("method") == "session/update"]


async def test_zed_e2e_cancel_a_call_waiting_for_permission_stays_canceled(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "store")
    model = ScriptedModel([Reply(calls=[Call("run_command", {"command": COMMAND}, id="c1")]), Reply("Goodbye!")])
    async with scripted_agent(tmp_path, model, store=store, editor=True) as (client, session, editor):
        assert editor is not None
        editor.hold_permissions = True
        zed = ZedThread()
        answers: list[str] = []

        async def send() -> None:
            answers.append(await client.prompt(session, f"Run exactly `{COMMAND}` in the terminal."))

        async with anyio.create_task_group() as task_group:
            task_group.start_soon(send)
            pending = await editor.wait_for_permission_request()
            assert "touch" in pending.params["toolCall"]["title"]
            for params in _seen_since(client, 0):
                zed.read(params)
            zed.asked("c1")
            cancelled_at = len(client.frames)
            zed.cancel()  # Zed marks the entries first, then tells the agent
            await editor.cancel(session)
        assert answers == ["cancelled"]
        assert zed.calls["c1"] == "canceled"

        assert await client.prompt(session, "Stop running and say goodbye to me.") == "end_turn"
        for params in _seen_since(client, cancelled_at):
            zed.read(params)
        assert zed.calls["c1"] == "canceled", "a status sent after the cancel overrides Zed's Canceled"
        assert zed.entries[-1][0] == "assistant"
        after = [u["update"] for u in _seen_since(client, cancelled_at)]
        assert not [u for u in after if u.get("toolCallId") == "c1"], "nothing more about the call after the cancel"
    assert not (tmp_path / "work" / "hello.txt").exists()

    async with scripted_agent(tmp_path, ScriptedModel(), store=store, open_session=False) as (client, _, _):
        await client.request("session/load", {"sessionId": session, "cwd": str(tmp_path / "work"), "mcpServers": []})
    replayed = next(u for u in client.session_updates(session, "tool_call") if u["toolCallId"] == "c1")
    assert replayed["status"] == "failed"
    assert replayed["content"][-1]["content"]["text"] == "Cancelled."


async def _cancel_a_running_command(tmp_path: Path, *, terminal: bool) -> list[dict[str, Any]]:
    """Run `sleep` until it runs, cancel; the updates of the call, and what came after the prompt's response."""
    model = ScriptedModel([Reply(calls=[Call("run_command", {"command": "sleep 60"}, id="c1")])])
    capabilities = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": terminal}
    async with scripted_agent(tmp_path, model, editor=True, capabilities=capabilities) as (client, session, editor):
        assert editor is not None
        editor.capabilities(terminal=terminal)
        answers: list[str] = []

        async def send() -> None:
            answers.append(await client.prompt(session, "wait a minute"))

        def running() -> bool:
            return any(u.get("status") == "in_progress" for u in client.session_updates(session, "tool_call_update"))

        async with anyio.create_task_group() as task_group:
            task_group.start_soon(send)
            await client.wait_for(running)
            if terminal:
                await client.wait_for(lambda: bool(editor.terminals))
            await editor.cancel(session)
        assert answers == ["cancelled"]
        response = next(i for i, f in enumerate(client.frames) if f.get("result", {}).get("stopReason") == "cancelled")
        before = [f["params"]["update"] for f in client.frames[:response] if f.get("method") == "session/update"]
        return [u for u in before if u.get("toolCallId") == "c1"]


async def test_toad_a_command_killed_at_the_cancel_ends_with_a_status_in_the_terminal(tmp_path: Path) -> None:
    updates = await _cancel_a_running_command(tmp_path, terminal=True)
    assert updates[-1]["status"] == "failed", "Toad shows a call without a final status as still running"
    assert updates[-1]["content"][-1]["content"]["text"] == "Cancelled."


async def test_acpx_a_command_killed_at_the_cancel_ends_with_a_status_without_a_terminal(tmp_path: Path) -> None:
    updates = await _cancel_a_running_command(tmp_path, terminal=False)
    assert updates[-1]["status"] == "failed", "acpx waits for a final status of a call that was running"
    assert updates[-1]["content"][-1]["content"]["text"] == "Cancelled."


async def test_acp_el_a_late_answer_to_a_cancelled_request_is_no_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="coder_agent.rpc.connection")
    model = ScriptedModel([Reply(calls=[Call("run_command", {"command": "echo hi"}, id="c1")]), Reply("ok")])
    async with scripted_agent(tmp_path, model, editor=True) as (client, session, editor):
        assert editor is not None
        editor.hold_permissions = True
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(client.prompt, session, "run it")
            await editor.wait_for_permission_request()
            await client.notify("session/cancel", {"sessionId": session})
            await client.wait_for(lambda: any(f.get("method") == "$/cancel_request" for f in client.frames))
            editor.release_permissions("cancelled", session)  # the spec-following answer, after the agent cancelled
        assert await client.prompt(session, "again") == "end_turn"
    records = [r for r in caplog.records if r.name.startswith("coder_agent")]
    assert not [r for r in records if r.levelno >= logging.WARNING], [r.getMessage() for r in records]
    assert any("late answer" in r.getMessage() and r.levelno == logging.DEBUG for r in records)
