"""Long-work benchmark for coder-agent: sub-agents side by side (plain and isolated), what a worktree costs, and how
fast a background job's output reaches the model.

The agent runs in this process, over memory streams, as the in-process tests run it (`tests.support`: the real
`serve()`, the ACP client with its conformance checks, the fake editor), its model a `ScriptedModel` wrapped so that
each answer of a sub-agent first waits a set time: the model's latency, the only cost of a sub-agent that is not
the agent's own. Two figures:

  1. sub-agents side by side   Three `explore` sub-agents whose model answers take 0.20, 0.30 and 0.40 s (two
                               answers each: a `glob`, then the answer). Time from writing `session/prompt` to its
                               response, for a prompt whose reply holds the three `task` calls, and for a prompt with
                               each task alone; ratio = together / the slowest alone (medians over --runs). Side by
                               side, the three take about as long as the slowest: the agent's own work (three
                               children's contexts, their tool calls, the updates of three sub-agent sessions) is
                               what the ratio adds above 1.
  2. job output to the model   A background job prints a line stamped with CLOCK_MONOTONIC (`time.monotonic()` in
                               the job; one clock for every process on the machine) 1 s after it starts and goes on
                               running, while the model waits for it with `job_wait` until that line. Latency = when
                               the model is handed the result holding the line (stamped in this process) - the
                               stamp. Local jobs
                               see output as it is written; a job in the editor's terminal is read by asking the
                               editor (`terminal/output`) every 50 ms while a wait runs. Also for information:
                               `job_output` on a job that has printed 1 MB, from the call to its result.

  3. isolated writers           Three isolated `general` sub-agents (model answers of 0.20, 0.30 and 0.40 s: a read,
                               an edit of a file of their own, the answer) in a repository of 200 files with an
                               uncommitted change, each in a worktree of its own, each change merged back through one
                               question the editor answers "apply all"; ratio = together / the slowest alone, as in 1.
                               What isolation adds: making and removing three worktrees, three merges (asked one at
                               a time).
  4. a worktree of 10,000 files  Making an isolated child's worktree of a repository of 10,000 files (one of them
                               changed and not committed), reading what it changed (three files), and removing the
                               worktree and its branch; medians over --runs.

Goals (PASS/FAIL): side by side, ratio <= 1.3 (plain and isolated); job output reaches the model within 100 ms of
being written (median, local and terminal jobs).

Usage (from the repository root; Linux):

  uv run python bench/long_work.py              # 5 runs of each
  uv run python bench/long_work.py --runs 10
  uv run python bench/long_work.py --json

Exit status: 0 when every prompt went as scripted and both goals passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from coder_agent.isolation import places  # noqa: E402
from coder_agent.isolation.workplace import make  # noqa: E402
from coder_agent.model.base import Message, ModelTurn, StreamSink  # noqa: E402
from coder_agent.model.scripted import Call, Reply, Request, ScriptedModel  # noqa: E402
from tests.support.editor import FakeEditor  # noqa: E402
from tests.support.scripted_agent import scripted_agent, tool_agent  # noqa: E402

GOAL_RATIO = 1.3
GOAL_LATENCY_MS = 100.0
DELAYS = {"alpha": 0.20, "beta": 0.30, "gamma": 0.40}
PRINT_AFTER = 1.0  # after the half second run_command watches a new job for
MARK = re.compile(r"([0-9.]+) MARK")
"""The job's stamp, before the text the wait is for (a wait's output may end where that text does)."""
BIG_OUTPUT = 1_000_000
SMALL_REPOSITORY = 200
LARGE_REPOSITORY = 10_000


def child_task(request: Request) -> str | None:
    messages = request.messages
    if "a sub-agent of coder-agent" not in str(messages[0]["content"]):
        return None
    return str(messages[1]["content"])


class DelayedModel(ScriptedModel):
    """A scripted model whose sub-agents' answers each take their task's delay (the model's latency)."""

    async def stream(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], sink: StreamSink) -> ModelTurn:
        task = child_task(Request(list(messages), []))
        if task is not None:
            await anyio.sleep(DELAYS[task])
        return await super().stream(messages, tools, sink)


