"""Every "no one can be asked" path of `coder-agent run` ends the same way: no traceback, the model told what
happened (and no further request spent), exit status 3, and advice that works when followed — here, for a command
that must leave the sandbox, `--mode full-auto` (no rule lets a command out, and the run's own mode would ask
again)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coder_agent.sandbox import probe
from coder_agent.tools.calls import LEAVING_NEEDS_PERMISSION
from tests.support.fake_llm import Call, FakeLLM, Reply
from tests.support.headless import run_here
from tests.support.spawn import stored_session

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.e2e,
    pytest.mark.skipif(not probe.check().available, reason=f"no sandbox here: {probe.check().reason}"),
]


def _write(path: Path, text: str) -> str:
    """A command that writes `path` where the policy cannot see it (only the walls stop it)."""
    return f"python3 -c \"open('{path}', 'w').write('{text}')\""


async def test_a_command_that_hit_the_walls_stops_the_run_with_advice_that_works(
    tmp_path: Path, work: Path, fake_llm: FakeLLM
) -> None:
    outside = tmp_path / "outside.txt"
    fake_llm.script([Reply.tool("run_command", {"command": _write(outside, "yes")})])
    args = ["--cwd", str(work), "--mode", "auto", "--output-format", "json", "write it"]
    ran = await run_here(tmp_path, *args, llm=fake_llm)

    assert ran.code == 3, ran.stderr
    assert "Traceback" not in ran.stderr and "failed unexpectedly" not in ran.stderr
    assert len(fake_llm.requests) == 1, "the turn stopped at the call: no request to hear of an empty failure"
    result = ran.json()
    [refused] = result["refused"]
    assert refused["leaves_sandbox"] is True and refused["answered_by"] == "nobody"
    advice = f"`coder-agent run --resume {result['session_id']} --mode full-auto`"
    assert advice in result["error"] and "--mode auto" not in result["error"], result["error"]
    told = json.loads(stored_session(tmp_path, result["session_id"]))["messages"][-1]
    assert told["role"] == "tool" and told["content"].startswith(LEAVING_NEEDS_PERMISSION)
    assert "Read-only file system" in told["content"] or "Permission denied" in told["content"], told["content"]
    assert not outside.exists()

    fake_llm.script([Reply("Written.")])  # the advice, followed: the call runs again, outside, and the model goes on
    again = await run_here(
        tmp_path, "--cwd", str(work), "--resume", result["session_id"], "--mode", "full-auto", llm=fake_llm
    )
    assert again.code == 0, again.stderr
    assert outside.read_text() == "yes"
    assert again.stdout == "Written.\n"
    [answered] = [m["content"] for m in fake_llm.last_request["messages"] if m["role"] == "tool"]
    assert not answered.startswith(LEAVING_NEEDS_PERMISSION) and "Exit code: 0" in answered


async def test_a_request_to_leave_the_sandbox_stops_the_run_naming_full_auto(
    tmp_path: Path, work: Path, fake_llm: FakeLLM
) -> None:
    call = Call("run_command", {"command": "true", "outside_sandbox": True, "justification": "deploy"})
    fake_llm.script([Reply(calls=[call])])
    ran = await run_here(tmp_path, "--cwd", str(work), "--mode", "auto", "deploy it", llm=fake_llm)
    assert ran.code == 3, ran.stderr
    assert "needs to run outside the sandbox" in ran.stderr and "--mode full-auto`" in ran.stderr
    assert "add an exact rule" not in ran.stderr, "no rule lets a command out of the sandbox"
    assert "Traceback" not in ran.stderr
