"""The agent loop against the fake OpenAI-compatible server, through litellm, over the in-memory protocol."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from coder_agent.agent.runner import AgentRunner
from tests.support.acp_client import RpcFailure, in_process_agent
from tests.support.fake_llm import FakeLLM, Fault, Reply, ToolCall
from tests.support.llm_agent import llm_agent, make_source

pytestmark = pytest.mark.anyio


async def test_streams_text_and_thoughts_and_reports_usage(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.add(Reply("Hello from the model.", reasoning="Thinking it over.", chunk_size=4, usage=(120, 7)))
    async with llm_agent(tmp_path, fake_llm) as (client, session):
        assert await client.prompt(session, "Say hello") == "end_turn"
    chunks = client.session_updates(session, "agent_message_chunk")
    assert len(chunks) > 1, "text arrives as it streams, in several chunks"
    assert client.agent_text(session) == "Hello from the model."
    thoughts = "".join(u["content"]["text"] for u in client.session_updates(session, "agent_thought_chunk"))
    assert thoughts == "Thinking it over."
    usage = client.session_updates(session, "usage_update")[-1]
    assert usage["used"] == 127
    assert usage["size"] > 0
    request = fake_llm.last_request
    assert request["stream"] is True
    assert request["stream_options"] == {"include_usage": True}
    system, user = request["messages"][0], request["messages"][-1]
    assert system["role"] == "system"
    assert str(tmp_path / "work") in system["content"]
    assert user == {"role": "user", "content": "Say hello"}
    assert fake_llm.recorded[-1].bearer == "sk-test"


async def test_history_carries_over_between_prompts(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.script([Reply("First answer."), Reply("Second answer.")])
    async with llm_agent(tmp_path, fake_llm) as (client, session):
        await client.prompt(session, "one")
        await client.prompt(session, "two")
    roles = [(m["role"], m.get("content")) for m in fake_llm.last_request["messages"][1:]]
    assert roles == [("user", "one"), ("assistant", "First answer."), ("user", "two")]


async def test_tool_calls_round_trip_and_results_go_back(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.script(
        [
            Reply("Let me look.", tool_calls=[ToolCall("no_such_tool", {"path": "a.py"})], chunk_size=3),
            Reply("Done."),
        ]
    )
    async with llm_agent(tmp_path, fake_llm) as (client, session):
        assert await client.prompt(session, "go") == "end_turn"
    messages = fake_llm.last_request["messages"]
    assistant = messages[-2]
    assert assistant["tool_calls"][0]["function"]["name"] == "no_such_tool"
    tool_result = messages[-1]
    assert tool_result["role"] == "tool"
    assert tool_result["tool_call_id"] == assistant["tool_calls"][0]["id"]
    assert "no tool named" in tool_result["content"]


@pytest.mark.parametrize(
    ("reply", "stop_reason"),
    [
        (Reply("Cut short", finish_reason="length"), "max_tokens"),
        (Reply("", finish_reason="content_filter"), "refusal"),
    ],
)
async def test_finish_reasons_map_to_stop_reasons(
    tmp_path: Path, fake_llm: FakeLLM, reply: Reply, stop_reason: str
) -> None:
    fake_llm.add(reply)
    async with llm_agent(tmp_path, fake_llm) as (client, session):
        assert await client.prompt(session, "go") == stop_reason


async def test_a_refused_prompt_is_left_out_of_the_next_request(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.script([Reply("", finish_reason="content_filter"), Reply("ok")])
    async with llm_agent(tmp_path, fake_llm) as (client, session):
        assert await client.prompt(session, "bad request") == "refusal"
        assert await client.prompt(session, "good request") == "end_turn"
    assert [m["content"] for m in fake_llm.last_request["messages"][1:]] == ["good request"]


async def test_max_turn_requests_stops_a_tool_loop(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.default = lambda body: Reply(tool_calls=[ToolCall("probe", {"n": len(body["messages"])})])
    async with llm_agent(tmp_path, fake_llm, max_turn_requests=3) as (client, session):
        assert await client.prompt(session, "loop forever") == "max_turn_requests"
    assert len(fake_llm.requests) == 3
    assert "max_turn_requests" in client.agent_text(session)


async def test_doom_loop_guard_stops_identical_repeats(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.default = Reply(tool_calls=[ToolCall("probe", {"same": True})])
    async with llm_agent(tmp_path, fake_llm) as (client, session):
        assert await client.prompt(session, "repeat") == "end_turn"
    assert len(fake_llm.requests) == 3
    assert "same `probe` call" in client.agent_text(session)


async def test_retries_429_with_retry_after_and_500(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.script([Fault.status(429, retry_after=0), Fault.status(500, retry_after=0), Reply("Recovered.")])
    async with llm_agent(tmp_path, fake_llm) as (client, session):
        assert await client.prompt(session, "go") == "end_turn"
    assert client.agent_text(session) == "Recovered."
    notes = "".join(u["content"]["text"] for u in client.session_updates(session, "agent_thought_chunk"))
    assert notes.count("Retrying") == 2
    assert len(fake_llm.requests) == 3


async def test_gives_up_with_the_providers_words_and_keeps_the_history(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.script([Fault.status(500, message="upstream exploded", retry_after=0)] * 3 + [Reply("Back.")])
    async with llm_agent(tmp_path, fake_llm, retries=2) as (client, session):
        assert await client.prompt(session, "first") == "end_turn"
        assert "upstream exploded" in client.agent_text(session)
        assert await client.prompt(session, "second") == "end_turn"
    assert [m["content"] for m in fake_llm.last_request["messages"][1:]] == ["first", "second"]


async def test_non_retryable_errors_are_shown_at_once(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.add(Fault.status(400, message="model does not exist"))
    async with llm_agent(tmp_path, fake_llm) as (client, session):
        assert await client.prompt(session, "go") == "end_turn"
    assert "model does not exist" in client.agent_text(session)
    assert len(fake_llm.requests) == 1


async def test_a_cut_before_any_text_is_retried(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.script([Fault.cut(1, Reply("never shown")), Reply("Second try.")])
    async with llm_agent(tmp_path, fake_llm) as (client, session):
        assert await client.prompt(session, "go") == "end_turn"
    assert client.agent_text(session) == "Second try."


async def test_a_cut_after_text_stops_cleanly_without_repeating(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.script([Fault.cut(4, Reply("abcdefghijklmnop", chunk_size=2)), Reply("Next.")])
    async with llm_agent(tmp_path, fake_llm) as (client, session):
        assert await client.prompt(session, "go") == "end_turn"
        text = client.agent_text(session)
        assert text.startswith("abcdef")
        assert text.count("abc") == 1, "nothing already shown is streamed again"
        assert "cut off" in text
        await client.prompt(session, "continue")
    kept = fake_llm.last_request["messages"][2]
    assert kept["role"] == "assistant"
    assert kept["content"].startswith("abcdef")


async def test_a_silent_stream_times_out_and_is_retried(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.script([Fault.stall(30), Reply("Awake.")])
    async with llm_agent(tmp_path, fake_llm, idle_timeout=0.5) as (client, session):
        assert await client.prompt(session, "go") == "end_turn"
    assert client.agent_text(session) == "Awake."


async def test_cancel_mid_stream_keeps_what_was_shown(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.script([Fault.stall(30, after_chunks=3, reply=Reply("partial answer here", chunk_size=4)), Reply("ok")])
    async with llm_agent(tmp_path, fake_llm) as (client, session):
        answers: list[str] = []

        async def prompt() -> None:
            answers.append(await client.prompt(session, "go"))

        async with anyio.create_task_group() as task_group:
            task_group.start_soon(prompt)
            await client.wait_for(lambda: bool(client.agent_text(session)))
            await client.notify("session/cancel", {"sessionId": session})
        assert answers == ["cancelled"]
        await client.prompt(session, "again")
    history = fake_llm.last_request["messages"]
    assert history[2]["role"] == "assistant"
    assert "[interrupted]" in history[2]["content"]


async def test_compaction_near_the_window_is_shown_to_the_user(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.script(
        [
            Reply("Answer one.", usage=(850, 50)),  # 900 of 1000 tokens: over the 80% threshold
            Reply("SUMMARY: the user asked one thing."),  # the compaction request, before the next call
            Reply("Answer two."),
        ]
    )
    async with llm_agent(tmp_path, fake_llm, context_window=1000) as (client, session):
        await client.prompt(session, "one")
        await client.prompt(session, "two")
    summary_request = fake_llm.requests[1]
    assert "tools" not in summary_request
    assert "summary" in summary_request["messages"][0]["content"].lower()
    assert "Answer one." in summary_request["messages"][1]["content"]
    final = fake_llm.last_request["messages"]
    assert "SUMMARY: the user asked one thing." in final[1]["content"]
    assert final[-1] == {"role": "user", "content": "two"}
    assert len(final) == 4, "system, summary, acknowledgement, the new prompt"
    assert "compacted" in client.agent_text(session).lower()


async def test_compaction_uses_compaction_updates_when_the_client_supports_them(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.script([Reply("one", usage=(900, 50)), Reply("SUMMARY"), Reply("two")])
    capabilities = {"fs": {"readTextFile": False, "writeTextFile": False}, "session": {"compaction": {}}}
    async with llm_agent(tmp_path, fake_llm, capabilities=capabilities, context_window=1000) as (client, session):
        for text in ("a", "b"):
            await client.prompt(session, text)
    statuses = [u["status"] for u in client.session_updates(session, "compaction_update")]
    assert statuses == ["in_progress", "completed"]


async def test_context_window_exceeded_compacts_and_retries(tmp_path: Path, fake_llm: FakeLLM) -> None:
    overflow = Fault.status(
        400, message="This model's maximum context length is 1000 tokens", code="context_length_exceeded"
    )
    fake_llm.script([Reply("first"), overflow, Reply("SUMMARY"), Reply("fits now")])
    async with llm_agent(tmp_path, fake_llm) as (client, session):
        await client.prompt(session, "one")
        assert await client.prompt(session, "two") == "end_turn"
    assert client.agent_text(session).endswith("fits now")


async def test_system_prompt_has_git_and_agents_files(tmp_path: Path, fake_llm: FakeLLM) -> None:
    import git

    work = tmp_path / "work"
    (work / "pkg").mkdir(parents=True)
    repo = git.Repo.init(work, initial_branch="feature-x")
    (work / "AGENTS.md").write_text("Root rule: use tabs.")
    (work / "pkg" / "AGENTS.md").write_text("Package rule: no globals.")
    repo.index.add(["AGENTS.md"])
    repo.index.commit("first commit", author=git.Actor("t", "t@example.com"), committer=git.Actor("t", "t@example.com"))
    repo.close()
    fake_llm.add(Reply("ok"))
    async with in_process_agent(AgentRunner, source=make_source(tmp_path, fake_llm)) as client:
        await client.initialize()
        session = await client.new_session(str(work / "pkg"))
        await client.prompt(session, "hi")
    system = fake_llm.last_request["messages"][0]["content"]
    assert "feature-x" in system
    assert "first commit" in system
    assert system.index("Root rule") < system.index("Package rule")


async def test_images_are_sent_to_the_model(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.add(Reply("A red pixel."))
    async with llm_agent(tmp_path, fake_llm) as (client, session):
        prompt = [
            {"type": "text", "text": "What is this?"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///x/a.py", "text": "print(1)"}},
        ]
        await client.request("session/prompt", {"sessionId": session, "prompt": prompt})
    content = fake_llm.last_request["messages"][-1]["content"]
    assert content[1] == {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    assert "print(1)" in content[2]["text"]


async def test_missing_model_or_key_is_auth_required_naming_the_variable(tmp_path: Path, fake_llm: FakeLLM) -> None:
    from coder_agent.agent.settings import ConfigSource
    from coder_agent.config import CliOverrides

    no_model = ConfigSource(environ={}, user_config_path=tmp_path / "none.toml")
    no_key = ConfigSource(
        CliOverrides(model="anthropic/claude-sonnet-4-5"), environ={}, user_config_path=tmp_path / "none.toml"
    )
    for source, expected in ((no_model, "CODER_AGENT_MODEL"), (no_key, "ANTHROPIC_API_KEY")):
        async with in_process_agent(AgentRunner, source=source) as client:
            await client.initialize()
            with pytest.raises(RpcFailure) as failure:
                await client.new_session(str(tmp_path))
            assert failure.value.code == -32000
            assert expected in failure.value.message
            with pytest.raises(RpcFailure):
                await client.request("authenticate", {"methodId": "env-api-key"})


async def test_invalid_config_names_the_file_and_field(tmp_path: Path, fake_llm: FakeLLM) -> None:
    work = tmp_path / "work"
    (work / ".coder-agent").mkdir(parents=True)
    (work / ".coder-agent" / "config.toml").write_text("temperature = 9\n")
    async with in_process_agent(AgentRunner, source=make_source(tmp_path, fake_llm)) as client:
        await client.initialize()
        with pytest.raises(RpcFailure) as failure:
            await client.new_session(str(work))
    assert "config.toml" in failure.value.message
    assert "temperature" in failure.value.message
