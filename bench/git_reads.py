"""Git reads benchmark: what the agent's per-turn git reads (the git state of its system prompt and environment
updates) cost now that they run through `own_git`, against the way they ran before, side by side in one run.

The folder is a git repository with a few commits, twenty files and an edited one. Figures, in milliseconds, median /
min / max over --runs reads of each kind (interleaved, after warm-ups):

  before        the reads as they were: `git status` and `git log` at once, plain `git` with the agent's whole
                environment (reproduced here: the code is gone from the agent).
  own, outside  `workspace._read_git` without walls: the log while the config's program names are read, then the
                status with them blanked, every git with the overrides and the scrubbed environment.
  own, walled   the same with the status inside a session's walls, as a sandboxed session reads them (through the
                session's walled reader: the walls go up once, at the first read).
  added         own walled median minus before median (the goal: <= 20 ms), and own outside minus before.
  walls alone   one `git status` through own_git inside the walls minus the same outside (the walled reader's
                round trip, against a process group of the agent's own).

Usage: uv run python bench/git_reads.py [--runs 40] [--json]. Linux with the sandbox available (else the walled
figures are left out).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from acp_bench import stats  # noqa: E402

from coder_agent import own_git  # noqa: E402
from coder_agent.agent import workspace  # noqa: E402
from coder_agent.sandbox import probe  # noqa: E402
from coder_agent.sandbox.command import CommandSandbox  # noqa: E402
from coder_agent.sandbox.settings import SandboxConfig  # noqa: E402

GOAL_MS = 20.0
IDENTITY = ["-c", "user.name=Bench", "-c", "user.email=bench@example.com", "-c", "commit.gpgSign=false"]


async def before(cwd: Path) -> None:
    """The per-turn reads as the agent ran them before `own_git` (two plain gits at once)."""
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}

    async def run(args: list[str]) -> None:
        await anyio.run_process(["git", "-C", str(cwd), *args], check=False, env=env)

    async with anyio.create_task_group() as group:
        group.start_soon(run, ["status", "--porcelain=v1", "--branch", "--untracked-files=normal"])
        group.start_soon(run, ["log", f"-{workspace.RECENT_COMMITS}", "--format=%H%x00%s"])


async def make_repository(work: Path) -> None:
    await anyio.run_process(["git", "init", "-q", "-b", "main", str(work)])
    for index in range(20):
        (work / f"file{index}.txt").write_text(f"{index}\n")
    for message in ("one", "two", "three"):
        (work / "notes.txt").write_text(f"{message}\n")
        await anyio.run_process(["git", "-C", str(work), "add", "-A"])
        await anyio.run_process(["git", "-C", str(work), *IDENTITY, "commit", "-qm", message])
    (work / "file3.txt").write_text("edited\n")


async def measure(runs: int) -> dict[str, Any]:
    support = probe.check()
    with tempfile.TemporaryDirectory(prefix="git-reads-bench-") as folder:
        work = Path(folder) / "work"
        work.mkdir()
        await make_repository(work)
        async with anyio.create_task_group() as tasks:
            sandbox = None
            if support.available:
                sandbox = await CommandSandbox.open((work,), SandboxConfig(), support, tasks)
            try:
                figures: dict[str, list[float]] = {
                    "before": [], "outside": [], "walled": [], "status_out": [], "status_in": []
                }  # fmt: skip

                async def timed(kind: str) -> float:
                    started = time.perf_counter()
                    if kind == "before":
                        await before(work)
                    elif kind.startswith("status"):
                        box = sandbox if kind == "status_in" else None
                        await own_git.run(workspace.STATUS, root=work, cwd=work, sandbox=box)
                    else:
                        _, git = await workspace._read_git(work, sandbox if kind == "walled" else None)
                        if git is None or git.branch != "main" or not git.recent_commits:
                            raise SystemExit(f"the {kind} reads did not read the repository: {git}")
                    return (time.perf_counter() - started) * 1000

                kinds = ["before", "outside", *(["walled", "status_out", "status_in"] if sandbox is not None else [])]
                for _ in range(5):
                    for kind in kinds:
                        await timed(kind)
                for _ in range(runs):
                    for kind in kinds:
                        figures[kind].append(await timed(kind))
            finally:
                if sandbox is not None:
                    await sandbox.aclose()
            tasks.cancel_scope.cancel()
    base = statistics.median(figures["before"])
    walled = statistics.median(figures["walled"]) - base if figures["walled"] else None
    outside = statistics.median(figures["outside"]) - base
    worst = walled if walled is not None else outside
    return {
        "runs": runs,
        "before": stats(figures["before"]),
        "own_outside": stats(figures["outside"]),
        "own_walled": stats(figures["walled"]),
        "added_walled_ms": None if walled is None else round(walled, 2),
        "added_outside_ms": round(outside, 2),
        "walls_alone_ms": round(statistics.median(figures["status_in"]) - statistics.median(figures["status_out"]), 2)
        if figures["status_in"]
        else None,
        "goal": f"added <= {GOAL_MS} ms: {'PASS' if worst <= GOAL_MS else 'FAIL'}",
        "sandbox": support.kind if support.available else f"none ({support.reason})",
        "load_average": os.getloadavg()[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures = anyio.run(measure, args.runs)
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    for name in ("before", "own_outside", "own_walled"):
        shown = {k: v for k, v in figures[name].items() if k != "values"}
        print(f"{name:>16}: {shown}")
    print(f"{'added, walled':>16}: {figures['added_walled_ms']} ms   ({figures['goal']})")
    print(f"{'added, outside':>16}: {figures['added_outside_ms']} ms")
    print(f"{'walls alone':>16}: {figures['walls_alone_ms']} ms")
    print(f"{'sandbox':>16}: {figures['sandbox']}")
    print(f"{'load average':>16}: {figures['load_average']:.2f}")


if __name__ == "__main__":
    main()
