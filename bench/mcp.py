"""MCP benchmark: what MCP servers add to `session/new`, and what the hub adds to a tool call.

The agent does not wire MCP into `session/new` yet, so this drives `coder_agent.mcp_hub.McpHub` directly, the way
the agent will: `connect(servers)` then `aclose()`, in one process, after the `mcp` import has been paid once
(reported separately: a session's first connect pays it).

Figures (median / min / max over --runs runs, after one discarded warm-up):

  mcp import        the first import of the mcp client modules in this process (one sample)
  connect 0         hub entered, connect([]), closed: the floor
  connect 1 / 5     stdio servers written with the mcp SDK (tests/support/mcp_servers/crashy). Each spends ~0.5-1 s
                    of CPU importing mcp, so 5 of them on a 2-core machine measure the CPU more than the hub
  idle 1 / 5        hand-written servers without mcp (tests/support/mcp_servers/tiny) that sleep --idle seconds
                    before serving: this isolates the hub's concurrency
  close             aclose() after the connect 5 runs
  call overhead     hub.call round trip of the `timed` tool minus the time the server itself reports between the
                    request's arrival in the tool and its return (--calls calls each; SDK server and tiny server)

Goals (PASS/FAIL): connect of 5 servers within 1.5x the single server's start, for the idle servers (the hub's
concurrency) and, reported alongside, for the SDK servers (bounded by CPU cores: 5 imports on os.cpu_count()).

Usage (from the repository root):  uv run python bench/mcp.py [--runs 5] [--calls 50] [--idle 0.5]
Exit status: 0 when the idle-server goal passes, 1 otherwise.
"""

from __future__ import annotations

import argparse
import io
import os
import resource
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
# This file is named mcp.py: its folder, which Python puts first on sys.path, would shadow the mcp package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

from coder_agent.mcp_hub import McpHub, McpServerSpec  # noqa: E402


def spec(name: str, module: str, **env: str) -> McpServerSpec:
    return McpServerSpec(
        name=name,
        transport="stdio",
        command=sys.executable,
        args=["-m", f"tests.support.mcp_servers.{module}"],
        env=env,
        cwd=str(ROOT),
    )


def fmt(samples: list[float]) -> str:
    ms = [s * 1000 for s in samples]
    return f"median {statistics.median(ms):7.1f} ms   min {min(ms):7.1f}   max {max(ms):7.1f}"


async def repeat(runs: int, once: Callable[[], Awaitable[float]]) -> list[float]:
    await once()  # warm-up
    return [await once() for _ in range(runs)]


CPU: dict[str, list[float]] = {"hub": [], "servers": []}


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def connect_time(servers: list[McpServerSpec], closes: list[float] | None = None) -> float:
    async with McpHub(log_to=io.StringIO()) as hub:
        started, cpu, servers_cpu = time.perf_counter(), time.process_time(), children_cpu()
        statuses = await hub.connect(servers, timeout=60)
        took = time.perf_counter() - started
        CPU["hub"].append(time.process_time() - cpu)
        failed = [s.error for s in statuses if s.state != "connected"]
        if failed:
            raise SystemExit(f"a server failed to connect: {failed[0]}")
        closing = time.perf_counter()
        await hub.aclose()
        if closes is not None:
            closes.append(time.perf_counter() - closing)
    CPU["servers"].append(children_cpu() - servers_cpu)  # reaped servers only: includes their exit
    return took


async def call_overhead(server: McpServerSpec, calls: int) -> tuple[list[float], list[float]]:
    """Round trips and overheads (round trip minus the server's own time) of `timed(ms=0)`."""
    round_trips, overheads = [], []
    async with McpHub(log_to=io.StringIO()) as hub:
        await hub.connect([server], timeout=60)
        name = f"mcp__{server.name}__timed"
        for i in range(calls + 3):
            started = time.perf_counter()
            result = await hub.call(name, {"ms": 0})
            took = time.perf_counter() - started
            own = result.structured["end"] - result.structured["start"]
            if i >= 3:  # warm-up
                round_trips.append(took)
                overheads.append(took - own)
    return round_trips, overheads


async def main(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    import mcp.client.client
    import mcp.client.sse
    import mcp.client.streamable_http  # noqa: F401

    print(f"mcp import          {(time.perf_counter() - started) * 1000:7.1f} ms (once per agent process)")
    print(f"cpus                {os.cpu_count()}   runs {args.runs}   (the hub directly: the agent has no MCP yet)")

    zero = await repeat(args.runs, lambda: connect_time([]))
    print(f"connect 0           {fmt(zero)}")

    one = await repeat(args.runs, lambda: connect_time([spec("s0", "crashy")]))
    print(f"connect 1 (SDK)     {fmt(one)}")
    closes: list[float] = []
    CPU["hub"].clear()
    CPU["servers"].clear()
    five = await repeat(args.runs, lambda: connect_time([spec(f"s{i}", "crashy") for i in range(5)], closes))
    print(f"connect 5 (SDK)     {fmt(five)}")
    hub_cpu, server_cpu = statistics.median(CPU["hub"]) * 1000, statistics.median(CPU["servers"]) * 1000
    print(f"  CPU per connect 5: hub {hub_cpu:.0f} ms, the 5 servers {server_cpu:.0f} ms (start to exit)")
    print(f"close 5 (SDK)       {fmt(closes[1:])}")

    idle = str(args.idle)
    idle_one = await repeat(args.runs, lambda: connect_time([spec("t0", "tiny", TINY_START_SECONDS=idle)]))
    print(f"idle 1 ({args.idle:g} s start)  {fmt(idle_one)}")
    idle_five = await repeat(
        args.runs, lambda: connect_time([spec(f"t{i}", "tiny", TINY_START_SECONDS=idle) for i in range(5)])
    )
    print(f"idle 5 ({args.idle:g} s start)  {fmt(idle_five)}")

    for label, server in (("SDK ", spec("basic", "basic")), ("tiny", spec("tiny", "tiny"))):
        round_trips, overheads = await call_overhead(server, args.calls)
        print(f"call round trip {label}  {fmt(round_trips)}")
        print(f"call overhead {label}    {fmt(overheads)}   (round trip minus the tool's own time)")

    ok = True
    for label, single, many, primary in (
        ("idle servers", idle_one, idle_five, True),
        ("SDK servers ", one, five, False),
    ):
        ratio = statistics.median(many) / statistics.median(single)
        passed = ratio <= 1.5
        note = "" if passed or primary else f"  (CPU-bound: 5 mcp imports on {os.cpu_count()} cores)"
        print(f"goal {label}: connect 5 <= 1.5x connect 1: {ratio:.2f}x  {'PASS' if passed else 'FAIL'}{note}")
        ok = ok and (passed or not primary)
    return 0 if ok else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--idle", type=float, default=0.5, help="start delay of the idle servers, seconds")
    sys.exit(anyio.run(main, parser.parse_args()))
