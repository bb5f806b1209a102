"""The agent run from a virtual environment inside the project it works on (a project with coder-agent among its
development tools, or a checkout of coder-agent worked on by itself): what the agent runs and imports on its own,
outside the walls (ripgrep, its interpreter, its modules, its prompt templates), lies in the session's folder.

A sandboxed command in `auto` mode plants there, then the agent's next step would run the plant with the user's
rights: a `grep` runs the environment's `rg`, and a module imported late (the syntax check's Python grammar, first
loaded by the first edit of a `.py` file) runs in the agent itself, with the key. The walls keep the agent's
own installation read-only, so the plant fails (and with no one to ask, it is not run outside the walls either)
and nothing of it runs. The agent is spawned from that environment,
as an editor would start it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import anyio
import pytest

from coder_agent.headless import snippets
from coder_agent.sandbox import probe
from tests.support.fake_llm import FakeLLM, Reply
from tests.support.spawn import agent_env

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.e2e,
    pytest.mark.skipif(not probe.check().available, reason=f"no sandbox here: {probe.check().reason}"),
]

CHECKOUT = Path(__file__).resolve().parents[2]
KEY = "sk-own-installation-0123456789"


def environment_inside(work: Path) -> Path:
    """A virtual environment at `work/.venv` whose packages are this test's (a `.pth` names them): the agent
    started with its python has its prefix, scripts and site-packages in the workspace. Its interpreter."""
    base = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    venv = work / ".venv"
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    packages = venv / "lib" / version / "site-packages"
    (packages / "tests-packages.pth").write_text(f"{sysconfig.get_path('purelib')}\n{CHECKOUT}\n")
    return venv / "bin" / "python"


async def run_from(python: Path, tmp_path: Path, work: Path, llm: FakeLLM) -> subprocess.CompletedProcess[bytes]:
    env = agent_env(tmp_path, llm, {"CODER_AGENT_API_KEY": KEY})
    with anyio.fail_after(180):
        return await anyio.run_process(
            [str(python), "-m", "coder_agent", "run", "--cwd", str(work), "--mode", "auto", "go"],
            cwd=tmp_path,
            env=env,
            check=False,
        )


PLANTINGS = {
    "ripgrep": (
        "printf '#!/bin/sh\\nenv > {trap}\\n' > .venv/bin/rg && chmod +x .venv/bin/rg",
        Reply.tool("grep", {"pattern": "anything"}),
    ),
    "a-module-imported-late": (
        "echo \"import os; open('{trap}', 'w').write(repr(dict(os.environ)))\" > "
        f".venv/lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages/tree_sitter_python.py",
        Reply.tool("write_file", {"path": "new.py", "content": "x = 1\\n"}),
    ),
    "a-module-written-by-the-edit-tool": (
        "",
        Reply.tool(
            "write_file",
            {
                "path": f".venv/lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages/"
                "tree_sitter_python.py",
                "content": "import os; open({trap!r}, 'w').write(repr(dict(os.environ)))\n",
            },
        ),
    ),
}
"""How the plant is made (a sandboxed command, or the model's own edit) and the agent's next step."""


@pytest.mark.parametrize("planting", sorted(PLANTINGS))
async def test_what_a_command_plants_in_the_agents_own_environment_never_runs(
    tmp_path: Path, fake_llm: FakeLLM, planting: str
) -> None:
    work = tmp_path / "project"
    work.mkdir()
    python = environment_inside(work)
    trap = tmp_path / "trap-ran"
    command, next_step = PLANTINGS[planting]
    if command:
        first = Reply.tool("run_command", {"command": command.format(trap=str(trap))})
    else:  # the edit tool plants, and the next edit of a .py file would import it
        arguments = next_step.calls[0].arguments
        assert isinstance(arguments, dict)
        first = Reply.tool("write_file", {**arguments, "content": arguments["content"].format(trap=str(trap))})
        next_step = Reply.tool("write_file", {"path": "new.py", "content": "x = 1\n"})
    fake_llm.script([first, next_step, Reply("done")])
    ran = await run_from(python, tmp_path, work, fake_llm)
    assert not trap.exists(), trap.read_text()[:300]
    planted = [p.name for p in work.glob(".venv/*/rg")] + [p.name for p in work.glob(".venv/lib/*/*/tree_sitter*")]
    assert planted == [], ran.stderr.decode()[-2000:]  # the plant failed (and, unasked, was not run outside)


async def test_the_module_launch_of_the_settings_snippet_never_imports_the_folder_it_starts_in(tmp_path: Path) -> None:
    """An editor starting `python -m coder_agent` in a cloned repository that holds a `coder_agent` package would run
    the repository's: the snippet's launch keeps the folder off `sys.path` (`-P`)."""
    clone = tmp_path / "clone"
    (clone / "coder_agent").mkdir(parents=True)
    trap = tmp_path / "trap-ran"
    (clone / "coder_agent" / "__init__.py").write_text(f"open({str(trap)!r}, 'w').write('ran')\n")
    (clone / "coder_agent" / "__main__.py").write_text("")
    launch = snippets.this_install(tmp_path / "elsewhere" / "coder_agent", tmp_path / "bare")
    assert launch.kind == "module"
    with anyio.fail_after(120):
        ran = await anyio.run_process([launch.command, *launch.args, "--help"], cwd=clone, env=agent_env(tmp_path))
    assert b"coder-agent" in ran.stdout and not trap.exists()
