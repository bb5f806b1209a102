"""Wake: a background job that ends while no turn runs starts a turn of the session's own when `auto_continue` is
on (exactly one, shown as a turn, `_session/wake` around it for clients that take it), one notice when it is off;
and, over randomized end times among prompts, never two turns at once and never the same end told twice."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import anyio
import pytest

from coder_agent.agent.config_source import ConfigSource
from coder_agent.agent.manager import SessionManager
from coder_agent.agent.model_runner import ModelRunner
from coder_agent.model.scripted import Call, Reply, ScriptedModel
from coder_agent.protocol.content import TextContent
from coder_agent.protocol.schema import CursorUpdate, SessionUpdate, UserMessageChunk
from coder_agent.session.background import JobExit, OutputBuffer
from coder_agent.session.local_bridge import LocalBridge
from tests.support.scripted_agent import scripted_agent, scripted_source

pytestmark = pytest.mark.anyio

CAPABILITIES = {
    "fs": {"readTextFile": False, "writeTextFile": False},
    "terminal": False,
    "session": {"notices": {}, "cursors": {}},
    "_meta": {"wake": True},
}
MARK = "[Sent by coder-agent, not by the user"


def background(command: str) -> Call:
    return Call("run_command", {"command": command, "background": True})


def woken(client: Any, session: str) -> list[str]:
    return [text for _, text in client.messages(session, "user_message_chunk") if text.startswith(MARK)]


def notices(client: Any, session: str) -> list[dict[str, Any]]:
    return client.session_updates(session, "notice")


async def test_a_job_failing_after_the_turn_ended_starts_exactly_one_turn(tmp_path: Path) -> None:
    release = tmp_path / "fail-now"
    model = ScriptedModel(
        [
            Reply(calls=[background(f"while [ ! -e {release} ]; do sleep 0.05; done; echo boom >&2; exit 1")]),
            Reply("Started the build."),
            Reply("The build failed with boom; here is the fix."),
            Reply("Next."),
        ]
    )
    async with scripted_agent(
        tmp_path, model, capabilities=CAPABILITIES, default_mode="full-auto", wake={"auto_continue": True}
    ) as (client, session, _):
        assert await client.prompt(session, "build it in the background") == "end_turn"
        release.touch()  # the job fails now, long after its turn ended
        await client.wait_for(
            lambda: any(n["title"].startswith("coder-agent went on") for n in notices(client, session))
        )
        [message] = woken(client, session)
        assert "job 1" in message and "exited with code 1" in message and "boom" in message
        assert client.agent_messages(session)[-1] == "The build failed with boom; here is the fix."
        wakes = [f["params"] for f in client.frames if f.get("method") == "_session/wake"]
        assert [w["state"] for w in wakes] == ["running", "idle"]
        assert wakes[0]["reason"]["jobs"][0]["exitCode"] == 1 and wakes[1]["stopReason"] == "end_turn"
        user_ids = [m for m, text in client.messages(session, "user_message_chunk") if text.startswith(MARK)]
        assert wakes[0]["messageId"] == user_ids[0]
        assert await client.prompt(session, "and?") == "end_turn"
    assert len(woken(client, session)) == 1, "exactly one turn"
    told = [m["content"] for m in model.last_request.messages if m["role"] == "user"]
    assert sum("exited with code 1" in str(t) for t in told) == 1, "the end is told once"


async def test_with_the_option_off_a_job_ending_is_one_notice_and_nothing_else(tmp_path: Path) -> None:
    release = tmp_path / "go"
    model = ScriptedModel([Reply(calls=[background(f"while [ ! -e {release} ]; do sleep 0.05; done")]), Reply("ok")])
    async with scripted_agent(tmp_path, model, capabilities=CAPABILITIES, default_mode="full-auto") as (
        client,
        session,
        _,
    ):
        assert await client.prompt(session, "start it") == "end_turn"
        seen = len(client.updates)
        release.touch()
        await client.wait_for(lambda: len(client.updates) > seen)
        await client.request("session/set_mode", {"sessionId": session, "modeId": "full-auto"})  # a round trip
        after = [u["update"] for u in client.updates[seen:]]
        assert [u["sessionUpdate"] for u in after] == ["notice"]
        assert not [f for f in client.frames if f.get("method") == "_session/wake"]
        assert woken(client, session) == []


async def test_the_option_is_offered_and_switched_like_any_boolean_option(tmp_path: Path) -> None:
    caps = {**CAPABILITIES, "session": {"configOptions": {"boolean": {}}}}
    async with scripted_agent(tmp_path, ScriptedModel([]), capabilities=caps) as (client, session, _):
        answer = await client.request(
            "session/set_config_option",
            {"sessionId": session, "configId": "auto_continue", "type": "boolean", "value": True},
        )
        [option] = [o for o in answer["configOptions"] if o["id"] == "auto_continue"]
        assert option["currentValue"] is True


class Gate:
    """A background command that ends (exit 1) when the test opens its gate: its end is an event the test controls."""

    terminal_id = None
    input = None

    def __init__(self) -> None:
        self.output = OutputBuffer()
        self.gate = anyio.Event()

    async def run(self) -> JobExit:
        await self.gate.wait()
        self.output.add("failed\n")
        return JobExit(exit_code=1)

    async def refresh(self) -> None:
        return None

    def kill(self) -> None:
        self.gate.set()

    async def release(self) -> None:
        return None


@pytest.mark.parametrize("seed", range(4))
async def test_randomized_job_ends_among_prompts_never_overlap_or_repeat(tmp_path: Path, seed: int) -> None:
    """25 random end times per seed (100 in all), among prompts sent at random moments."""
    rng = random.Random(seed)
    shown: list[SessionUpdate] = []

    async def sink(update: SessionUpdate) -> None:
        shown.append(update)

    model = ScriptedModel([Reply("ok") for _ in range(500)])
    source: ConfigSource = scripted_source(tmp_path, wake={"auto_continue": True, "max_per_hour": 1000})
    (tmp_path / "work").mkdir()
    gates: list[Gate] = []
    async with anyio.create_task_group() as tasks:
        manager = SessionManager(ModelRunner(source, model_factory=lambda _: model), source, None, tasks)
        session = await manager.create(tmp_path / "work", [], [], lambda _: LocalBridge(sink=sink))
        async with anyio.create_task_group() as prompts:
            for step in range(60):
                roll = rng.random()
                if roll < 0.4 and len(gates) < 25:
                    gate = Gate()
                    gates.append(gate)
                    session.services.jobs.add(gate, f"job {len(gates)}")
                elif roll < 0.7:
                    running = [g for g in gates if not g.gate.is_set()]
                    if running:
                        rng.choice(running).gate.set()
                elif roll < 0.85:
                    prompts.start_soon(manager.prompt, session, [TextContent(text=f"prompt {step}")])
                for _ in range(rng.randrange(0, 30)):
                    await anyio.lowlevel.checkpoint()
            for gate in gates:
                gate.gate.set()
        await _settled(session)
        await session.aclose()
        tasks.cancel_scope.cancel()
    positions = [u.anchor.position for u in shown if isinstance(u, CursorUpdate)]
    if len(positions) % 2:  # a turn the close cancelled announces no end
        positions.append("after")
    assert positions == ["before", "after"] * (len(positions) // 2), "never two turns at once"
    assert positions, "turns ran"
    told: list[str] = []
    chunks = [u.content for u in shown if isinstance(u, UserMessageChunk)]
    for text in [c.text for c in chunks if isinstance(c, TextContent) and c.text.startswith(MARK)]:
        told += [line.split("(")[0] for line in text.splitlines() if line.startswith("Background")]
    assert len(told) == len(set(told)), f"a job's end woke the session twice: {told}"
    # Whether an end wakes the session or is told to a turn already running depends on how fast turns run (a loaded
    # machine makes turns longer, so more ends land inside them): how many woke is not asserted here; the tests above
    # show that an end while no turn runs wakes it exactly once.


async def _settled(session: Any) -> None:
    """Until every job ended and no turn runs or waits (woken turns included)."""
    while any(job.running for job in session.services.jobs.all()) or session.turn_running or session.user_waiting:
        await anyio.lowlevel.checkpoint()
    for _ in range(200):  # a wake just scheduled gets its place in line
        await anyio.lowlevel.checkpoint()
    while session.turn_running:
        await anyio.lowlevel.checkpoint()