def sub_agent_script(tasks: list[str]) -> DelayedModel:
    def answer(request: Request) -> Reply:
        task = child_task(request)
        tool_results = [m for m in request.messages if m["role"] == "tool"]
        if task is None:
            if tool_results:
                return Reply("done")
            calls = [Call("task", {"description": f"Find {t}", "prompt": t}) for t in tasks]
            return Reply(calls=calls)
        return Reply(f"{task} found") if tool_results else Reply(calls=[Call("glob", {"pattern": f"{task}*"})])

    return DelayedModel(default=answer)


async def time_prompt(tmp: Path, tasks: list[str]) -> float:
    await anyio.Path(tmp).mkdir(parents=True)
    model = sub_agent_script(tasks)
    capabilities = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False, "subagents": {}}
    async with scripted_agent(tmp, model, capabilities=capabilities) as (client, session, _):
        start = time.perf_counter()
        stop = await client.prompt(session, "find them")
        elapsed = time.perf_counter() - start
    answers = [m["content"] for m in model.last_request.messages if m["role"] == "tool"]
    if stop != "end_turn" or answers != [f"{t} found" for t in tasks]:
        raise RuntimeError(f"the prompt did not go as scripted: {stop}, {answers}")
    return elapsed


async def sub_agents(runs: int) -> dict[str, Any]:
    return await side_by_side(runs, time_prompt)


async def side_by_side(runs: int, time_one: Callable[[Path, list[str]], Awaitable[float]]) -> dict[str, Any]:
    """The three tasks together against each alone (`time_one` times a prompt of some tasks in a folder)."""
    together: list[float] = []
    alone: dict[str, list[float]] = {name: [] for name in DELAYS}
    with tempfile.TemporaryDirectory() as folder:
        for run in range(runs + 1):  # the first is a warm-up
            tmp = Path(folder) / f"run-{run}"
            tmp.mkdir()
            elapsed = await time_one(tmp / "together", list(DELAYS))
            if run:
                together.append(elapsed)
            for name in DELAYS:
                one = await time_one(tmp / name, [name])
                if run:
                    alone[name].append(one)
    slowest = max(statistics.median(times) for times in alone.values())
    ratio = statistics.median(together) / slowest
    return {
        "together_s": round(statistics.median(together), 3),
        "alone_s": {name: round(statistics.median(times), 3) for name, times in alone.items()},
        "ratio": round(ratio, 3),
        "goal": GOAL_RATIO,
        "pass": ratio <= GOAL_RATIO,
    }


def job_script(latencies: list[float]) -> ScriptedModel:
    command = (
        f"python3 -c \"import time; time.sleep({PRINT_AFTER}); print(time.monotonic(), 'MARK', flush=True); "
        'time.sleep(60)"'
    )

    def answer(request: Request) -> Reply:
        results = [str(m["content"]) for m in request.messages if m["role"] == "tool"]
        if not results:
            return Reply(calls=[Call("run_command", {"command": command, "background": True})])
        if len(results) == 1:
            return Reply(calls=[Call("job_wait", {"job_id": 1, "until": "MARK", "timeout_ms": 30000})])
        found = MARK.search(results[-1]) or MARK.search(results[0])
        if found is None:
            raise RuntimeError(f"the job's line never reached the model: {results}")
        latencies.append(time.monotonic() - float(found.group(1)))
        return Reply("seen")

    return ScriptedModel(default=answer)


