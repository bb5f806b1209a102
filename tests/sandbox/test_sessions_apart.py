"""Sessions apart: one session's commands cannot reach another session's private folder, and one project's
commands leave nothing in the package caches that another project's commands read.

Each session is opened as the agent opens one (`CommandSandbox.open`, its private folder in this user's sessions'
folder, its caches its project's own), around two workspaces of the same fake user; commands run through the real
launcher (`walled.run_inside`).
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from coder_agent.agent.sandboxing import agent_paths
from coder_agent.sandbox import probe
from coder_agent.sandbox.command import CommandSandbox
from coder_agent.sandbox.settings import SandboxConfig
from tests.sandbox.conftest import MakeLayout
from tests.sandbox.walled import Layout, Ran, run_inside

pytestmark = [pytest.mark.sandbox, pytest.mark.anyio]

REAL_HOME = Path.home()
"""Where this machine's toolchains are (the tests point HOME at a fake one)."""
TOOLCHAIN = {"RUSTUP_HOME": os.environ.get("RUSTUP_HOME") or str(REAL_HOME / ".rustup")}
CRATE = '[package]\nname = "tiny"\nversion = "0.1.0"\nedition = "2021"\n'


@asynccontextmanager
async def session(workspace: Path) -> AsyncIterator[CommandSandbox]:
    async with anyio.create_task_group() as tasks:
        sandbox = await CommandSandbox.open((workspace,), SandboxConfig(), probe.check(), tasks, agent_paths(None))
        try:
            yield sandbox
        finally:
            await sandbox.aclose()
            tasks.cancel_scope.cancel()


async def run(sandbox: CommandSandbox, layout: Layout, command: str, cwd: Path, **env: str) -> Ran:
    return await run_inside(sandbox, command, home=layout.home, cwd=cwd, env=env, timeout=120.0)


def second_workspace(layout: Layout) -> Path:
    other = layout.base / "other-project"
    other.mkdir()
    return other


async def test_a_sessions_temp_folder_is_private_and_others_are_out_of_reach(make_world: MakeLayout) -> None:
    layout = make_world()
    other = second_workspace(layout)
    async with session(layout.workspace) as mine:
        assert stat.S_IMODE(mine.walls.temp.parent.stat().st_mode) == 0o700  # the sessions' folder
        assert stat.S_IMODE(mine.walls.temp.stat().st_mode) == 0o700
        assert stat.S_IMODE(mine.folder.stat().st_mode) == 0o700  # its private folder (the proxy's socket)
        async with session(other) as theirs:  # opened after mine: its folder did not exist when mine opened
            wrote = await run(theirs, layout, 'echo "THEIR-SECRET" > "$TMPDIR/notes.txt"', other)
            assert wrote.status == 0, wrote.output
            notes = theirs.walls.temp / "notes.txt"
            for attempt in (  # (names can be listed along the way, as anywhere the walls keep out: not contents)
                f"cat {notes}",
                f"grep -r THEIR {theirs.walls.temp.parent}",
                f"cp -r {theirs.walls.temp} stolen && cat stolen/notes.txt",
                f"echo pwned > {theirs.walls.temp}/planted",
            ):
                ran = await run(mine, layout, attempt, layout.workspace)
                assert ran.status != 0, f"{attempt} reached another session's folder:\n{ran.output}"
                assert "THEIR-SECRET" not in ran.output
            assert not (theirs.walls.temp / "planted").exists()
            own = await run(mine, layout, 'echo mine > "$TMPDIR/x" && cat "$TMPDIR/x"', layout.workspace)
            assert own.output.strip() == "mine"


async def test_one_projects_caches_are_not_anothers(make_world: MakeLayout) -> None:
    layout = make_world()
    other = second_workspace(layout)
    plant = '[build]\nrustc-wrapper = "/bin/false"\n'
    async with session(layout.workspace) as first, session(other) as second:
        assert first.walls.cache != second.walls.cache
        assert first.walls.cache.parent == second.walls.cache.parent
        ran = await run(
            first,
            layout,
            f"mkdir -p $CARGO_HOME $UV_CACHE_DIR && printf '{plant}' > $CARGO_HOME/config.toml",
            layout.workspace,
        )
        assert ran.status == 0, ran.output
        assert (first.walls.cache / "cargo" / "config.toml").exists()
        seen = await run(second, layout, "cat $CARGO_HOME/config.toml", other)
        assert seen.status != 0 and "rustc-wrapper" not in seen.output
        reach = await run(second, layout, f"cat {first.walls.cache}/cargo/config.toml", other)
        assert reach.status != 0 and "rustc-wrapper" not in reach.output, reach.output


@pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo is not installed")
async def test_a_cargo_config_planted_by_one_project_runs_nothing_in_another(make_world: MakeLayout) -> None:
    """The issue's case, for real: a `CARGO_HOME/config.toml` with a `rustc-wrapper` planted by one project's
    command runs in that project's builds (so the plant works), and not in another project's `cargo build`."""
    layout = make_world()
    other = second_workspace(layout)
    for crate in (layout.workspace, other):
        (crate / "src").mkdir(exist_ok=True)
        (crate / "Cargo.toml").write_text(CRATE, encoding="utf-8")
        (crate / "src" / "main.rs").write_text('fn main() { println!("hi"); }\n', encoding="utf-8")
    wrapper = layout.workspace / "wrapper.sh"
    wrapper.write_text(f'#!/bin/sh\necho ran >> "{layout.workspace}/wrapper-ran"\nexec "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    plant = f'[build]\nrustc-wrapper = "{wrapper}"\n'
    async with session(layout.workspace) as first, session(other) as second:
        ran = await run(
            first, layout, f"mkdir -p $CARGO_HOME && printf '{plant}' > $CARGO_HOME/config.toml", layout.workspace
        )
        assert ran.status == 0, ran.output
        built = await run(first, layout, "cargo build --offline -q", layout.workspace, **TOOLCHAIN)
        assert built.status == 0, built.output
        assert (layout.workspace / "wrapper-ran").exists(), "the planted wrapper did not run in its own project"
        (layout.workspace / "wrapper-ran").unlink()
        built = await run(second, layout, "cargo build --offline -q", other, **TOOLCHAIN)
        assert built.status == 0, built.output
        assert not (layout.workspace / "wrapper-ran").exists(), "another project's build ran the planted wrapper"
