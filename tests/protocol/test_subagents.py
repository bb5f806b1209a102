"""Sub-agents in-process: `task` calls run as child agents side by side, shown inside the parent's call for every
client and as ACP sub-agent sessions for clients that advertise `subagents` (checked against the RFD's rules by the
conformance checker: announced first, a terminal state after their last update and before the prompt's answer)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from coder_agent.model.base import ModelError, Usage
from coder_agent.model.scripted import Call, Reply, Request, ScriptedModel
from tests.support.acp_client import FakeClient
from tests.support.processes import wait_gone
from tests.support.scripted_agent import scripted_agent

pytestmark = pytest.mark.anyio

NO_FS = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
SHOWN = {**NO_FS, "subagents": {}}


def task(description: str, prompt: str, kind: str = "explore") -> Call:
    return Call("task", {"description": description, "prompt": prompt, "kind": kind})


def child_of(request: Request) -> str | None:
    """The task prompt of a sub-agent's request (None for the parent's)."""
    system = request.messages[0]["content"]
    if not system.startswith("You are ") or "a sub-agent of coder-agent" not in system:
        return None
    return str(request.messages[1]["content"])


def results(request: Request) -> list[str]:
    return [m["content"] for m in request.messages if m["role"] == "tool"]


class Script:
    """The scripted model for a parent and its children: each child answers by its task's text."""

    def __init__(self, parent: list[Reply], children: dict[str, list[Any]]) -> None:
        self.parent = parent
        self.children = {prompt: list(replies) for prompt, replies in children.items()}
        self.requests: list[Request] = []
        self.model = ScriptedModel(default=self)

    def __call__(self, request: Request) -> Reply | ModelError:
        self.requests.append(request)
        prompt = child_of(request)
        replies = self.parent if prompt is None else self.children[prompt]
        answer = replies.pop(0) if len(replies) > 1 else replies[0]
        return answer(request) if callable(answer) else answer

    def of(self, prompt: str | None) -> list[Request]:
        return [r for r in self.requests if child_of(r) == prompt]


def announced(client: FakeClient, session: str) -> list[dict[str, Any]]:
    return [u for u in client.session_updates(session, "subagent_update") if "name" in u]


def states(client: FakeClient, session: str) -> dict[str, str]:
    found = {}
    for update in client.session_updates(session, "subagent_update"):
        if "state" in update:
            found[update["subagentSessionId"]] = update["state"]
    return found


async def test_three_explore_children_run_side_by_side_and_their_answers_come_back(tmp_path: Path) -> None:
    all_started = anyio.Event()
    started: set[str] = set()

    def first(name: str) -> Any:
        def reply(request: Request) -> Reply:
            started.add(name)
            if len(started) == 3:
                all_started.set()
            return Reply(calls=[Call("glob", {"pattern": f"{name}*"})], hold=all_started, hold_after=0)

        return reply

    usage = Usage(prompt_tokens=1000, completion_tokens=50)
    children = {
        name: [first(name), Reply(f"{name} lives in src/{name}.py:3", usage=usage, cost=0.01)]
        for name in ("alpha", "beta", "gamma")
    }
    parent = [
        Reply(calls=[task(f"Find {n}", n) for n in ("alpha", "beta", "gamma")]),
        Reply("All three found."),
    ]
    script = Script(parent, children)
    async with scripted_agent(tmp_path, script.model, capabilities=SHOWN) as (client, session, _):
        assert await client.prompt(session, "find them") == "end_turn"
    answers = results(script.requests[-1])
    assert answers == [f"{n} lives in src/{n}.py:3" for n in ("alpha", "beta", "gamma")]
    children_shown = announced(client, session)
    assert [c["name"] for c in children_shown] == ["explore-1", "explore-2", "explore-3"]
    assert [c["task"] for c in children_shown] == ["Find alpha", "Find beta", "Find gamma"]
    assert all(c["capabilities"] == {"cancel": True} for c in children_shown)
    assert set(states(client, session).values()) == {"completed"}
    child = children_shown[0]["subagentSessionId"]
    steps = client.session_updates(child, "tool_call")
    assert steps and steps[0]["kind"] == "search"
    tools = [t["function"]["name"] for t in script.of("alpha")[0].tools]
    assert sorted(tools) == ["diagnostics", "fetch", "glob", "grep", "read_file", "update_plan"]
    calls = {u["toolCallId"]: u for u in client.session_updates(session, "tool_call")}
    assert [c["title"] for c in calls.values()] == ["Explore: Find alpha", "Explore: Find beta", "Explore: Find gamma"]
    final = [u for u in client.session_updates(session, "tool_call_update") if u.get("status") == "completed"]
    shown = json.dumps(final)
    assert "explore-1" in shown and "2 model requests" in shown and "$0.0100" in shown
    usage_updates = client.session_updates(session, "usage_update")
    assert usage_updates[-1]["cost"]["amount"] == pytest.approx(0.03), "the children's cost is the session's"


