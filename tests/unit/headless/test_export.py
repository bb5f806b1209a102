"""`coder-agent export`: a session made by the agent (scripted model, real tools, the fake editor, a store on
disk) written out as ATIF, JSON and Markdown; what the model or a tool wrote cannot break the Markdown; keys
never come out; a wrong id says what to do. (Harbor's own pydantic models check the ATIF in
`integrations/harbor/tests`, where Harbor is installed.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coder_agent.cli import EXPORT_FORMATS, parse_args
from coder_agent.headless.export import FORMATS, main, render
from coder_agent.model.base import Usage
from coder_agent.model.scripted import Call, Reply, ScriptedModel
from coder_agent.store import SessionRecord, SessionStore, utc_now
from tests.support.scripted_agent import tool_agent

pytestmark = pytest.mark.anyio

FENCE_BREAKER = "````\n# Not a heading\n```"


async def made_session(tmp_path: Path, store: SessionStore) -> str:
    model = ScriptedModel(
        [
            Reply(
                "Let me look.",
                thought="The file first.",
                calls=[Call("read_file", {"path": "notes.md"}, id="call_read")],
                usage=Usage(prompt_tokens=100, completion_tokens=10),
                cost=0.002,
            ),
            Reply("Fixing it.", calls=[Call("write_file", {"path": "notes.md", "content": "fixed\n"}, "call_write")]),
            Reply("Done: the notes are fixed."),
        ]
    )
    async with tool_agent(tmp_path, model, store=store) as (client, editor, session, work):
        (work / "notes.md").write_text(f"broken\n{FENCE_BREAKER}\n")
        editor.permission_answers = ["allow_once"]
        assert await client.prompt(session, "fix the notes") == "end_turn"
    return session


async def test_atif_has_the_prompt_each_model_call_and_what_the_tools_gave_back(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "store")
    session = await made_session(tmp_path, store)
    atif = json.loads(render(store.load(session), "atif"))

    assert atif["schema_version"] == "ATIF-v1.7"
    assert atif["session_id"] == session
    assert atif["agent"]["name"] == "coder-agent"
    assert atif["agent"]["model_name"] == "scripted/model"
    steps = atif["steps"]
    assert [step["step_id"] for step in steps] == list(range(1, len(steps) + 1))
    assert [step["source"] for step in steps] == ["system", "user", "agent", "agent", "agent"]
    assert steps[1]["message"] == "fix the notes"
    read, write, answer = steps[2:]
    assert read["message"] == "Let me look."
    assert "reasoning_content" not in read  # shown to the person (the Markdown has it), not kept for the model
    assert read["tool_calls"] == [
        {"tool_call_id": "call_read", "function_name": "read_file", "arguments": {"path": "notes.md"}}
    ]
    (result,) = read["observation"]["results"]
    assert result["source_call_id"] == "call_read"
    assert "broken" in result["content"]
    assert write["tool_calls"][0]["arguments"] == {"path": "notes.md", "content": "fixed\n"}
    assert write["observation"]["results"][0]["source_call_id"] == "call_write"
    assert answer["message"] == "Done: the notes are fixed."
    assert "tool_calls" not in answer and "observation" not in answer
    assert all(step["llm_call_count"] == 1 for step in steps[2:])
    assert atif["final_metrics"]["total_steps"] == 5
    assert atif["final_metrics"]["total_cost_usd"] == pytest.approx(0.002)
    assert atif["final_metrics"]["total_prompt_tokens"] == 100  # the session's tokens, kept with it
    assert atif["final_metrics"]["total_completion_tokens"] == 10
    assert "notes" not in atif  # never compacted


async def test_markdown_shows_the_conversation_and_no_fence_can_be_broken(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "store")
    session = await made_session(tmp_path, store)
    text = render(store.load(session), "markdown")

    assert text.startswith("# fix the notes\n")
    assert f"- **Session:** `{session}`" in text
    assert "## You\n\nfix the notes\n\n## Agent\n\n> The file first.\n" in text  # thinking is the agent's
    assert "### ✓ Write notes.md" in text
    assert "-broken\n" in text and "+fixed" in text  # the diff of the edit
    assert text.rstrip().endswith("Done: the notes are fixed.")
    lines = text.splitlines()
    assert "-# Not a heading" in lines  # the file's old text, in the diff...
    inside = lines.index("-# Not a heading")
    opening = next(line for line in reversed(lines[:inside]) if line.startswith("```"))
    assert opening.startswith("`````")  # ...inside a fence longer than any run of backticks in it


async def test_json_is_the_stored_record_without_the_undo_data(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "store")
    session = await made_session(tmp_path, store)
    data = json.loads(render(store.load(session), "json"))
    assert data["session_id"] == session
    assert "checkpoints" not in data
    assert [m["role"] for m in data["messages"]][:2] == ["system", "user"]
    assert data["events"]


def test_keys_in_the_environment_never_come_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-test-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    now = utc_now()
    record = SessionRecord(
        session_id="s1",
        cwd=str(tmp_path),
        created_at=now,
        updated_at=now,
        title=f"uses {key}",
        messages=[
            {"role": "user", "content": f"my key is {key}"},
            {"role": "assistant", "content": "", "tool_calls": [_call("c1", "run_command", {"command": key})]},
            {"role": "tool", "tool_call_id": "c1", "content": key},
        ],
        events=[{"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": key}}],
    )
    for fmt in FORMATS:
        text = render(record, fmt)
        assert key not in text, fmt
        assert "[redacted OPENAI_API_KEY]" in text, fmt


def test_a_damaged_history_still_makes_a_valid_trajectory(tmp_path: Path) -> None:
    now = utc_now()
    record = SessionRecord(
        session_id="s2",
        cwd=str(tmp_path),
        created_at=now,
        updated_at=now,
        messages=[
            {"role": "tool", "tool_call_id": "orphan", "content": "a result with no call"},
            {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {}}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [_call("c1", "grep", "{not json")],
                "thinking_blocks": [{"type": "thinking", "thinking": "Search first.", "signature": "x"}],
            },
            {"role": "tool", "tool_call_id": "other", "content": [{"type": "text", "text": "misfiled"}]},
        ],
        events=[{"sessionUpdate": "compaction_update", "compactionId": "k", "status": "completed"}],
    )
    atif = json.loads(render(record, "atif"))
    first, user, agent = atif["steps"]
    assert first == {"source": "user", "message": "a result with no call", "step_id": 1}
    assert user["message"] == "look\n[image]"
    assert agent["tool_calls"][0]["arguments"] == {"raw": "{not json"}
    assert agent["reasoning_content"] == "Search first."
    assert agent["observation"]["results"] == [{"content": "misfiled", "extra": {"tool_call_id": "other"}}]
    assert "compacted 1 time" in atif["notes"]

    empty = SessionRecord(session_id="s3", cwd=str(tmp_path), created_at=now, updated_at=now, title="never ran")
    assert json.loads(render(empty, "atif"))["steps"] == [{"source": "user", "message": "never ran", "step_id": 1}]


async def test_main_finds_a_session_by_the_start_of_its_id_and_writes_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = SessionStore(tmp_path / "store")
    session = await made_session(tmp_path, store)
    out = tmp_path / "out" / "trajectory.json"
    out.parent.mkdir()
    assert main(session[:12], "atif", out, store=store) == 0
    assert json.loads(out.read_text())["session_id"] == session
    assert out.stat().st_mode & 0o777 == 0o600, "what the session read stays the owner's"
    out.chmod(0o644)
    assert main(session, "atif", out, store=store) == 0
    assert out.stat().st_mode & 0o777 == 0o600, "an export over an older one makes it private too"

    assert main(session, "markdown", None, store=store) == 0
    assert capsys.readouterr().out.startswith("# fix the notes")

    assert main("nope", "json", None, store=store) == 1
    assert "No session 'nope'" in capsys.readouterr().err
    assert main(session, "json", tmp_path / "missing" / "x.json", store=store) == 1
    assert "cannot write" in capsys.readouterr().err


def test_the_command_line_takes_the_formats_the_exporter_knows() -> None:
    assert sorted(EXPORT_FORMATS) == sorted(FORMATS)
    args = parse_args(["export", "abc", "--format", "atif", "-o", "t.json"])
    assert (args.command, args.session, args.export_format, args.output) == ("export", "abc", "atif", Path("t.json"))
    assert parse_args(["export", "abc"]).export_format == "markdown"


def _call(call_id: str, name: str, arguments: object) -> dict[str, object]:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": raw}}


def test_markdown_shows_plans_compactions_links_and_images(tmp_path: Path) -> None:
    now = utc_now()
    record = SessionRecord(
        session_id="s4",
        cwd=str(tmp_path),
        created_at=now,
        updated_at=now,
        cost=0.25,
        events=[
            {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "see"}},
            {"sessionUpdate": "user_message_chunk", "content": {"type": "image", "data": "", "mimeType": "image/png"}},
            {"sessionUpdate": "user_message_chunk", "content": {"type": "resource_link", "name": "a.py", "uri": "x"}},
            {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "one\n\ntwo"}},
            {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Plan made."}},
            {
                "sessionUpdate": "plan",
                "entries": [
                    {"content": "read", "priority": "high", "status": "completed"},
                    {"content": "write", "priority": "low", "status": "pending"},
                ],
            },
            {"sessionUpdate": "compaction_update", "compactionId": "k", "status": "completed"},
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "t",
                "title": "Edit `odd`.py",
                "kind": "edit",
                "status": "failed",
                "rawInput": {"path": "`odd`.py"},
                "content": [
                    {"type": "diff", "path": "`odd`.py", "oldText": None, "newText": "new\n"},
                    {"type": "content", "content": {"type": "text", "text": "it failed"}},
                ],
            },
        ],
    )
    text = render(record, "markdown")
    assert "- **Cost:** $0.2500" in text
    assert "[image]" in text and "[a.py]" in text
    assert "> one\n>\n> two" in text
    assert "- [x] read\n- [ ] write" in text
    assert "_The conversation was compacted (completed)._" in text
    assert "### ✗ Edit `odd`.py" in text
    assert "`` `odd`.py ``" in text
    assert "+new" in text and "it failed" in text


def test_markdown_shows_a_sub_agent_once_output_fenced_once_and_the_mode_the_session_worked_in(
    tmp_path: Path,
) -> None:
    now = utc_now()
    environment = {"Permission mode": "Auto (sandboxed) (Edits in the workspace …)"}
    record = SessionRecord(
        session_id="s5",
        cwd=str(tmp_path),
        created_at=now,
        updated_at=now,
        mode="default",
        messages=[{"role": "system", "content": "You are…", "environment": environment}],
        events=[
            {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "look"}},
            {"sessionUpdate": "subagent_update", "subagentSessionId": "child", "state": "running"},
            {"sessionUpdate": "agent_message_chunk", "_sessionId": "child", "content": {"type": "text", "text": "A1"}},
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "t",
                "title": "Explore: look",
                "kind": "think",
                "status": "completed",
                "content": [{"type": "content", "content": {"type": "text", "text": "A1"}}],
            },
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "c",
                "title": "ls nothere",
                "kind": "execute",
                "status": "failed",
                "content": [{"type": "content", "content": {"type": "text", "text": "```\nls: nothere\n\n```"}}],
            },
        ],
    )
    text = render(record, "markdown")
    assert text.count("A1") == 1, "the sub-agent's answer is its task call's, once"
    assert "```\nls: nothere\n```" in text and "````" not in text, text
    assert "- **Mode:** auto (its last prompt's; the session's own: default)" in text
    assert json.loads(render(record, "atif"))["agent"]["extra"]["mode"] == "auto"
