"""Tests for `tests.support.editor.FakeEditor`, driven as the agent would drive it but without an agent.

Most calls go through the FakeClient (`Harness.call` feeds it a request frame as if the agent sent it and reads the
answer it writes back), so the conformance checker validates both the request and the editor's result.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.acp_client import FakeClient, RpcFailure
from tests.support.editor import FakeEditor, capabilities

pytestmark = pytest.mark.anyio

SESSION = "sess-1"


class Harness:
    """A FakeClient whose outgoing frames are captured, with a FakeEditor installed on it."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []  # frames the client wrote (answers, notifications)
        self._changed = anyio.Event()
        self._ids = itertools.count(1)
        self.client = FakeClient(self._send)

    async def _send(self, data: bytes) -> None:
        self.sent.extend(json.loads(line) for line in data.splitlines() if line.strip())
        self._changed.set()
        self._changed = anyio.Event()

    async def start(self, method: str, params: dict[str, Any]) -> int:
        """Deliver a request from the 'agent' to the client; return its id."""
        request_id = next(self._ids)
        frame = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        await self.client.on_frame(json.dumps(frame).encode())
        return request_id

    def answered(self, request_id: int) -> bool:
        return any(m.get("id") == request_id and "method" not in m for m in self.sent)

    async def response(self, request_id: int, timeout: float = 10.0) -> dict[str, Any]:
        with anyio.fail_after(timeout):
            while not self.answered(request_id):
                await self._changed.wait()
        return next(m for m in self.sent if m.get("id") == request_id and "method" not in m)

    async def call(self, method: str, params: dict[str, Any], timeout: float = 10.0) -> Any:
        """The result the client answers with, or RpcFailure for an error answer."""
        response = await self.response(await self.start(method, params), timeout)
        if "error" in response:
            raise RpcFailure(response["error"])
        return response["result"]

    async def terminal(self, method: str, terminal_id: str) -> Any:
        return await self.call(method, {"sessionId": SESSION, "terminalId": terminal_id})


@asynccontextmanager
async def harness(root: Path) -> AsyncIterator[tuple[Harness, FakeEditor]]:
    h = Harness()
    async with anyio.create_task_group() as task_group:
        h.client._task_group = task_group
        editor = FakeEditor(h.client, root)
        try:
            yield h, editor
        finally:
            await editor.aclose()
            task_group.cancel_scope.cancel()
    assert await editor.wait_no_live_pids() == []


async def wait_until(predicate: Any, timeout: float = 10.0) -> None:
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.02)


# ---- capabilities ---------------------------------------------------------------------------------


async def test_capabilities_match_the_registered_handlers(tmp_path: Path) -> None:
    assert capabilities() == {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True}
    async with harness(tmp_path) as (h, editor):
        assert editor.capabilities() == capabilities()
        assert editor.capabilities(fs=False) == capabilities(fs=False, terminal=True)
        assert "fs/read_text_file" not in h.client.handlers
        with pytest.raises(RpcFailure) as failure:
            await h.call("fs/read_text_file", {"sessionId": SESSION, "path": editor.path("a.txt")})
        assert failure.value.code == -32601
        assert editor.capabilities(terminal=False)["terminal"] is False
        assert not any(method.startswith("terminal/") for method in h.client.handlers)
        assert "session/request_permission" in h.client.handlers


# ---- fs -------------------------------------------------------------------------------------------