async def test_without_the_capability_children_show_only_in_the_parents_call(tmp_path: Path) -> None:
    children = {"look": [Reply(calls=[Call("glob", {"pattern": "*.py"})]), Reply("nothing there")]}
    script = Script([Reply(calls=[task("Look around", "look")]), Reply("ok")], children)
    async with scripted_agent(tmp_path, script.model, capabilities=NO_FS) as (client, session, _):
        assert await client.prompt(session, "look") == "end_turn"
    assert client.session_updates(session, "subagent_update") == []
    assert {u["sessionId"] for u in client.updates} == {session}
    progress = [u for u in client.session_updates(session, "tool_call_update") if u.get("content")]
    texts = [c["content"]["text"] for u in progress for c in u["content"]]
    assert any(t == "**explore-1** · Look around\n- ▸ Find `*.py`" for t in texts), "its steps as they happen"
    assert any(t.startswith("**explore-1** · Look around\n- ✓ Find `*.py`\n2 model requests") for t in texts)
    assert results(script.requests[-1]) == ["nothing there"]


async def test_one_child_is_cancelled_alone_and_the_others_finish(tmp_path: Path) -> None:
    never = anyio.Event()
    children = {
        "stuck": [Reply("still looking", hold=never, hold_after=0)],
        "quick-1": [Reply("one")],
        "quick-2": [Reply("two")],
    }
    parent = [Reply(calls=[task("Stuck", "stuck"), task("One", "quick-1"), task("Two", "quick-2")]), Reply("done")]
    script = Script(parent, children)
    agent = scripted_agent(tmp_path, script.model, capabilities=SHOWN)
    async with agent as (client, session, _), anyio.create_task_group() as group:

        async def prompt() -> None:
            assert await client.prompt(session, "go") == "end_turn"

        group.start_soon(prompt)
        await client.wait_for(lambda: len(states(client, session)) == 2)
        stuck = next(c["subagentSessionId"] for c in announced(client, session) if c["task"] == "Stuck")
        await client.notify("session/cancel", {"sessionId": stuck})
    others = [c["subagentSessionId"] for c in announced(client, session) if c["subagentSessionId"] != stuck]
    assert states(client, session) == {stuck: "cancelled", **{other: "completed" for other in others}}
    first, one, two = results(script.requests[-1])
    assert first == "The user stopped this sub-agent before it finished."
    assert (one, two) == ("one", "two")


async def test_cancelling_the_turn_cancels_every_child_before_the_answer(tmp_path: Path) -> None:
    never, both_asked = anyio.Event(), anyio.Event()

    def stuck(request: Request) -> Reply:
        if len(script.requests) == 3:
            both_asked.set()
        return Reply("…", hold=never, hold_after=0)

    script = Script([Reply(calls=[task("A", "a"), task("B", "b")])], {name: [stuck] for name in ("a", "b")})
    agent = scripted_agent(tmp_path, script.model, capabilities=SHOWN)
    async with agent as (client, session, _), anyio.create_task_group() as group:

        async def prompt() -> None:
            assert await client.prompt(session, "go") == "cancelled"

        group.start_soon(prompt)
        with anyio.fail_after(30):
            await both_asked.wait()
        await client.notify("session/cancel", {"sessionId": session})
    assert sorted(states(client, session).values()) == ["cancelled", "cancelled"]


async def test_a_child_that_hangs_runs_out_of_time(tmp_path: Path) -> None:
    # The hanging child is alone under the short deadline: nothing else has to finish before it (under load a
    # sibling sharing the deadline could run out of time too).
    never = anyio.Event()
    script = Script(
        [Reply(calls=[task("Hang", "hang")]), Reply("ok")], {"hang": [Reply("…", hold=never, hold_after=0)]}
    )
    subagents = {"timeout": 1.0}
    async with scripted_agent(tmp_path, script.model, capabilities=SHOWN, subagents=subagents) as (client, session, _):
        assert await client.prompt(session, "go") == "end_turn"
    (hung,) = results(script.requests[-1])
    assert "did not finish within its time limit (1 s, subagents.timeout)" in hung
    assert list(states(client, session).values()) == ["failed"]