def big_output_script(timings: list[float]) -> ScriptedModel:
    command = f"head -c {BIG_OUTPUT} /dev/zero | tr '\\0' x; echo; echo END; sleep 60"
    asked: list[float] = []

    def answer(request: Request) -> Reply:
        results = [str(m["content"]) for m in request.messages if m["role"] == "tool"]
        if not results:
            return Reply(calls=[Call("run_command", {"command": command, "background": True})])
        if len(results) == 1:
            return Reply(calls=[Call("job_wait", {"job_id": 1, "until": "END", "timeout_ms": 30000})])
        if len(results) == 2:
            asked.append(time.monotonic())
            return Reply(calls=[Call("job_output", {"job_id": 1, "since": 0})])
        if len(results) == 3:
            timings.append(time.monotonic() - asked[-1])
            return Reply(calls=[Call("job_kill", {"job_id": 1})])
        return Reply("done")

    return ScriptedModel(default=answer)


async def job_latency(runs: int, terminal: bool) -> dict[str, Any]:
    latencies: list[float] = []
    reads: list[float] = []
    with tempfile.TemporaryDirectory() as folder:
        for run in range(runs + 1):
            for model in (job_script(latencies), big_output_script(reads)):
                tmp = Path(folder) / f"run-{run}-{len(latencies)}-{len(reads)}"
                tmp.mkdir()
                capabilities = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": terminal}
                agent = scripted_agent(tmp, model, editor=True, capabilities=capabilities, default_mode="full-auto")
                async with agent as (client, session, editor):
                    assert isinstance(editor, FakeEditor)
                    if await client.prompt(session, "go") != "end_turn":
                        raise RuntimeError("the job prompt did not end")
            if run == 0:  # a warm-up
                latencies.clear()
                reads.clear()
    median = statistics.median(latencies) * 1000
    return {
        "output_to_model_ms": {"median": round(median, 1), "max": round(max(latencies) * 1000, 1)},
        "job_output_1MB_ms": round(statistics.median(reads) * 1000, 1),
        "goal_ms": GOAL_LATENCY_MS,
        "pass": median <= GOAL_LATENCY_MS,
    }


def repository(folder: Path, files: int) -> None:
    """A repository of `files` small files in folders of 100, committed, and one of them changed since."""
    for number in range(files):
        path = folder / f"pkg{number // 100:03d}" / f"mod{number:05d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"VALUE = {number}\n\n\ndef f{number}() -> int:\n    return VALUE\n")
    for name in DELAYS:
        (folder / f"{name}.txt").write_text(f"{name}\nfirst line\n")
    env = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "start"]):
        subprocess.run(["git", *args], cwd=folder, check=True, env={**os.environ, **env})
    (folder / "pkg000" / "mod00000.py").write_text("VALUE = -1\n")


def isolated_script(tasks: list[str]) -> DelayedModel:
    def answer(request: Request) -> Reply:
        task = child_task(request)
        done = [m for m in request.messages if m["role"] == "tool"]
        if task is None:
            if done:
                return Reply("done")
            calls = [
                Call("task", {"description": f"Edit {t}", "prompt": t, "kind": "general", "isolate": True})
                for t in tasks
            ]
            return Reply(calls=calls)
        if not done:
            return Reply(calls=[Call("read_file", {"path": f"{task}.txt"})])
        if len(done) == 1:
            edit = {"path": f"{task}.txt", "old_string": "first line", "new_string": f"changed by {task}"}
            return Reply(calls=[Call("edit_file", edit)])
        return Reply(f"{task} edited")

    return DelayedModel(default=answer)


async def time_isolated(tmp: Path, tasks: list[str]) -> float:
    work = tmp / "work"
    work.mkdir(parents=True)
    await anyio.to_thread.run_sync(repository, work, SMALL_REPOSITORY)
    model = isolated_script(tasks)
    async with tool_agent(tmp, model, mode="accept-edits") as (client, _, session, _):
        start = time.perf_counter()
        stop = await client.prompt(session, "edit them")
        elapsed = time.perf_counter() - start
    edited = [t for t in tasks if f"changed by {t}" in (work / f"{t}.txt").read_text()]
    if stop != "end_turn" or edited != tasks:
        raise RuntimeError(f"the isolated prompt did not go as scripted: {stop}, edited {edited} of {tasks}")
    return elapsed


