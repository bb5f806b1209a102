"""The ACP core over in-memory streams: initialize, sessions, prompts, cancellation and wire errors."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest

from coder_agent.protocol.content import ContentBlock, TextContent
from coder_agent.protocol.schema import AgentMessageChunk, StopReason, new_message_id
from coder_agent.session.session import Session
from coder_agent.session.turn_runner import TurnReport
from tests.support.acp_client import RpcFailure, in_process_agent
from tests.support.runners import EchoTurnRunner

pytestmark = pytest.mark.anyio


class BlockingRunner(EchoTurnRunner):
    """A turn that says it started, then waits until cancelled (or released)."""

    def __init__(self) -> None:
        self.started = 0
        self.release = anyio.Event()

    async def run_turn(self, session: Session, prompt: Sequence[ContentBlock], report: TurnReport) -> StopReason:
        self.started += 1
        await session.services.bridge.update(
            AgentMessageChunk(content=TextContent(text=f"started {self.started}"), message_id=new_message_id())
        )
        await self.release.wait()
        return "end_turn"


async def test_initialize_reports_version_capabilities_and_agent_info() -> None:
    async with in_process_agent() as client:
        result = await client.initialize()
    assert result["protocolVersion"] == 1
    assert result["agentInfo"]["name"] == "coder-agent"
    assert result["agentInfo"]["title"]
    assert result["agentInfo"]["version"]
    assert result["authMethods"], "the auth methods are advertised"
    assert result["agentCapabilities"]["promptCapabilities"]["embeddedContext"] is True


async def test_initialize_answers_version_1_even_when_asked_for_2() -> None:
    async with in_process_agent() as client:
        result = await client.request("initialize", {"protocolVersion": 2, "clientCapabilities": {}})
    assert result["protocolVersion"] == 1


async def test_session_new_prompt_and_echo(tmp_path: Path) -> None:
    async with in_process_agent() as client:
        await client.initialize()
        session_id = await client.new_session(str(tmp_path))
        stop = await client.prompt(session_id, "hello")
    assert stop == "end_turn"
    assert "hello" in client.agent_text(session_id)


async def test_many_sessions_have_unique_ids(tmp_path: Path) -> None:
    async with in_process_agent() as client:
        await client.initialize()
        ids = {await client.new_session(str(tmp_path)) for _ in range(20)}
    assert len(ids) == 20


async def test_relative_cwd_is_invalid_params_naming_the_field() -> None:
    async with in_process_agent() as client:
        await client.initialize()
        with pytest.raises(RpcFailure) as failure:
            await client.request("session/new", {"cwd": "relative/dir", "mcpServers": []}, strict=False)
    assert failure.value.code == -32602
    assert "cwd" in failure.value.message


async def test_missing_field_is_invalid_params_naming_it() -> None:
    async with in_process_agent() as client:
        with pytest.raises(RpcFailure) as failure:
            await client.request("session/new", {"mcpServers": []}, strict=False)
    assert failure.value.code == -32602
    assert "cwd" in failure.value.message
    assert failure.value.error["data"]["errors"][0]["field"] == "cwd"


async def test_unknown_session_is_resource_not_found() -> None:
    async with in_process_agent() as client:
        await client.initialize()
        with pytest.raises(RpcFailure) as failure:
            await client.request("session/prompt", {"sessionId": "nope", "prompt": []})
    assert failure.value.code == -32002


async def test_unknown_methods_and_extensions_are_method_not_found() -> None:
    async with in_process_agent() as client:
        for method in ("no/such/method", "_vendor/thing"):
            with pytest.raises(RpcFailure) as failure:
                await client.request(method, {})
            assert failure.value.code == -32601
        await client.notify("_vendor/notice", {"x": 1})  # unknown notifications are ignored
        assert (await client.initialize())["protocolVersion"] == 1
    assert client.stray == []


async def test_meta_is_carried_and_not_taken_for_a_parameter(tmp_path: Path) -> None:
    async with in_process_agent() as client:
        result = await client.request(
            "session/new", {"cwd": str(tmp_path), "mcpServers": [], "_meta": {"cwd": "relative"}}
        )
    assert result["sessionId"]


async def test_cancel_ends_the_turn_with_cancelled_exactly_once(tmp_path: Path) -> None:
    runner = BlockingRunner()
    async with in_process_agent(runner) as client:
        await client.initialize()
        session_id = await client.new_session(str(tmp_path))
        answers: list[str] = []

        async def prompt() -> None:
            answers.append(await client.prompt(session_id, "work"))

        async with anyio.create_task_group() as task_group:
            task_group.start_soon(prompt)
            await client.wait_for(lambda: runner.started == 1)
            await client.notify("session/cancel", {"sessionId": session_id})
    assert answers == ["cancelled"]
    responses = [f for f in client.frames if f.get("id") is not None and "result" in f and "stopReason" in f["result"]]
    assert len(responses) == 1


async def test_a_second_prompt_waits_for_the_first(tmp_path: Path) -> None:
    runner = BlockingRunner()
    async with in_process_agent(runner) as client:
        await client.initialize()
        session_id = await client.new_session(str(tmp_path))
        answers: list[str] = []

        async def prompt(text: str) -> None:
            answers.append(await client.prompt(session_id, text))

        async with anyio.create_task_group() as task_group:
            task_group.start_soon(prompt, "first")
            await client.wait_for(lambda: runner.started == 1)
            task_group.start_soon(prompt, "second")
            await anyio.wait_all_tasks_blocked()  # the second prompt has reached the session and waits there
            assert runner.started == 1, "the second turn must not start while the first runs"
            runner.release.set()
    assert answers == ["end_turn", "end_turn"]
    assert runner.started == 2


async def test_cancel_also_cancels_queued_prompts_but_not_later_ones(tmp_path: Path) -> None:
    runner = BlockingRunner()
    async with in_process_agent(runner) as client:
        await client.initialize()
        session_id = await client.new_session(str(tmp_path))
        answers: dict[str, str] = {}

        async def prompt(text: str) -> None:
            answers[text] = await client.prompt(session_id, text)

        async with anyio.create_task_group() as task_group:
            task_group.start_soon(prompt, "first")
            await client.wait_for(lambda: runner.started == 1)
            task_group.start_soon(prompt, "queued")
            await anyio.wait_all_tasks_blocked()  # the queued prompt has reached the session and waits there
            await client.notify("session/cancel", {"sessionId": session_id})
            await client.wait_for(lambda: len(answers) == 2)
            runner.release.set()
            task_group.start_soon(prompt, "after")
    assert answers == {"first": "cancelled", "queued": "cancelled", "after": "end_turn"}


async def test_cancel_in_one_session_leaves_others_running(tmp_path: Path) -> None:
    runner = BlockingRunner()
    async with in_process_agent(runner) as client:
        await client.initialize()
        first = await client.new_session(str(tmp_path))
        second = await client.new_session(str(tmp_path))
        answers: dict[str, str] = {}

        async def prompt(session_id: str) -> None:
            answers[session_id] = await client.prompt(session_id, "go")

        async with anyio.create_task_group() as task_group:
            task_group.start_soon(prompt, first)
            task_group.start_soon(prompt, second)
            await client.wait_for(lambda: runner.started == 2)
            await client.notify("session/cancel", {"sessionId": first})
            await client.wait_for(lambda: first in answers)
            assert second not in answers
            runner.release.set()
    assert answers == {first: "cancelled", second: "end_turn"}


async def test_cancel_request_cancels_an_incoming_request(tmp_path: Path) -> None:
    runner = BlockingRunner()
    async with in_process_agent(runner) as client:
        await client.initialize()
        session_id = await client.new_session(str(tmp_path))
        await client.send_message(
            {
                "jsonrpc": "2.0",
                "id": "p1",
                "method": "session/prompt",
                "params": {"sessionId": session_id, "prompt": [{"type": "text", "text": "x"}]},
            }
        )
        await client.wait_for(lambda: runner.started == 1)
        await client.notify("$/cancel_request", {"requestId": "p1"})
        answer = await client.next_stray()
    assert answer["id"] == "p1"
    assert answer["error"]["code"] == -32800


async def test_eof_cancels_running_turns_and_shuts_down(tmp_path: Path) -> None:
    runner = BlockingRunner()
    answers: list[str] = []
    async with in_process_agent(runner) as client, anyio.create_task_group() as task_group:
        await client.initialize()
        session_id = await client.new_session(str(tmp_path))

        async def prompt() -> None:
            answers.append(await client.prompt(session_id, "go"))

        task_group.start_soon(prompt)
        await client.wait_for(lambda: runner.started == 1)
        await client.send_raw(b"")  # nothing; leaving the block closes the agent's input
        task_group.cancel_scope.cancel()
    # The agent shut down (the context exited) with the turn still blocked: it was cancelled.
    assert runner.release.is_set() is False


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        (b"{not json", -32700),
        (b"[]", -32600),
        (b"[1, 2]", -32600),
        (b"42", -32600),
        (b'{"jsonrpc": "1.0", "id": 7, "method": "initialize"}', -32600),
        (b'{"jsonrpc": "2.0", "id": 7, "method": 12}', -32600),
        (b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "initialize"}', -32600),
        (b'{"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": "x"}', -32600),
        (b'{"jsonrpc": "2.0", "id": 7}', -32600),
        (b'{"jsonrpc": "2.0", "id": 7, "method": "session/new", "params": {"cwd": 5, "mcpServers": []}}', -32602),
        (b'{"jsonrpc": "2.0", "id": 7, "method": "session/prompt", "params": []}', -32602),
        (b'\xff\xfe{"jsonrpc": "2.0"}', -32700),
        (b'{"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {"protocolVersion": NaN}}', -32700),
    ],
)
async def test_malformed_frames_get_the_right_error(frame: bytes, code: int) -> None:
    async with in_process_agent() as client:
        await client.send_raw(frame + b"\n")
        answer = await client.next_stray()
        assert answer["error"]["code"] == code
        assert "Traceback" not in answer["error"]["message"]
        assert (await client.initialize())["protocolVersion"] == 1


async def test_responses_to_unknown_ids_are_ignored() -> None:
    async with in_process_agent() as client:
        await client.send_raw(b'{"jsonrpc": "2.0", "id": 999, "result": {}}\n')
        await client.send_raw(b'{"jsonrpc": "2.0", "id": 998, "error": {"code": 1, "message": "x"}}\n')
        assert (await client.initialize())["protocolVersion"] == 1
    assert client.stray == []


async def test_internal_errors_hide_the_traceback(tmp_path: Path) -> None:
    class FailingRunner(EchoTurnRunner):
        async def run_turn(self, session: Session, prompt: Sequence[ContentBlock], report: TurnReport) -> StopReason:
            raise RuntimeError("secret internals")

    async with in_process_agent(FailingRunner()) as client:
        await client.initialize()
        session_id = await client.new_session(str(tmp_path))
        with pytest.raises(RpcFailure) as failure:
            await client.prompt(session_id, "x")
        assert failure.value.code == -32603
        assert "secret" not in str(failure.value.error)
        assert await client.new_session(str(tmp_path))