async def test_read_prefers_the_unsaved_buffer_and_applies_line_and_limit(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\nthree\nfour")
    async with harness(tmp_path) as (h, editor):
        path = editor.path("a.txt")
        read = {"sessionId": SESSION, "path": path}
        assert await h.call("fs/read_text_file", read) == {"content": "one\ntwo\nthree\nfour"}
        assert await h.call("fs/read_text_file", {**read, "line": 2, "limit": 2}) == {"content": "two\nthree\n"}
        assert await h.call("fs/read_text_file", {**read, "line": 3}) == {"content": "three\nfour"}
        assert await h.call("fs/read_text_file", {**read, "limit": 1}) == {"content": "one\n"}
        assert await h.call("fs/read_text_file", {**read, "line": 9}) == {"content": ""}

        editor.set_buffer(path, "unsaved\r\nbuffer\r\n")
        assert await h.call("fs/read_text_file", read) == {"content": "unsaved\r\nbuffer\r\n"}
        assert await h.call("fs/read_text_file", {**read, "line": 2, "limit": 5}) == {"content": "buffer\r\n"}
        assert (tmp_path / "a.txt").read_text() == "one\ntwo\nthree\nfour"  # the disk is untouched
        assert len(editor.reads) == 7
        assert editor.reads[1] == {**read, "line": 2, "limit": 2}


async def test_read_of_a_missing_file_is_resource_not_found(tmp_path: Path) -> None:
    async with harness(tmp_path) as (h, editor):
        path = editor.path("nope", "missing.py")
        with pytest.raises(RpcFailure) as failure:
            await h.call("fs/read_text_file", {"sessionId": SESSION, "path": path})
        assert failure.value.code == -32002
        assert path in failure.value.message
        assert editor.reads == [{"sessionId": SESSION, "path": path}]


async def test_relative_paths_are_invalid_params(tmp_path: Path) -> None:
    async with harness(tmp_path) as (h, _editor):
        with pytest.raises(RpcFailure) as failure:
            await h.call("fs/read_text_file", {"sessionId": SESSION, "path": "a.txt"})
        assert failure.value.code == -32602


async def test_write_creates_the_file_and_saves_the_buffer(tmp_path: Path) -> None:
    async with harness(tmp_path) as (h, editor):
        path = editor.path("new", "dir", "b.txt")
        editor.set_buffer(path, "stale buffer")
        result = await h.call("fs/write_text_file", {"sessionId": SESSION, "path": path, "content": "fresh\r\n"})
        assert result == {}
        assert await anyio.Path(path).read_bytes() == b"fresh\r\n"
        assert editor.writes == [(path, "fresh\r\n")]
        assert path not in editor.buffers
        assert await h.call("fs/read_text_file", {"sessionId": SESSION, "path": path}) == {"content": "fresh\r\n"}


async def test_failing_writes_answer_an_error_and_touch_nothing(tmp_path: Path) -> None:
    async with harness(tmp_path) as (h, editor):
        editor.fail_writes = True
        path = editor.path("c.txt")
        with pytest.raises(RpcFailure) as failure:
            await h.call("fs/write_text_file", {"sessionId": SESSION, "path": path, "content": "x"})
        assert failure.value.code == -32603
        assert not await anyio.Path(path).exists()
        assert editor.writes == []


# ---- terminals ------------------------------------------------------------------------------------


async def test_terminal_runs_a_command_and_reports_its_exit(tmp_path: Path) -> None:
    async with harness(tmp_path) as (h, editor):
        created = await h.call("terminal/create", {"sessionId": SESSION, "command": "echo hi; exit 3"})
        terminal_id = created["terminalId"]
        assert terminal_id == "term-1"
        assert await h.terminal("terminal/wait_for_exit", terminal_id) == {"exitCode": 3, "signal": None}
        assert await h.terminal("terminal/output", terminal_id) == {
            "output": "hi\n",
            "truncated": False,
            "exitStatus": {"exitCode": 3, "signal": None},
        }
        assert editor.terminals[terminal_id].command == "echo hi; exit 3"
        assert editor.unreleased() == [terminal_id]
        assert await h.terminal("terminal/release", terminal_id) == {}
        assert editor.unreleased() == []
        assert editor.released == [terminal_id]


async def test_terminal_args_env_and_cwd(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    async with harness(tmp_path) as (h, editor):
        params = {
            "sessionId": SESSION,
            "command": "sh",
            "args": ["-c", 'printf "%s %s" "$GREETING" "$(pwd)"; echo oops >&2'],
            "env": [{"name": "GREETING", "value": "hello"}],
            "cwd": editor.path("sub"),
        }
        terminal_id = (await h.call("terminal/create", params))["terminalId"]
        assert await h.terminal("terminal/wait_for_exit", terminal_id) == {"exitCode": 0, "signal": None}
        output = (await h.terminal("terminal/output", terminal_id))["output"]
        real_cwd = await anyio.Path(tmp_path / "sub").resolve()
        assert output == f"hello {real_cwd}oops\n"  # stderr is merged into the output
        assert editor.terminals[terminal_id].env == {"GREETING": "hello"}
        await h.terminal("terminal/release", terminal_id)


async def test_output_is_not_reported_as_exited_while_running(tmp_path: Path) -> None:
    async with harness(tmp_path) as (h, _editor):
        terminal_id = (await h.call("terminal/create", {"sessionId": SESSION, "command": "echo started; sleep 100"}))[
            "terminalId"
        ]
        with anyio.fail_after(10):
            while (await h.terminal("terminal/output", terminal_id))["output"] != "started\n":
                await anyio.sleep(0.02)
        assert "exitStatus" not in await h.terminal("terminal/output", terminal_id)
        await h.terminal("terminal/release", terminal_id)


async def test_output_is_truncated_from_the_beginning(tmp_path: Path) -> None:
    async with harness(tmp_path) as (h, _editor):
        params = {"sessionId": SESSION, "command": "printf 0123456789abcdef", "outputByteLimit": 10}
        terminal_id = (await h.call("terminal/create", params))["terminalId"]
        await h.terminal("terminal/wait_for_exit", terminal_id)
        output = await h.terminal("terminal/output", terminal_id)
        assert (output["output"], output["truncated"]) == ("6789abcdef", True)
        await h.terminal("terminal/release", terminal_id)


async def test_truncation_keeps_whole_characters(tmp_path: Path) -> None:
    async with harness(tmp_path) as (h, _editor):
        # "ééé" is 6 bytes; keeping the last 5 would start inside a character, so only "éé" (4 bytes) is kept.
        params = {"sessionId": SESSION, "command": "printf 'ééé'", "outputByteLimit": 5}
        terminal_id = (await h.call("terminal/create", params))["terminalId"]
        await h.terminal("terminal/wait_for_exit", terminal_id)
        output = await h.terminal("terminal/output", terminal_id)
        assert (output["output"], output["truncated"]) == ("éé", True)
        await h.terminal("terminal/release", terminal_id)


async def test_output_under_the_limit_is_not_truncated(tmp_path: Path) -> None:
    async with harness(tmp_path) as (h, _editor):
        params = {"sessionId": SESSION, "command": "printf 'ééé'", "outputByteLimit": 6}
        terminal_id = (await h.call("terminal/create", params))["terminalId"]
        await h.terminal("terminal/wait_for_exit", terminal_id)
        output = await h.terminal("terminal/output", terminal_id)
        assert (output["output"], output["truncated"]) == ("ééé", False)
        await h.terminal("terminal/release", terminal_id)


async def test_kill_takes_the_whole_process_group(tmp_path: Path) -> None:
    async with harness(tmp_path) as (h, editor):
        command = "echo forked; sleep 100 & sleep 100 & wait"
        terminal_id = (await h.call("terminal/create", {"sessionId": SESSION, "command": command}))["terminalId"]
        await wait_until(lambda: len(editor.live_pids()) == 3)  # the shell and its two sleeps
        assert await h.terminal("terminal/kill", terminal_id) == {}
        assert await h.terminal("terminal/wait_for_exit", terminal_id) == {"exitCode": None, "signal": "SIGKILL"}
        assert await editor.wait_no_live_pids() == []
        # the terminal stays valid after kill
        output = await h.terminal("terminal/output", terminal_id)
        assert output == {
            "output": "forked\n",
            "truncated": False,
            "exitStatus": {"exitCode": None, "signal": "SIGKILL"},
        }
        await h.terminal("terminal/release", terminal_id)


async def test_exit_is_reported_even_if_children_keep_the_output_open(tmp_path: Path) -> None:
    async with harness(tmp_path) as (h, editor):
        command = "sleep 100 & echo bye"
        terminal_id = (await h.call("terminal/create", {"sessionId": SESSION, "command": command}))["terminalId"]
        assert await h.terminal("terminal/wait_for_exit", terminal_id) == {"exitCode": 0, "signal": None}
        assert (await h.terminal("terminal/output", terminal_id))["output"] == "bye\n"
        assert len(editor.live_pids()) == 1  # the background sleep, left behind in the group
        await h.terminal("terminal/release", terminal_id)  # release kills what is left of the group
        assert await editor.wait_no_live_pids() == []


async def test_release_kills_and_invalidates_the_id(tmp_path: Path) -> None:
    async with harness(tmp_path) as (h, editor):
        params = {"sessionId": SESSION, "command": "sleep", "args": ["100"]}  # no shell: exactly one process
        terminal_id = (await h.call("terminal/create", params))["terminalId"]
        await wait_until(lambda: len(editor.live_pids()) == 1)
        assert await h.terminal("terminal/release", terminal_id) == {}
        assert await editor.wait_no_live_pids() == []
        assert editor.released == [terminal_id]
        for method in ("terminal/output", "terminal/wait_for_exit", "terminal/kill", "terminal/release"):
            with pytest.raises(RpcFailure) as failure:
                await h.terminal(method, terminal_id)
            assert failure.value.code == -32002, method
        with pytest.raises(RpcFailure) as failure:
            await h.terminal("terminal/output", "term-99")
        assert failure.value.code == -32002


async def test_a_terminal_belongs_to_its_session(tmp_path: Path) -> None:
    async with harness(tmp_path) as (h, _editor):
        terminal_id = (await h.call("terminal/create", {"sessionId": SESSION, "command": "true"}))["terminalId"]
        with pytest.raises(RpcFailure) as failure:
            await h.call("terminal/output", {"sessionId": "other", "terminalId": terminal_id})
        assert failure.value.code == -32002
        await h.terminal("terminal/release", terminal_id)


async def test_a_command_that_cannot_start_is_an_error(tmp_path: Path) -> None:
    async with harness(tmp_path) as (h, editor):
        with pytest.raises(RpcFailure) as failure:
            await h.call("terminal/create", {"sessionId": SESSION, "command": "/no/such/binary", "args": ["x"]})
        assert failure.value.code == -32603
        assert editor.terminals == {}


async def test_aclose_kills_everything_left(tmp_path: Path) -> None:
    async with harness(tmp_path) as (h, editor):
        for _ in range(2):
            await h.call("terminal/create", {"sessionId": SESSION, "command": "sleep 100 & sleep 100 & wait"})
        await wait_until(lambda: len(editor.live_pids()) == 6)
        await editor.aclose()
        assert await editor.wait_no_live_pids() == []
        assert all(t.exited.is_set() for t in editor.terminals.values())


async def test_cancelling_the_host_task_group_kills_the_processes(tmp_path: Path) -> None:
    h = Harness()
    async with anyio.create_task_group() as outer:
        h.client._task_group = outer
        async with anyio.create_task_group() as host:
            editor = FakeEditor(h.client, tmp_path, task_group=host)
            await h.call("terminal/create", {"sessionId": SESSION, "command": "sleep 100 & sleep 100 & wait"})
            await wait_until(lambda: len(editor.live_pids()) == 3)
            host.cancel_scope.cancel()
        assert await editor.wait_no_live_pids() == []
        outer.cancel_scope.cancel()


# ---- permissions ----------------------------------------------------------------------------------


def permission_params(kinds: tuple[str, ...] = ("allow_once", "allow_always", "reject_once", "reject_always")) -> dict:
    return {
        "sessionId": SESSION,
        "toolCall": {"toolCallId": "call-1"},
        "options": [{"optionId": f"opt-{kind}", "name": kind, "kind": kind} for kind in kinds],
    }


async def test_scripted_permission_answers_then_the_default(tmp_path: Path) -> None:
    async with harness(tmp_path) as (h, editor):
        editor.permission_answers = ["reject_once", "allow_always", "cancelled"]
        outcomes = [(await h.call("session/request_permission", permission_params()))["outcome"] for _ in range(4)]
        assert outcomes == [
            {"outcome": "selected", "optionId": "opt-reject_once"},
            {"outcome": "selected", "optionId": "opt-allow_always"},
            {"outcome": "cancelled"},
            {"outcome": "selected", "optionId": "opt-allow_once"},  # the script is used up: default_permission
        ]
        editor.default_permission = "reject_always"
        result = await h.call("session/request_permission", permission_params())
        assert result == {"outcome": {"outcome": "selected", "optionId": "opt-reject_always"}}
        assert editor.permission_requests == [permission_params()] * 5
        assert editor.permission_outcomes[-1] == result["outcome"]


async def test_a_scripted_kind_the_agent_did_not_offer_fails_the_test(tmp_path: Path) -> None:
    async with harness(tmp_path) as (h, editor):
        editor.permission_answers = ["allow_always"]
        with pytest.raises(AssertionError, match="allow_always"):
            await h.client.handlers["session/request_permission"](permission_params(("allow_once", "reject_once")))


async def test_held_permission_is_answered_cancelled_when_the_turn_is_cancelled(tmp_path: Path) -> None:
    async with harness(tmp_path) as (h, editor):
        editor.hold_permissions = True
        request_id = await h.start("session/request_permission", permission_params())
        pending = await editor.wait_for_permission_request()
        assert pending.params == permission_params()
        await anyio.wait_all_tasks_blocked()
        assert not h.answered(request_id)  # held

        await editor.cancel(SESSION)
        response = await h.response(request_id)
        assert response["result"] == {"outcome": {"outcome": "cancelled"}}
        cancel_at = h.sent.index({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": SESSION}})
        assert cancel_at < h.sent.index(response)  # session/cancel first, then the cancelled outcome
        assert editor.pending_permissions == []


async def test_held_permissions_released_with_a_choice_or_the_script(tmp_path: Path) -> None:
    async with harness(tmp_path) as (h, editor):
        editor.hold_permissions = True
        editor.permission_answers = ["reject_once"]
        first = await h.start("session/request_permission", permission_params())
        second = await h.start("session/request_permission", {**permission_params(), "sessionId": "sess-2"})
        await editor.wait_for_permission_request(count=2)

        assert editor.release_permissions("allow_always", session_id="sess-2") == 1
        assert (await h.response(second))["result"]["outcome"] == {
            "outcome": "selected",
            "optionId": "opt-allow_always",
        }
        assert not h.answered(first)

        assert editor.release_permissions() == 1  # no choice: the script decides
        assert (await h.response(first))["result"]["outcome"] == {"outcome": "selected", "optionId": "opt-reject_once"}


async def test_aclose_cancels_held_permissions(tmp_path: Path) -> None:
    async with harness(tmp_path) as (h, editor):
        editor.hold_permissions = True
        request_id = await h.start("session/request_permission", permission_params())
        await editor.wait_for_permission_request()
        await editor.aclose()
        assert (await h.response(request_id))["result"] == {"outcome": {"outcome": "cancelled"}}
