"""`coder-agent run` with no one to ask and an isolated sub-agent: its merge is applied where the mode lets its edits
through unasked, and discarded where the mode would ask; either way no worktree or branch is left."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.fake_llm import FakeLLM, Reply
from tests.support.headless import run_here

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


def repository(work: Path) -> None:
    work.mkdir()
    (work / "a.txt").write_text("one\n")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=d", "-c", "user.email=d@d", "commit", "-qm", "s"]):
        subprocess.run(["git", *args], cwd=work, check=True, capture_output=True)


def script(fake_llm: FakeLLM, command: str) -> None:
    task = {"description": "Add a file", "prompt": "add b.txt", "kind": "general", "isolate": True}
    fake_llm.script(
        [
            Reply.tool("task", task),
            Reply.tool("run_command", {"command": command}),
            Reply("Added b.txt."),
            Reply("Done."),
        ]
    )


def left(work: Path) -> str:
    return (
        subprocess.run(["git", "worktree", "list"], cwd=work, check=True, capture_output=True, text=True).stdout
        + subprocess.run(["git", "branch", "--list", "coder-agent/*"], cwd=work, capture_output=True, text=True).stdout
    )


@pytest.mark.parametrize("mode", ["full-auto", "default"])
async def test_a_run_applies_a_merge_only_where_the_mode_would_not_ask(
    tmp_path: Path, fake_llm: FakeLLM, mode: str
) -> None:
    work = tmp_path / "project"
    repository(work)
    command = "printf 'bee\\n' > b.txt"
    script(fake_llm, command)
    args = ["--cwd", str(work), "--mode", mode, "--allow", f"execute:={command}", "add b.txt"]
    ran = await run_here(tmp_path, *args, llm=fake_llm)
    assert ran.code == 0, ran.stderr
    result = [m["content"] for m in fake_llm.last_request["messages"] if m["role"] == "tool"][-1]
    if mode == "full-auto":
        assert (work / "b.txt").read_text() == "bee\n"
        assert "applied to the session's folder: added b.txt" in result
    else:
        assert not (work / "b.txt").exists()
        assert "no one could be asked to approve them here, and the mode asks" in result
    assert left(work).count("\n") == 1, "the repository's own worktree alone"