async def test_a_child_whose_model_fails_says_so_and_children_that_loop_are_stopped(tmp_path: Path) -> None:
    children = {
        "broken": [ModelError("the provider is down")],
        "loop": [lambda request: Reply(calls=[Call("glob", {"pattern": f"*{len(request.messages)}"})])],
        "same": [Reply(calls=[Call("glob", {"pattern": "*"})])],
    }
    tasks = [task("Broken", "broken"), task("Loop", "loop"), task("Same", "same")]
    script = Script([Reply(calls=tasks), Reply("ok")], children)
    subagents = {"max_steps": 3}  # the default deadline (minutes): these end by their own rules, never by the clock
    async with scripted_agent(tmp_path, script.model, capabilities=SHOWN, subagents=subagents) as (client, session, _):
        assert await client.prompt(session, "go") == "end_turn"
    broken, looped, repeated = results(script.requests[-1])
    assert "The sub-agent's model failed" in broken and "the provider is down" in broken
    assert "used its 3 model requests (subagents.max_steps)" in looped
    assert "kept making the same call with the same result" in repeated
    assert sorted(states(client, session).values()) == ["failed"] * 3
    assert len(script.of("loop")) == 3


async def test_a_general_childs_permission_questions_are_tied_to_it(tmp_path: Path) -> None:
    children = {"run it": [Reply(calls=[Call("run_command", {"command": "echo hi"})]), Reply("it printed hi")]}
    for capabilities in (SHOWN, NO_FS):
        script = Script([Reply(calls=[task("Run", "run it", "general")]), Reply("ok")], dict(children))
        async with scripted_agent(tmp_path, script.model, capabilities=capabilities, editor=True) as (
            client,
            session,
            editor,
        ):
            assert editor is not None
            assert await client.prompt(session, "go") == "end_turn"
        asked = editor.permission_requests[0]
        if capabilities is SHOWN:
            child = announced(client, session)[0]["subagentSessionId"]
            assert asked["sessionId"] == child and asked["toolCall"]["title"] == "echo hi"
        else:
            assert asked["sessionId"] == session and asked["toolCall"]["title"] == "general-1: echo hi"
        assert results(script.requests[-1]) == ["it printed hi"]
        tools = {t["function"]["name"] for t in script.of("run it")[0].tools}
        assert "run_command" in tools and not tools & {"task", "ask_user", "propose_plan"}


async def test_a_child_cannot_start_a_child_and_plan_mode_runs_only_explore_tasks(tmp_path: Path) -> None:
    children = {"nest": [Reply(calls=[task("Deeper", "deeper")]), Reply("could not nest")]}
    parent = [Reply(calls=[task("Nest", "nest"), task("Change", "change it", "general")]), Reply("ok")]
    script = Script(parent, children)
    async with scripted_agent(tmp_path, script.model, capabilities=SHOWN, default_mode="plan") as (client, session, _):
        assert await client.prompt(session, "go") == "end_turn"
    nested, general = results(script.requests[-1])
    assert nested == "could not nest"
    assert "no tool named 'task'" in results(script.of("nest")[-1])[0]
    assert "only `explore` tasks run" in general


async def test_a_reloaded_session_replays_its_children_to_clients_that_show_them(tmp_path: Path) -> None:
    from coder_agent.store import SessionStore

    store = SessionStore(tmp_path / "store")
    children = {"look": [Reply(calls=[Call("glob", {"pattern": "*.md"})]), Reply("found README.md")]}
    script = Script([Reply(calls=[task("Look", "look")]), Reply("ok")], children)
    async with scripted_agent(tmp_path, script.model, capabilities=SHOWN, store=store) as (client, session, _):
        assert await client.prompt(session, "go") == "end_turn"
        child = announced(client, session)[0]["subagentSessionId"]
        live = client.session_updates(child)
    for capabilities, shows in ((SHOWN, True), (NO_FS, False)):
        reopened = scripted_agent(tmp_path, script.model, capabilities=capabilities, store=store, open_session=False)
        async with reopened as (again, _, _):
            await again.request("session/load", {"sessionId": session, "cwd": str(tmp_path / "work"), "mcpServers": []})
            if shows:
                replayed = again.session_updates(child)
                assert [u["sessionUpdate"] for u in replayed] == ["tool_call", "agent_message_chunk"]
                assert replayed[0]["status"] == "completed" and replayed[1]["content"]["text"] == "found README.md"
                assert any(u["sessionUpdate"] == "tool_call" for u in live)
                assert states(again, session) == {child: "completed"}
            else:
                assert again.session_updates(child) == [] and again.session_updates(session, "subagent_update") == []


