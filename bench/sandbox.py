"""Sandbox benchmark: what running a command inside the sandbox costs over running it outside, through the path
`run_command` takes on the local machine (`LocalBridge.run_command`), measured side by side in one run.

Figures, in milliseconds, median / p95 / min / max over --runs commands of each kind (interleaved, after warm-ups):

  bare          `true` spawned as a process group and waited for, nothing around it (`process.spawn_group`):
                what a command outside the sandbox cost before it got a supervisor.
  outside       `LocalBridge.run_command("true")`, no sandbox: the supervisor that ends what it leaves running
                (`enter.py --own`, an interpreter start), spawn, wait, collect, stop the group.
  sandboxed     the same inside the session's walls (the fork server forks, puts them up, execs the command).
  baseline      with --baseline ENTER_PY: the same walls put up by another checkout's launcher (say, main's
                `coder_agent/sandbox/enter.py`) through a fork server of its own, in the same run.
  added         sandboxed median minus bare median (the goal: <= 10 ms).
  cpu           CPU time per sandboxed `true` (user + system, the launcher's processes and the command), from the
                fork server's children's times: what the load of a shared machine does not change. With --baseline,
                the baseline's too.
  launcher      the launcher alone, `python -I -S enter.py -- true`, from subprocess.run (interpreter start,
                namespaces, mounts, Landlock, seccomp), minus a plain `true` from subprocess.run.
  a busy command  `git status` in a small repository, outside and inside, for a command that does some work.
  bookkeeping   the agent's own work around each sandboxed command, in this process: the guard before it (the
                git places as they were), the walls' spec, and the guard's finish after it (what it planted for git
                undone). The repository has a submodule, a linked worktree and a gitlink, as projects have.

With --tree DIR (another version's checkout, say `git archive main | tar -x -C DIR`), the figures are taken for
both versions in interleaved rounds (a fresh process per version and round, this bench run against that version's
code: walls, guard and launcher alike), so both see the same load, and printed side by side with the difference.

Usage: uv run python bench/sandbox.py [--runs 60] [--baseline PATH/TO/enter.py | --tree DIR] [--json]. Linux with
the sandbox available. The load average is printed with the figures: the machine is shared.
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

from coder_agent.process import spawn_group, stop_group  # noqa: E402
from coder_agent.sandbox import probe  # noqa: E402
from coder_agent.sandbox.command import CommandSandbox  # noqa: E402
from coder_agent.sandbox.settings import SandboxConfig  # noqa: E402
from coder_agent.sandbox.spawner import ForkServerSpawner  # noqa: E402
from coder_agent.session.bridge import shell_argv  # noqa: E402
from coder_agent.session.local_bridge import LocalBridge  # noqa: E402

GOAL_MS = 10.0


async def _nothing(content: Any) -> None:
    return None


async def bare(command: str, cwd: Path) -> float:
    started = time.perf_counter()
    process = await spawn_group(shell_argv(command), cwd=cwd, stdin=None, stdout=None, stderr=None)
    assert await process.wait() == 0
    await stop_group(process)
    return (time.perf_counter() - started) * 1000


async def measure(runs: int, baseline: Path | None) -> dict[str, Any]:
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
            other = None
            if baseline is not None:
                other = await CommandSandbox.open((work,), SandboxConfig(), support, tasks)
                other.spawner = ForkServerSpawner(tasks, enter=baseline)
            try:
                names = ("bare", "outside", "sandboxed", "baseline", "git_out", "git_in")
                figures: dict[str, list[float]] = {name: [] for name in names}

                async def one(command: str, box: CommandSandbox | None) -> float:
                    started = time.perf_counter()
                    result = await bridge.run_command(command, cwd=work, timeout=30, show=_nothing, sandbox=box)
                    took = (time.perf_counter() - started) * 1000
                    assert result.exit_code == 0, result.output
                    return took

                for _ in range(5):
                    await bare("true", work)
                    await one("true", None)
                    await one("true", sandbox)
                    if other is not None:
                        await one("true", other)
                for _ in range(runs):
                    figures["bare"].append(await bare("true", work))
                    figures["outside"].append(await one("true", None))
                    figures["sandboxed"].append(await one("true", sandbox))
                    if other is not None:
                        figures["baseline"].append(await one("true", other))
                    figures["git_out"].append(await one("git status --short", None))
                    figures["git_in"].append(await one("git status --short", sandbox))
                cpu = {"sandboxed": await _cpu_per_command(sandbox, work, runs)}
                if other is not None:
                    cpu["baseline"] = await _cpu_per_command(other, work, runs)
                bookkeeping = [await _bookkeeping(sandbox) for _ in range(runs)]
                launcher = _launcher(await sandbox.launch(["true"]), work, runs)
            finally:
                await sandbox.aclose()
                if other is not None:
                    await other.aclose()
            tasks.cancel_scope.cancel()
    added = statistics.median(figures["sandboxed"]) - statistics.median(figures["bare"])
    return {
        "runs": runs,
        "bare": stats(figures["bare"]),
        "outside": stats(figures["outside"]),
        "sandboxed": stats(figures["sandboxed"]),
        **({"baseline": stats(figures["baseline"])} if figures["baseline"] else {}),
        "added_ms": round(added, 2),
        "cpu_ms_per_sandboxed_command": cpu,
        **(
            {
                "added_over_baseline_ms": round(
                    statistics.median(figures["sandboxed"]) - statistics.median(figures["baseline"]), 2
                )
            }
            if figures["baseline"]
            else {}
        ),
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


async def _cpu_per_command(sandbox: CommandSandbox, work: Path, runs: int) -> float:
    """CPU milliseconds per sandboxed `true`: the fork server's children's user and system time over `runs` of them
    (each child is reaped by the server, with everything it waited for)."""
    assert sandbox.spawner is not None
    bridge = LocalBridge()
    await bridge.run_command("true", cwd=work, timeout=30, show=_nothing, sandbox=sandbox)
    server = sandbox.spawner.server_pid
    assert server is not None
    before = _children_cpu(server)
    for _ in range(runs):
        await bridge.run_command("true", cwd=work, timeout=30, show=_nothing, sandbox=sandbox)
    return round((_children_cpu(server) - before) / runs, 2)


def _children_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[13]) + int(fields[14])) * 1000 / os.sysconf("SC_CLK_TCK")  # cutime, cstime


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
KINDS = ("bare", "sandboxed", "bookkeeping")


def compare(tree: Path, runs: int) -> dict[str, Any]:
    """This version's figures and another's, taken in interleaved rounds (see the module docstring)."""
    trees = {"other": tree.resolve(), "this": Path(__file__).resolve().parents[1]}
    values: dict[str, dict[str, list[float]]] = {name: {kind: [] for kind in KINDS} for name in trees}
    cpu: dict[str, list[float]] = {name: [] for name in trees}
    loads = []
    for _ in range(ROUNDS):
        for name, root in trees.items():
            done = subprocess.run(
                [sys.executable, __file__, "--json", "--runs", str(max(runs // ROUNDS, 5))],
                env={**os.environ, "CODER_AGENT_BENCH_TREE": str(root)},
                capture_output=True,
                text=True,
                check=True,
            )
            figures = json.loads(done.stdout)
            for kind in KINDS:
                values[name][kind] += figures[kind]["values"]
            cpu[name].append(figures["cpu_ms_per_sandboxed_command"]["sandboxed"])
            loads.append(figures["load_average"])
    out: dict[str, Any] = {"runs_each": len(values["this"]["bare"]), "load_average": round(statistics.mean(loads), 2)}
    for name in trees:
        medians = {kind: statistics.median(values[name][kind]) for kind in KINDS}
        out[name] = {
            "added_ms": round(medians["sandboxed"] - medians["bare"], 2),
            "bookkeeping_ms": round(medians["bookkeeping"], 2),
            "cpu_ms_per_sandboxed_command": round(statistics.median(cpu[name]), 2),
            **{kind: stats(values[name][kind]) for kind in KINDS},
        }
    out["added_over_other_ms"] = round(out["this"]["added_ms"] - out["other"]["added_ms"], 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--baseline", type=Path, help="another checkout's coder_agent/sandbox/enter.py")
    parser.add_argument("--tree", type=Path, help="another version's checkout, measured side by side")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.tree is not None:
        both = compare(args.tree, args.runs)
        if args.json:
            print(json.dumps(both, indent=2))
            return
        for name in ("other", "this"):
            tree = both[name]
            print(
                f"{name:>6}: added {tree['added_ms']} ms (sandboxed {tree['sandboxed']['median']} against bare "
                f"{tree['bare']['median']}), bookkeeping {tree['bookkeeping_ms']} ms, "
                f"CPU {tree['cpu_ms_per_sandboxed_command']} ms per sandboxed command"
            )
        print(f"{'this - other':>6}: {both['added_over_other_ms']} ms added per command")
        print(f"{'load':>6}: {both['load_average']:.2f} (mean of the rounds), {both['runs_each']} commands each")
        return
    figures = anyio.run(measure, args.runs, args.baseline)
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    for name in ("bare", "outside", "sandboxed", "baseline", "git_status_outside", "git_status_sandboxed"):
        if name in figures:
            print(f"{name:>22}: {figures[name]}")
    print(f"{'added':>22}: {figures['added_ms']} ms   ({figures['goal']})")
    if "added_over_baseline_ms" in figures:
        print(f"{'added over baseline':>22}: {figures['added_over_baseline_ms']} ms")
    print(f"{'cpu per command':>22}: {figures['cpu_ms_per_sandboxed_command']} ms")
    print(f"{'bookkeeping':>22}: {figures['bookkeeping']['median']} ms")
    print(f"{'launcher alone, added':>22}: {figures['launcher_added_ms']} ms")
    print(f"{'load average':>22}: {figures['load_average']:.2f}")


if __name__ == "__main__":
    main()