async def isolated_writers(runs: int) -> dict[str, Any]:
    return await side_by_side(runs, time_isolated)


def worktree_cost(runs: int) -> dict[str, Any]:
    timings: dict[str, list[float]] = {"make": [], "changes": [], "remove": []}
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder) / "large"
        work.mkdir()
        repository(work, LARGE_REPOSITORY)
        owner = places.owner(Path(folder) / "private")
        for run in range(runs + 1):
            start = time.perf_counter()
            made = make(owner, work, name=f"general-{run}", cap=1 << 34)
            made_at = time.perf_counter()
            for name in DELAYS:
                (made.tree / f"{name}.txt").write_text("changed\n")
            if len(made.changes()) != len(DELAYS):
                raise RuntimeError("the worktree's changes were not found")
            read_at = time.perf_counter()
            made.remove()
            removed_at = time.perf_counter()
            if run:  # the first is a warm-up
                timings["make"].append(made_at - start)
                timings["changes"].append(read_at - made_at)
                timings["remove"].append(removed_at - read_at)
        files = made.files
    return {"files": files, **{f"{step}_ms": round(statistics.median(t) * 1000, 1) for step, t in timings.items()}}


async def main(runs: int) -> dict[str, Any]:
    return {
        "sub_agents": await sub_agents(runs),
        "isolated_writers": await isolated_writers(runs),
        "worktree_10k": await anyio.to_thread.run_sync(worktree_cost, runs),
        "jobs_local": await job_latency(runs, terminal=False),
        "jobs_terminal": await job_latency(runs, terminal=True),
    }


def print_report(report: dict[str, Any]) -> None:
    subs = report["sub_agents"]
    alone = ", ".join(f"{name} {seconds:.3f} s" for name, seconds in subs["alone_s"].items())
    verdict = "PASS" if subs["pass"] else "FAIL"
    print(f"sub-agents   together {subs['together_s']:.3f} s; alone: {alone}")
    print(f"             ratio to the slowest alone {subs['ratio']:.3f} (goal <= {subs['goal']})  {verdict}")
    isolated = report["isolated_writers"]
    alone = ", ".join(f"{name} {seconds:.3f} s" for name, seconds in isolated["alone_s"].items())
    verdict = "PASS" if isolated["pass"] else "FAIL"
    print(f"isolated     together {isolated['together_s']:.3f} s; alone: {alone}")
    print(f"             ratio to the slowest alone {isolated['ratio']:.3f} (goal <= {isolated['goal']})  {verdict}")
    tree = report["worktree_10k"]
    print(
        f"worktree     of {tree['files']:,} files: made in {tree['make_ms']} ms, its changes read in "
        f"{tree['changes_ms']} ms, removed with its branch in {tree['remove_ms']} ms"
    )
    for kind in ("local", "terminal"):
        jobs = report[f"jobs_{kind}"]
        latency = jobs["output_to_model_ms"]
        verdict = "PASS" if jobs["pass"] else "FAIL"
        print(
            f"jobs, {kind:<8} output to the model: median {latency['median']} ms, max {latency['max']} ms "
            f"(goal <= {jobs['goal_ms']:g} ms)  {verdict}; job_output of 1 MB {jobs['job_output_1MB_ms']} ms"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="the figures as JSON on stdout")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        os.environ["XDG_CACHE_HOME"] = cache  # the children's worktrees, out of the user's own cache
        result = anyio.run(main, args.runs)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_report(result)
    passed = ("sub_agents", "isolated_writers", "jobs_local", "jobs_terminal")
    ok = all(result[name]["pass"] for name in passed)
    sys.exit(0 if ok else 1)
