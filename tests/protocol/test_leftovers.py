"""What a background job leaves running with its environment cleared (`setsid env -i daemon &`: no process group, no
session, no mark of the agent's) ends when `job_kill` kills the job, and when the session closes: inside the sandbox
(each command has a PID namespace of its own) and outside it in full auto (a subreaper supervisor), locally and in
the editor's terminal. Checked from outside, by an entry the daemon puts back in the environment it cleared, which
the agent knows nothing of. The agent killed outright is `tests/e2e/test_leftovers.py`."""

from __future__ import annotations

import contextlib
import os
import signal
import uuid
from pathlib import Path

import pytest

from coder_agent.model.scripted import Call, Reply, ScriptedModel
from coder_agent.sandbox import probe
from tests.support.processes import HAS_PROC, carrying, wait_carried
from tests.support.scripted_agent import tool_agent

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(not HAS_PROC, reason="the daemon is found through /proc")]

SANDBOXED = pytest.mark.skipif(not probe.check().available, reason=f"no sandbox here: {probe.check().reason}")
MODES = pytest.mark.parametrize("mode", [pytest.param("auto", marks=SANDBOXED), "full-auto"])
WHERE = pytest.mark.parametrize("terminal", [False, True], ids=["local", "terminal"])


def job(entry: str) -> Call:
    daemon = f"setsid env -i {entry} sh -c 'sleep 1000' </dev/null >/dev/null 2>&1 &"
    return Call("run_command", {"command": f"{daemon} exec sleep 600", "background": True})


@MODES
@WHERE
@pytest.mark.parametrize("end", ["job_kill", "session/close"])
async def test_a_daemon_with_its_environment_cleared_ends_with_its_job(
    tmp_path: Path, mode: str, terminal: bool, end: str
) -> None:
    entry = f"LEFTOVER={uuid.uuid4().hex}"
    kill = Reply(calls=[Call("job_kill", {"job_id": 1})])
    model = ScriptedModel([Reply(calls=[job(entry)]), Reply("started"), kill, Reply("killed")])
    async with tool_agent(tmp_path, model, terminal=terminal, mode=mode) as (client, _, session, _):
        try:
            assert await client.prompt(session, "start the job") == "end_turn"
            await wait_carried(entry, present=True)
            if end == "job_kill":
                assert await client.prompt(session, "kill it") == "end_turn"
            else:
                await client.request("session/close", {"sessionId": session})
            await wait_carried(entry, present=False)
        finally:
            _kill_left(entry)


def _kill_left(entry: str) -> None:
    for pid in carrying(entry):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
