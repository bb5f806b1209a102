"""Sandbox benchmark: what running a command inside the sandbox costs over running it outside, through the path
`run_command` takes on the local machine (`LocalBridge.run_command`), measured side by side in one run.

Figures, in milliseconds, median / p95 / min / max over --runs commands of each kind (interleaved, after warm-ups):

  outside       `LocalBridge.run_command("true")`, no sandbox: spawn, wait, collect, stop the group.
  sandboxed     the same inside the session's walls (the launcher puts them up, then execs the command).
  added         sandboxed median minus outside median (the goal: <= 10 ms).
  launcher      the launcher alone, `python -I -S enter.py -- true`, from subprocess.run (interpreter start,
                namespaces, mounts, Landlock, seccomp), minus a plain `true` from subprocess.run.
  a busy command  `git status` in a small repository, outside and inside, for a command that does some work.

Usage: uv run python bench/sandbox.py [--runs 60] [--json]. Linux with the sandbox available.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from acp_bench import stats  # noqa: E402

from coder_agent.sandbox import probe  # noqa: E402
from coder_agent.sandbox.command import CommandSandbox  # noqa: E402
from coder_agent.sandbox.settings import SandboxConfig  # noqa: E402
from coder_agent.session.local_bridge import LocalBridge  # noqa: E402

GOAL_MS = 10.0


async def _nothing(content: Any) -> None:
    return None


async def measure(runs: int) -> dict[str, Any]:
    support = probe.check()
    if not support.available:
        raise SystemExit(f"the sandbox is not available here: {support.reason}")
    with tempfile.TemporaryDirectory(prefix="sandbox-bench-") as folder:
        work = Path(folder) / "work"
        work.mkdir()
        await anyio.run_process(["git", "init", "-q", str(work)])
        for index in range(20):
            (work / f"file{index}.txt").write_text(f"{index}\n")
        bridge = LocalBridge()
        async with anyio.create_task_group() as tasks:
            sandbox = await CommandSandbox.open((work,), SandboxConfig(), support, tasks)
            try:
                figures: dict[str, list[float]] = {"outside": [], "sandboxed": [], "git_out": [], "git_in": []}

                async def one(command: str, box: CommandSandbox | None) -> float:
                    started = time.perf_counter()
                    result = await bridge.run_command(command, cwd=work, timeout=30, show=_nothing, sandbox=box)
                    took = (time.perf_counter() - started) * 1000
                    assert result.exit_code == 0, result.output
                    return took

                for _ in range(5):
                    await one("true", None)
                    await one("true", sandbox)
                for _ in range(runs):
                    figures["outside"].append(await one("true", None))
                    figures["sandboxed"].append(await one("true", sandbox))
                    figures["git_out"].append(await one("git status --short", None))
                    figures["git_in"].append(await one("git status --short", sandbox))
                launcher = _launcher(await sandbox.launch(["true"]), work, runs)
            finally:
                await sandbox.aclose()
            tasks.cancel_scope.cancel()
    added = statistics.median(figures["sandboxed"]) - statistics.median(figures["outside"])
    return {
        "runs": runs,
        "outside": stats(figures["outside"]),
        "sandboxed": stats(figures["sandboxed"]),
        "added_ms": round(added, 2),
        "git_status_outside": stats(figures["git_out"]),
        "git_status_sandboxed": stats(figures["git_in"]),
        "launcher_added_ms": launcher,
        "goal": f"added <= {GOAL_MS} ms: {'PASS' if added <= GOAL_MS else 'FAIL'}",
        "load_average": os.getloadavg()[0],
    }


def _launcher(launch: tuple[list[str], dict[str, str]], work: Path, runs: int) -> float:
    argv, env = launch
    env = {**os.environ, **env}
    plain, walled = [], []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(["true"], check=True)
        plain.append(time.perf_counter() - started)
        started = time.perf_counter()
        subprocess.run(argv, env=env, cwd=work, check=True)
        walled.append(time.perf_counter() - started)
    return round((statistics.median(walled) - statistics.median(plain)) * 1000, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures = anyio.run(measure, args.runs)
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    for name in ("outside", "sandboxed", "git_status_outside", "git_status_sandboxed"):
        print(f"{name:>22}: {figures[name]}")
    print(f"{'added':>22}: {figures['added_ms']} ms   ({figures['goal']})")
    print(f"{'launcher alone, added':>22}: {figures['launcher_added_ms']} ms")
    print(f"{'load average':>22}: {figures['load_average']:.2f}")


if __name__ == "__main__":
    main()
