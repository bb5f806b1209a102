"""The model ↔ tools loop, driven by a ScriptedModel in-process: stop reasons, limits, compaction, cancels."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from coder_agent.model.base import ContextWindowExceeded, ModelError, ModelTurn, StreamCut, Usage
from coder_agent.model.scripted import Call, Reply, Request, ScriptedModel
from tests.support.acp_client import RpcFailure
from tests.support.scripted_agent import scripted_agent

pytestmark = pytest.mark.anyio


def contents(request: Request) -> list[object]:
    """The conversation of a request without its system prompt."""
    return [m.get("content") for m in request.messages[1:]]


async def test_history_carries_over_between_prompts(tmp_path: Path) -> None:
    model = ScriptedModel([Reply("First answer."), Reply("Second answer.")])
    async with scripted_agent(tmp_path, model) as (client, session, _):
        await client.prompt(session, "one")
        await client.prompt(session, "two")
    roles = [(m["role"], m.get("content")) for m in model.last_request.messages[1:]]
    assert roles == [("user", "one"), ("assistant", "First answer."), ("user", "two")]
    assert model.last_request.messages[0]["role"] == "system"


async def test_text_and_thoughts_stream_to_the_client(tmp_path: Path) -> None:
    model = ScriptedModel([Reply("Hello there.", thought="Pondering.", chunk_size=3, usage=Usage(100, 5))])
    async with scripted_agent(tmp_path, model) as (client, session, _):
        assert await client.prompt(session, "hi") == "end_turn"
    [(reply_id, reply)] = client.messages(session)[-1:]
    assert reply == "Hello there."
    assert len([u for u in client.session_updates(session, "agent_message_chunk") if u["messageId"] == reply_id]) == 4
    assert client.session_updates(session, "agent_thought_chunk")[0]["content"]["text"] == "Pondering."
    assert client.session_updates(session, "usage_update")[-1]["used"] == 105


async def test_tool_results_go_back_to_the_model(tmp_path: Path) -> None:
    model = ScriptedModel([Reply("Let me look.", calls=[Call("no_such_tool", {"x": 1}, id="c1")]), Reply("Done.")])
    async with scripted_agent(tmp_path, model) as (client, session, _):
        assert await client.prompt(session, "go") == "end_turn"
    assistant, result = model.last_request.messages[-2:]
    assert assistant["tool_calls"][0]["id"] == "c1"
    assert result["role"] == "tool"
    assert result["tool_call_id"] == "c1"
    assert "no tool named" in result["content"]


@pytest.mark.parametrize(
    ("reply", "stop_reason"),
    [
        (Reply("Cut short", finish_reason="length"), "max_tokens"),
        (Reply("", finish_reason="content_filter"), "refusal"),
    ],
)
async def test_finish_reasons_map_to_stop_reasons(tmp_path: Path, reply: Reply, stop_reason: str) -> None:
    async with scripted_agent(tmp_path, ScriptedModel([reply])) as (client, session, _):
        assert await client.prompt(session, "go") == stop_reason


async def test_a_refused_prompt_is_left_out_of_the_next_request(tmp_path: Path) -> None:
    model = ScriptedModel([Reply("", finish_reason="content_filter"), Reply("ok")])
    async with scripted_agent(tmp_path, model) as (client, session, _):
        assert await client.prompt(session, "bad request") == "refusal"
        assert await client.prompt(session, "good request") == "end_turn"
    assert contents(model.last_request) == ["good request"]


async def test_cut_at_max_tokens_answers_the_tool_calls_it_carried(tmp_path: Path) -> None:
    model = ScriptedModel([Reply("", calls=[Call("read_file", {"path": "a"}, id="c1")], finish_reason="length")])
    model.add(Reply("next"))
    async with scripted_agent(tmp_path, model) as (client, session, _):
        assert await client.prompt(session, "go") == "max_tokens"
        await client.prompt(session, "again")
    tool = model.last_request.messages[-2]
    assert tool == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "Not run: the model's output was cut at max_tokens.",
    }


async def test_max_turn_requests_stops_a_tool_loop(tmp_path: Path) -> None:
    model = ScriptedModel(default=lambda request: Reply(calls=[Call("probe", {"n": len(request.messages)})]))
    async with scripted_agent(tmp_path, model, max_turn_requests=3) as (client, session, _):
        assert await client.prompt(session, "loop forever") == "max_turn_requests"
    assert len(model.requests) == 3
    assert "max_turn_requests" in client.agent_text(session)


async def test_doom_loop_guard_stops_identical_repeats(tmp_path: Path) -> None:
    model = ScriptedModel(default=Reply(calls=[Call("probe", {"same": True})]))
    async with scripted_agent(tmp_path, model) as (client, session, _):
        assert await client.prompt(session, "repeat") == "end_turn"
    assert len(model.requests) == 3
    assert "same `probe` call" in client.agent_text(session)


async def test_a_failed_call_is_an_error_with_the_words_and_keeps_the_history(tmp_path: Path) -> None:
    model = ScriptedModel([ModelError("upstream exploded"), Reply("Back.")])
    async with scripted_agent(tmp_path, model) as (client, session, _):
        with pytest.raises(RpcFailure) as failure:
            await client.prompt(session, "first")
        assert failure.value.code == -32003
        assert "upstream exploded" in failure.value.message
        assert await client.prompt(session, "second") == "end_turn"
    assert contents(model.last_request) == ["first", "second"]


async def test_a_cut_stream_keeps_the_partial_answer(tmp_path: Path) -> None:
    partial = ModelTurn({"role": "assistant", "content": "abc"}, "abc", [], "stop", Usage())
    model = ScriptedModel([StreamCut("The model's answer was cut off: gone", partial), Reply("Next.")])
    async with scripted_agent(tmp_path, model) as (client, session, _):
        assert await client.prompt(session, "go") == "end_turn"
        assert "cut off" in client.agent_text(session)
        await client.prompt(session, "continue")
    assert model.last_request.messages[2] == {"role": "assistant", "content": "abc"}


async def test_cancel_mid_stream_keeps_what_was_shown(tmp_path: Path) -> None:
    hold = anyio.Event()
    model = ScriptedModel([Reply("partial answer here", chunk_size=4, hold=hold, hold_after=2), Reply("ok")])
    async with scripted_agent(tmp_path, model) as (client, session, _):
        answers: list[str] = []

        async def prompt() -> None:
            answers.append(await client.prompt(session, "go"))

        async with anyio.create_task_group() as task_group:
            task_group.start_soon(prompt)
            await client.wait_for(lambda: client.agent_text(session).endswith("partial "))
            await client.notify("session/cancel", {"sessionId": session})
        assert answers == ["cancelled"]
        await client.prompt(session, "again")
    kept = model.last_request.messages[2]
    assert kept == {"role": "assistant", "content": "partial \n[interrupted]"}


async def test_compaction_near_the_window_is_shown_to_the_user(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            Reply("Answer one.", usage=Usage(850, 50)),  # 900 of 1000 tokens: over the 80% threshold
            Reply("SUMMARY: the user asked one thing."),  # the compaction request, before the next call
            Reply("Answer two."),
        ],
        window=1000,
    )
    async with scripted_agent(tmp_path, model) as (client, session, _):
        await client.prompt(session, "one")
        await client.prompt(session, "two")
    summary_request = model.requests[1]
    assert summary_request.tools == []
    assert "summary" in str(summary_request.messages[0]["content"]).lower()
    assert "Answer one." in str(summary_request.messages[1]["content"])
    final = model.last_request.messages
    assert "SUMMARY: the user asked one thing." in final[1]["content"]
    assert final[-1] == {"role": "user", "content": "two"}
    assert len(final) == 4, "system, summary, acknowledgement, the new prompt"
    assert "compacted" in client.agent_text(session).lower()


async def test_compaction_uses_compaction_updates_when_the_client_supports_them(tmp_path: Path) -> None:
    model = ScriptedModel([Reply("one", usage=Usage(900, 50)), Reply("SUMMARY"), Reply("two")], window=1000)
    capabilities = {"fs": {"readTextFile": False, "writeTextFile": False}, "session": {"compaction": {}}}
    async with scripted_agent(tmp_path, model, capabilities=capabilities) as (client, session, _):
        for text in ("a", "b"):
            await client.prompt(session, text)
    statuses = [u["status"] for u in client.session_updates(session, "compaction_update")]
    assert statuses == ["in_progress", "completed"]


async def test_context_window_exceeded_compacts_and_retries(tmp_path: Path) -> None:
    model = ScriptedModel([Reply("first"), ContextWindowExceeded("too long"), Reply("SUMMARY"), Reply("fits now")])
    async with scripted_agent(tmp_path, model) as (client, session, _):
        await client.prompt(session, "one")
        assert await client.prompt(session, "two") == "end_turn"
    assert client.agent_text(session).endswith("fits now")
    assert "SUMMARY" in model.last_request.messages[1]["content"]


async def test_a_session_is_titled_after_its_first_prompt(tmp_path: Path) -> None:
    model = ScriptedModel(default=Reply("ok"))
    async with scripted_agent(tmp_path, model) as (client, session, _):
        await client.prompt(session, "Fix   the flaky\ntest in the parser " + "x" * 80)
        await client.prompt(session, "and another thing")
    titles = [u["title"] for u in client.session_updates(session, "session_info_update")]
    assert len(titles) == 1
    assert titles[0].startswith("Fix the flaky test in the parser")
    assert len(titles[0]) <= 60


async def test_every_model_call_is_billed_once_even_when_its_report_comes_late(tmp_path: Path) -> None:
    """The turn's calls, a compaction's summary and the next turn's call, each with its usage after its answer
    (as litellm's streams have it): all of their cost is the session's, each counted once."""
    model = ScriptedModel(
        [
            Reply("Answer one.", usage=Usage(850, 50), cost=0.25, late_bill=True),
            Reply("SUMMARY", usage=Usage(400, 20), cost=0.125, late_bill=True),  # the compaction's summary
            Reply("Answer two.", usage=Usage(300, 10), cost=0.0625, late_bill=True),
        ],
        window=1000,
    )
    async with scripted_agent(tmp_path, model) as (client, session, _):
        await client.prompt(session, "one")
        await client.prompt(session, "two")
        await client.prompt(session, "/context")
    assert "$0.4375" in client.agent_text(session)
    costs = [u["cost"]["amount"] for u in client.session_updates(session, "usage_update") if u.get("cost")]
    assert costs[-1] == 0.4375


def test_the_calls_a_turn_stopped_at_for_want_of_permission_are_found_at_the_end_of_the_history() -> None:
    from coder_agent.agent.turn import NEEDS_PERMISSION, NOT_RUN_AFTER_STOP, stopped_calls
    from coder_agent.model.base import ToolCallRequest

    def call(n: int) -> dict[str, object]:
        return {"id": f"c{n}", "type": "function", "function": {"name": "write_file", "arguments": f'{{"n": {n}}}'}}

    history: list[dict[str, object]] = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "tool_calls": [call(1), call(2), call(3)]},
        {"role": "tool", "tool_call_id": "c1", "content": "Wrote a.txt"},
        {"role": "tool", "tool_call_id": "c2", "content": NEEDS_PERMISSION},
        {"role": "tool", "tool_call_id": "c3", "content": NOT_RUN_AFTER_STOP},
    ]
    assert stopped_calls(history) == [
        ToolCallRequest("c2", "write_file", '{"n": 2}'),
        ToolCallRequest("c3", "write_file", '{"n": 3}'),
    ]
    assert stopped_calls([*history, {"role": "user", "content": "something else"}]) == []
    assert stopped_calls(history[:3]) == []
