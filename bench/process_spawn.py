"""Spawn benchmark: what `coder_agent.process.spawn_group` (a new process group announced to the reaper) costs over a
plain `anyio.open_process(..., start_new_session=True)`, the call local commands and stdio MCP servers used before.

Figures, in milliseconds, median / p95 / min / max over --runs spawns of each kind (interleaved, after warm-ups):

  plain          `anyio.open_process(["true"], start_new_session=True)`: the call's own time (until it returns).
  spawn_group    `spawn_group(["true"])`: the same plus the announcement to the reaper (one non-blocking write).
  overhead       spawn_group median minus plain median.
  first spawn    the first `spawn_group` of the process, which also starts the reaper (a fork/exec that does not
                 wait for the reaper's interpreter), minus the plain median.
  stop           `stop_group` of an exited `true` (the withdrawal from the reaper included).
  announce       the reaper's own share, measured alone: one withdrawal and one announcement of a live group, µs.

Goals, each with PASS/FAIL: overhead <= 1 ms; first spawn <= plain median + 25 ms.

Usage: uv run python bench/process_spawn.py [--runs 200] [--json]. Linux or macOS (process groups).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from acp_bench import stats  # noqa: E402

from coder_agent.process import _reaper, reaper_pid, spawn_group, stop_group  # noqa: E402

QUIET: dict[str, Any] = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}


async def plain() -> float:
    started = time.perf_counter()
    process = await anyio.open_process(["true"], start_new_session=True, **QUIET)
    took = time.perf_counter() - started
    await process.wait()
    await process.aclose()
    return took


async def grouped() -> tuple[float, float]:
    started = time.perf_counter()
    process = await spawn_group(["true"], **QUIET)
    took = time.perf_counter() - started
    await process.wait()
    stopping = time.perf_counter()
    await stop_group(process)
    return took, time.perf_counter() - stopping


async def announcement(runs: int) -> float:
    """The median time of withdrawing and announcing a (live) group again: the reaper's share of a spawn and a stop."""
    process = await spawn_group(["sleep", "60"], **QUIET)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        _reaper.forget(process.pid)
        _reaper.watch(process.pid)
        times.append(time.perf_counter() - started)
    await stop_group(process)
    return statistics.median(times)


async def measure(runs: int) -> dict[str, Any]:
    for _ in range(5):
        await plain()
    warm = statistics.median([await plain() for _ in range(20)])
    assert reaper_pid() is None, "the reaper starts on the first spawn_group, not before"
    first, _ = await grouped()
    reaper = reaper_pid()
    plain_ms: list[float] = []
    group_ms: list[float] = []
    stop_ms: list[float] = []
    for run in range(runs):
        if run % 2:
            plain_ms.append(await plain() * 1000)
        spawn, stop = await grouped()
        group_ms.append(spawn * 1000)
        stop_ms.append(stop * 1000)
        if not run % 2:
            plain_ms.append(await plain() * 1000)
    announce_us = await announcement(runs) * 1e6
    overhead = statistics.median(group_ms) - statistics.median(plain_ms)
    first_extra = (first - warm) * 1000
    failures = []
    if overhead > 1.0:
        failures.append(f"spawn_group costs {overhead:.3f} ms more than a plain spawn (goal: <= 1 ms)")
    if first_extra > 25.0:
        failures.append(f"the first spawn_group costs {first_extra:.1f} ms more (goal: <= 25 ms)")
    return {
        "runs": runs,
        "plain_ms": stats(plain_ms, p95=True),
        "spawn_group_ms": stats(group_ms, p95=True),
        "overhead_ms": round(overhead, 3),
        "first_spawn_extra_ms": round(first_extra, 3),
        "stop_ms": stats(stop_ms, p95=True),
        "announce_and_withdraw_us": round(announce_us, 2),
        "reaper_pid": reaper,
        "failures": failures,
        "ok": not failures,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = anyio.run(measure, args.runs)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0 if report["ok"] else 1
    for key in ("plain_ms", "spawn_group_ms", "stop_ms"):
        s = report[key]
        print(f"{key:16} median {s['median']:.3f}  p95 {s['p95']:.3f}  min {s['min']:.3f}  max {s['max']:.3f}")
    print(f"{'overhead_ms':16} {report['overhead_ms']:.3f}  (goal <= 1 ms)")
    print(f"{'announce+withdraw':16} {report['announce_and_withdraw_us']:.2f} µs (the reaper's share)")
    print(f"{'first spawn':16} {report['first_spawn_extra_ms']:+.1f} ms over a plain spawn (goal <= 25 ms)")
    for failure in report["failures"]:
        print(f"FAIL: {failure}")
    print(f"\noverall: {'PASS' if report['ok'] else 'FAIL'}")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