async def test_one_at_a_time_and_a_model_without_credentials(tmp_path: Path) -> None:
    children = {"first": [Reply("one")], "second": [Reply("two")]}
    parent = [Reply(calls=[task("First", "first"), task("Second", "second")]), Reply("ok")]
    script = Script(parent, children)
    async with scripted_agent(tmp_path, script.model, capabilities=NO_FS, subagents={"parallel": 1}) as (
        client,
        session,
        _,
    ):
        assert await client.prompt(session, "go") == "end_turn"
        shown = json.dumps(client.session_updates(session, "tool_call_update"))
        assert "waiting: 1 sub-agents run at once" in shown
    assert results(script.requests[-1]) == ["one", "two"]
    script = Script([Reply(calls=[task("Cheap", "cheap")]), Reply("ok")], {})
    cheap = {"explore_model": "openai/gpt-4o-mini"}
    async with scripted_agent(tmp_path, script.model, capabilities=SHOWN, subagents=cheap) as (client, session, _):
        assert await client.prompt(session, "go") == "end_turn"
        assert client.session_updates(session, "subagent_update") == [], "a child that cannot start is not announced"
    assert results(script.requests[-1])[0].startswith(
        "The sub-agent could not start: No API key for openai/gpt-4o-mini"
    )


async def test_a_general_child_works_through_the_parents_editor_and_its_jobs_end_with_it(tmp_path: Path) -> None:
    children = {
        "change": [
            Reply(calls=[Call("read_file", {"path": "notes.txt"})]),
            Reply(calls=[Call("write_file", {"path": "notes.txt", "content": "changed\n"})]),
            Reply(calls=[Call("run_command", {"command": "cat notes.txt"})]),
            Reply(calls=[Call("run_command", {"command": 'echo "pid=$$"; exec sleep 60', "background": True})]),
            Reply("Changed notes.txt; cat shows it."),
        ]
    }
    script = Script([Reply(calls=[task("Change notes", "change", "general")]), Reply("ok")], children)
    capabilities = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": False}
    async with scripted_agent(
        tmp_path, script.model, capabilities=capabilities, editor=True, default_mode="full-auto"
    ) as (client, session, editor):
        assert editor is not None
        (tmp_path / "work" / "notes.txt").write_text("original\n")
        assert await client.prompt(session, "go") == "end_turn"
    assert editor.writes == [(str(tmp_path / "work" / "notes.txt"), "changed\n")]
    assert results(script.requests[-1]) == ["Changed notes.txt; cat shows it."]
    child_results = results(script.of("change")[-1])
    assert "changed" in child_results[2]
    pid = int(re.findall(r"pid=(\d+)", child_results[3])[0])
    await wait_gone(pid)  # the child's job ended when the child did


async def test_a_childs_question_cancelled_by_the_client_ends_it_as_cancelled(tmp_path: Path) -> None:
    children = {"ask": [Reply(calls=[Call("run_command", {"command": "echo hi"})]), Reply("never")]}
    script = Script([Reply(calls=[task("Ask", "ask", "general")]), Reply("ok")], children)
    async with scripted_agent(tmp_path, script.model, capabilities=NO_FS, editor=True) as (client, session, editor):
        assert editor is not None
        editor.permission_answers = ["cancelled"]
        assert await client.prompt(session, "go") == "end_turn"
    assert results(script.requests[-1]) == ["The sub-agent stopped: a question it asked was cancelled."]


async def test_every_sub_agent_frame_carries_both_shapes_live_and_replayed_from_an_older_log(tmp_path: Path) -> None:
    """The RFD's fields and the SDK draft's (`sessionId`, `title`, `description`): a client built on either reads
    the frame (the conformance checker validates each against both); a log stored with the RFD's alone is replayed
    in both."""
    from coder_agent.store import SessionStore

    store = SessionStore(tmp_path / "store")
    script = Script([Reply(calls=[task("Look around", "look")]), Reply("ok")], {"look": [Reply("found it")]})
    async with scripted_agent(tmp_path, script.model, capabilities=SHOWN, store=store) as (client, session, _):
        assert await client.prompt(session, "go") == "end_turn"
    frames = client.session_updates(session, "subagent_update")
    first, last = frames[0], frames[-1]
    assert first["sessionId"] == first["subagentSessionId"]
    assert (first["title"], first["description"]) == (first["name"], first["task"])
    assert first["title"] == "explore-1" and first["description"]
    assert last["sessionId"] == last["subagentSessionId"] and last["state"] == "completed"

    record = store.load(session)
    for event in record.events:  # as a version before the SDK's names stored it
        if event["sessionUpdate"] == "subagent_update":
            for key in ("sessionId", "title", "description"):
                event.pop(key, None)
    store.save(record)
    async with scripted_agent(tmp_path, script.model, capabilities=SHOWN, store=store, open_session=False) as (
        again,
        _,
        _,
    ):
        await again.request("session/load", {"sessionId": session, "cwd": str(tmp_path / "work"), "mcpServers": []})
    replayed = again.session_updates(session, "subagent_update")
    assert [u["sessionId"] for u in replayed] == [u["subagentSessionId"] for u in replayed]
    assert replayed[0]["title"] == first["title"]
