"""What a command leaves running with its environment cleared (`setsid env -i daemon &`) ends when the agent is
killed outright (SIGKILL: no shutdown of ours runs), inside the sandbox and outside it in full auto: the agent
spawned as an editor spawns it, a background job started through the fake model server, the daemon found from
outside by an entry it puts back in the environment it cleared."""

from __future__ import annotations

import contextlib
import os
import signal
import uuid
from pathlib import Path

import anyio
import pytest

from coder_agent.sandbox import probe
from tests.support.fake_llm import Call, FakeLLM, Reply
from tests.support.processes import HAS_PROC, carrying, wait_carried
from tests.support.spawn import spawned_agent

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.skipif(not HAS_PROC, reason="found through /proc")]

SANDBOXED = pytest.mark.skipif(not probe.check().available, reason=f"no sandbox here: {probe.check().reason}")
NO_TERMINAL = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}


@pytest.mark.parametrize("mode", [pytest.param("auto", marks=SANDBOXED), "full-auto"])
async def test_a_daemon_with_its_environment_cleared_ends_with_a_killed_agent(
    tmp_path: Path, fake_llm: FakeLLM, mode: str
) -> None:
    work = tmp_path / "project"
    work.mkdir()
    entry = f"LEFTOVER={uuid.uuid4().hex}"
    daemon = f"setsid env -i {entry} sh -c 'sleep 1000' </dev/null >/dev/null 2>&1 &"
    job = Call("run_command", {"command": f"{daemon} exec sleep 600", "background": True})
    fake_llm.script([Reply(calls=[job]), Reply("started")])
    config = tmp_path / "mode.toml"
    config.write_text(f'default_mode = "{mode}"\n')
    try:
        async with spawned_agent(tmp_path, llm=fake_llm, env={"CODER_AGENT_CONFIG": str(config)}) as agent:
            client = agent.client
            await client.initialize(NO_TERMINAL)
            session = await client.new_session(str(work))
            assert await client.prompt(session, "start it", timeout=90) == "end_turn"
            await wait_carried(entry, present=True)
            agent.process.send_signal(signal.SIGKILL)
            with anyio.fail_after(10):
                await agent.process.wait()
        await wait_carried(entry, present=False, timeout=30)
    finally:
        for pid in carrying(entry):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
