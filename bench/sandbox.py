"""Sandbox benchmark: what running a command inside the sandbox costs over running it outside, through the path
`run_command` takes on the local machine (`LocalBridge.run_command`), measured side by side in one run.

Figures, in milliseconds, median / p95 / min / max over --runs commands of each kind (interleaved, after warm-ups):

  outside       `LocalBridge.run_command("true")`, no sandbox: spawn, wait, collect, stop the group.
  sandboxed     the same inside the session's walls (the launcher puts them up, then execs the command).
  added         sandboxed median minus outside median (the goal: <= 10 ms).
  launcher      the launcher alone, `python -I -S enter.py -- true`, from subprocess.run (interpreter start,
                namespaces, mounts, Landlock, seccomp), minus a plain `true` from subprocess.run.
  a busy command  `git status` in a small repository, outside and inside, for a command that does some work.
  bookkeeping   the agent's own work around each sandboxed command, in this process: the guard before it (its mark,
                the git places as they were), the walls' spec, and the guard's finish after it (leftover
                processes, git places undone), in a repository with a submodule, a linked worktree and a gitlink.

With `--baseline DIR` (a checkout of another version, say `git archive main | tar -x -C DIR`), the same figures are
taken for both trees in interleaved rounds (each round a fresh process per tree, this bench run against that
tree's code), so both see the same load, and printed side by side with the difference.

Usage: uv run python bench/sandbox.py [--runs 60] [--json] [--baseline DIR]. Linux with the sandbox available.
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

ROOT = Path(os.environ.get("CODER_AGENT_BENCH_TREE") or Path(__file__).resolve().parents[1])
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

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
        await _repository(work)
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
                bookkeeping = [await _bookkeeping(sandbox) for _ in range(runs)]
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
        "bookkeeping": stats(bookkeeping),
        "goal": f"added <= {GOAL_MS} ms: {'PASS' if added <= GOAL_MS else 'FAIL'}",
        "load_average": os.getloadavg()[0],
    }


async def _repository(work: Path) -> None:
    """A small repository as projects have them: files, a submodule, a linked worktree, a nested gitlink."""
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@b", "-c", "protocol.file.allow=always"]
    for folder in (work, work.parent / "lib"):
        await anyio.run_process([*git, "init", "-q", str(folder)])
        await anyio.run_process([*git, "-C", str(folder), "commit", "-q", "--allow-empty", "-m", "x"])
    for index in range(20):
        (work / f"file{index}.txt").write_text(f"{index}\n")
    await anyio.run_process([*git, "-C", str(work), "submodule", "add", "-q", str(work.parent / "lib"), "lib"])
    await anyio.run_process([*git, "-C", str(work), "worktree", "add", "-q", str(work.parent / "other")])
    nested = work / "vendor" / "dep"
    nested.mkdir(parents=True)
    await anyio.run_process([*git, "init", "-q", str(nested)])
    await anyio.run_process([*git, "-C", str(nested), "commit", "-q", "--allow-empty", "-m", "x"])
    await anyio.run_process([*git, "-C", str(work), "add", "-A"], check=False)


async def _bookkeeping(sandbox: CommandSandbox) -> float:
    """The agent's own work around one sandboxed command (see the module docstring), in milliseconds."""
    started = time.perf_counter()
    guard = sandbox.guard()
    sandbox.walls.spec()
    await guard.finish()
    return (time.perf_counter() - started) * 1000


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


ROUNDS = 6
KINDS = ("outside", "sandboxed", "git_status_outside", "git_status_sandboxed", "bookkeeping")


def compare(baseline: Path, runs: int) -> dict[str, Any]:
    """Both trees' figures, taken in interleaved rounds (see the module docstring)."""
    trees = {"baseline": baseline.resolve(), "this": Path(__file__).resolve().parents[1]}
    values: dict[str, dict[str, list[float]]] = {name: {kind: [] for kind in KINDS} for name in trees}
    loads = []
    for _ in range(ROUNDS):
        for name, tree in trees.items():
            env = {**os.environ, "CODER_AGENT_BENCH_TREE": str(tree)}
            done = subprocess.run(
                [sys.executable, __file__, "--json", "--runs", str(max(runs // ROUNDS, 5))],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            figures = json.loads(done.stdout)
            for kind in KINDS:
                values[name][kind] += figures[kind]["values"]
            loads.append(figures["load_average"])
    out: dict[str, Any] = {
        "runs_each": len(values["this"]["outside"]),
        "load_average": round(statistics.mean(loads), 2),
    }
    for name in trees:
        medians = {kind: statistics.median(values[name][kind]) for kind in KINDS}
        out[name] = {
            "added_ms": round(medians["sandboxed"] - medians["outside"], 2),
            "bookkeeping_ms": round(medians["bookkeeping"], 2),
            **{kind: stats(values[name][kind]) for kind in KINDS},
        }
    difference = out["this"]["added_ms"] - out["baseline"]["added_ms"]
    out["added_over_baseline_ms"] = round(difference, 2)
    out["goal"] = f"added <= {GOAL_MS} ms: {'PASS' if out['this']['added_ms'] <= GOAL_MS else 'FAIL'}"
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--baseline", type=Path, help="a checkout of another version to measure side by side")
    args = parser.parse_args()
    if args.baseline is not None:
        both = compare(args.baseline, args.runs)
        if args.json:
            print(json.dumps(both, indent=2))
            return
        for name in ("baseline", "this"):
            tree = both[name]
            print(
                f"{name:>9}: added {tree['added_ms']} ms (sandboxed {tree['sandboxed']['median']} against "
                f"outside {tree['outside']['median']}), bookkeeping {tree['bookkeeping_ms']} ms"
            )
        print(f"{'this - baseline':>9}: {both['added_over_baseline_ms']} ms added per command   ({both['goal']})")
        print(f"{'load':>9}: {both['load_average']:.2f} (mean of the rounds), {both['runs_each']} commands each")
        return
    figures = anyio.run(measure, args.runs)
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    for name in ("outside", "sandboxed", "git_status_outside", "git_status_sandboxed", "bookkeeping"):
        print(f"{name:>22}: {figures[name]}")
    print(f"{'added':>22}: {figures['added_ms']} ms   ({figures['goal']})")
    print(f"{'launcher alone, added':>22}: {figures['launcher_added_ms']} ms")
    print(f"{'load average':>22}: {figures['load_average']:.2f}")


if __name__ == "__main__":
    main()
