"""The programs the agent starts itself, outside the walls, are never taken from a PATH entry a command may write.

The user put the project's `node_modules/.bin` first on PATH (as direnv or an activated environment does), and the
agent's own environment holds no `rg` (installed without the `ripgrep` wheel). A sandboxed command in `auto` mode
plants an `rg` there; the agent's next `grep` would run it outside the walls, with the user's rights. The agent is
spawned as an editor would start it, with its environment outside the workspace (`environment_inside` of another
folder), and the plant must not run. (The shell of a command let out of the walls:
`tests/protocol/test_own_processes.py`; git: `tests/unit/test_own_git.py`.)
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from coder_agent.sandbox import probe
from tests.e2e.test_own_installation import environment_inside, run_from
from tests.support.fake_llm import FakeLLM, Reply

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.e2e,
    pytest.mark.skipif(not probe.check().available, reason=f"no sandbox here: {probe.check().reason}"),
]


@pytest.mark.parametrize("tool", ["grep", "glob"])
async def test_an_rg_planted_on_path_in_the_workspace_never_runs_for_the_search_tools(
    tmp_path: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch, tool: str
) -> None:
    work = tmp_path / "project"
    planted_bin = work / "node_modules" / ".bin"
    planted_bin.mkdir(parents=True)
    (work / "notes.txt").write_text("anything\n")
    python = environment_inside(tmp_path / "agent")  # the agent's own environment: outside the workspace, no rg
    assert not (python.parent / "rg").exists()
    monkeypatch.setenv("PATH", f"{planted_bin}{os.pathsep}{os.environ['PATH']}")
    trap = tmp_path / "trap-ran"
    plant = f"printf '#!/bin/sh\\nenv > {trap}\\n' > node_modules/.bin/rg && chmod +x node_modules/.bin/rg"
    search = Reply.tool("grep", {"pattern": "anything"}) if tool == "grep" else Reply.tool("glob", {"pattern": "*"})
    fake_llm.script([Reply.tool("run_command", {"command": plant}), Reply("planted")])
    ran = await run_from(python, tmp_path, work, fake_llm)
    assert (planted_bin / "rg").exists(), ran.stderr.decode()[-2000:]  # the plant took (inside the walls)
    await anyio.run_process(["rg", "--version"], check=False)  # live: a plain lookup on this PATH runs it
    assert trap.exists(), "the planted rg is not what PATH finds"
    trap.unlink()
    fake_llm.script([search, Reply("done")])
    ran = await run_from(python, tmp_path, work, fake_llm)
    assert not trap.exists(), trap.read_text()[:300]
    assert "notes.txt" in str(fake_llm.last_request["messages"][-1]), ran.stderr.decode()[-2000:]
