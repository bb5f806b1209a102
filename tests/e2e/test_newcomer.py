"""A newcomer's first steps, as the README's *Install and run* gives them, run for real on this checkout: the
version, `doctor`, then a first `run` in another project (from its folder with `uv run --project`, from anywhere
with `--cwd`, and with the checkout's own `.venv/bin/coder-agent`). The commands are read from the README itself,
so the test fails when the README says something that does not work. The model is the fake server; uv runs
offline (the README says later starts need no network)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import anyio
import pytest

from tests.support.fake_llm import FakeLLM, Reply
from tests.support.spawn import agent_env

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]
WAIT = 180.0


def readme_steps() -> list[str]:
    """The shell lines of the README's *Install and run* that use the checkout (its `git clone` left out)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Install and run", 1)[1].split("\n## ", 1)[0]
    lines: list[str] = []
    for block in re.findall(r"```sh\n(.*?)```", section, flags=re.DOTALL):
        for line in block.splitlines():
            command = line.split("   #", 1)[0].split("  #", 1)[0].strip()
            if command.startswith(("uv run ", "cd ~/", "~/src/coder-agent/")):
                lines.append(command)
    return lines


async def test_the_readmes_first_steps_and_a_first_run_in_another_project(tmp_path: Path, fake_llm: FakeLLM) -> None:
    steps = readme_steps()
    assert steps[:2] == ["uv run coder-agent --version", "uv run coder-agent doctor"], steps
    assert any("--project ~/src/coder-agent" in step and "--cwd" not in step for step in steps), steps
    assert any("--cwd ~/src/other" in step for step in steps), steps
    assert any(step.startswith("~/src/coder-agent/.venv/bin/coder-agent") for step in steps), steps

    project, other = tmp_path / "my-project", tmp_path / "other"
    for folder in (project, other):
        (folder / "src").mkdir(parents=True)
        (folder / "src" / "cache.py").write_text(f"CACHE = {{}}  # the cache of {folder.name}\n")
    places = {"~/src/coder-agent": str(ROOT), "~/src/my-project": str(project), "~/src/other": str(other)}
    env = {**agent_env(tmp_path, fake_llm), "UV_OFFLINE": "1"}
    cwd = ROOT  # the README's clone: `cd coder-agent`
    ran: list[tuple[str, int, str, str]] = []
    for step in steps:
        for short, real in places.items():
            step = step.replace(short, real)
        argv = shlex.split(step)
        if argv[0] == "cd":
            cwd = Path(argv[1])
            continue
        if argv[-1].startswith(("explain", "list")):  # a run: the model reads the file it is asked about
            fake_llm.script([Reply.tool("read_file", {"path": "src/cache.py"}), Reply("It is a dict.")])
        elif argv[-1] == "doctor":
            fake_llm.script([Reply("ready")])
        with anyio.fail_after(WAIT):
            done = await anyio.run_process(argv, cwd=cwd, env=env, check=False, stdin=None)
        ran.append((step, done.returncode, done.stdout.decode(), done.stderr.decode()))

    version, doctor, *runs = ran
    assert version[1] == 0 and version[2].startswith("coder-agent "), version
    report = doctor[2] + doctor[3]
    for check in ("config", "model", "key", "endpoint"):
        assert re.search(rf"^✓ {check}\b", report, flags=re.MULTILINE), report
    assert f'"args": ["run", "--directory", "{ROOT}", "coder-agent"]' in report, "the editor settings of the checkout"

    assert len(runs) == 3, [step for step, *_ in runs]
    worked_in = []
    for step, code, stdout, stderr in runs:
        assert code == 0, f"{step}\n{stderr}"
        assert stdout == "It is a dict.\n", stdout
        assert "Mode: read-only, as there is no terminal to ask on" in stderr, stderr
        session = re.search(r"session (sess_\w+)", stderr)
        assert session is not None, stderr
        record = next((tmp_path / "xdg-data").rglob(f"{session.group(1)}.json"))
        worked_in.append(json.loads(record.read_text())["cwd"])
    assert worked_in == [str(project), str(other), str(project)], "each run works on the project, not the checkout"
    results = [m["content"] for r in fake_llm.requests for m in r["messages"] if m["role"] == "tool"]
    assert any("the cache of my-project" in text for text in results)
    assert any("the cache of other" in text for text in results)
