"""`coder-agent run` with no one to ask, on read-only calls that run side by side: the read that needs a permission
stops the turn, the reads beside it keep their results, and `--continue` (with the folder added) runs only the
stopped one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.fake_llm import Call, FakeLLM, Reply
from tests.support.headless import run_here
from tests.support.spawn import stored_session

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def test_a_read_beside_others_that_needs_permission_stops_alone(tmp_path: Path, fake_llm: FakeLLM) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "main.py").write_text("print('hello')\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside words\n")
    (work / "other.py").write_text("print('other')\n")
    paths = ["main.py", str(outside / "secret.txt"), "other.py"]
    fake_llm.script([Reply(calls=[Call("read_file", {"path": path}, id=f"c{n}") for n, path in enumerate(paths)])])
    args = ["--cwd", str(work), "--mode", "default", "--output-format", "json", "read them"]
    ran = await run_here(tmp_path, *args, llm=fake_llm)
    assert ran.code == 3, ran.stderr
    result = ran.json()
    assert [r["tool_call_id"] for r in result["refused"]] == ["c1"]
    told = {
        m["tool_call_id"]: m["content"]
        for m in json.loads(stored_session(tmp_path, result["session_id"]))["messages"]
        if m["role"] == "tool"
    }
    assert "hello" in told["c0"] and "other" in told["c2"], "the reads beside it ran"
    assert "no one could be asked" in told["c1"]

    fake_llm.script([Reply("Read all three.")])
    more = ["--add-dir", str(outside)]  # the folder is the session's now: its read is asked nothing
    again = await run_here(tmp_path, "--cwd", str(work), "--continue", *more, "--output-format", "json", llm=fake_llm)
    assert again.code == 0, again.stderr
    answered = [m for m in fake_llm.last_request["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in answered] == ["c0", "c2", "c1"]
    assert "outside words" in answered[-1]["content"]
