"""MCP benchmark: what MCP servers add to `session/new`, and what an MCP tool call costs, in the hub and in the agent.

Part 1, the hub (`coder_agent.mcp.hub.McpHub` driven directly in this process, as the agent drives it: `connect`
then `aclose`, after the `mcp` import has been paid once; reported separately: a session's first connect pays it).
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

Part 2, the agent (`<this python> -m coder_agent` spawned over pipes, spoken to in JSON-RPC lines as an editor does,
with temp XDG config/data/state/cache dirs; one agent for every figure). Each session/new is timed from writing the
request to reading its response (the agent answers once every server has connected or failed), in a fresh temp cwd;
the bench then checks that as many server processes as asked for run under the agent, waits for the agent's
follow-up notification and closes the session with `session/close` (timed too: the servers exit before it answers),
so servers never pile up. Median / min / max over --runs runs after one warm-up per configuration:

  first session/new           the agent's first session (no servers; one sample), then its first session with an MCP
                              server (it pays the mcp import inside the agent; one sample). The first session also
                              starts the model library's import in a background thread: the timed runs begin once
                              the agent's CPU time has stopped growing.
  session/new, 0 servers      the floor
  session/new, 1 / 5 servers  for three kinds of stdio server (all 5 of one kind, so the slowest single server's
                              start is that kind's 1-server figure):
                                SDK          tests/support/mcp_servers/basic: imports mcp (CPU-bound)
                                slow_start   sleeps --idle s, then imports mcp (idle, then CPU-bound)
                                tiny         sleeps --idle s, then serves without mcp (idle only: the concurrency)
  session/close               after the 1- and 5-server runs
  MCP tool call               --agent-calls prompts (after 3 warm-ups) in a session with the `basic` server, against a
                              fake OpenAI-compatible model (tests/support/fake_llm.py, in this process) that first asks
                              for `mcp__basic__timed` {"ms": 0}, then answers "done". The tool has no annotations, so
                              the agent asks `session/request_permission` (default mode); the bench answers allow_once
                              at once. The server reports its tool's own start and end (time.monotonic, which is
                              CLOCK_MONOTONIC on Linux like the bench's arrival stamps, so the times compare across
                              processes). Figures: from the permission answer being written to the `completed`
                              tool_call_update arriving, minus the tool's own time (the call's overhead through the
                              agent), split into answer -> tool starts and tool ends -> update arrives; and from the
                              `tool_call` notification to the `completed` update, minus the tool's own time (the
                              whole tool phase, with the permission round trip).

Goals (PASS/FAIL), each "5 servers within 1.5x the slowest single server's start":
  hub:   connect 5 <= 1.5x connect 1, for the idle servers (the hub's concurrency) and, reported alongside, the SDK ones
  agent: session/new with 5 servers <= 1.5x session/new with 1, for each kind; SDK and slow_start servers are bounded
         by CPU cores (5 mcp imports on os.cpu_count() cores), tiny idle servers show the agent's concurrency

Usage (from the repository root; Linux, for /proc):

  uv run python bench/mcp.py [--runs 5] [--calls 50] [--idle 0.5] [--agent-calls 20] [--part all|hub|agent]

Exit status: 0 when the idle-server goals pass (hub and agent) and every agent request succeeded, 1 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
BENCH = Path(__file__).resolve().parent
# This file is named mcp.py: its folder, which Python puts first on sys.path, would shadow the mcp package. It goes
# last instead, for acp_bench: the installed mcp package is found first.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != BENCH]
sys.path.insert(0, str(ROOT))
sys.path.append(str(BENCH))

from acp_bench import (  # noqa: E402
    BenchFailure,
    JsonLinesAgent,
    Note,
    agent_env,
    cpu_times,
    default_agent,
    descendants,
    process_children,
)

from coder_agent.mcp.hub import McpHub  # noqa: E402
from coder_agent.mcp.types import McpServerSpec  # noqa: E402

if TYPE_CHECKING:
    from tests.support.fake_llm import FakeLLM


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


async def hub_main(args: argparse.Namespace) -> tuple[bool, float]:
    """Part 1; returns whether the idle-server goal passed, and the SDK server's median call overhead (ms)."""
    print("== the hub, in this process ==")
    started = time.perf_counter()
    import mcp.client.client
    import mcp.client.sse
    import mcp.client.streamable_http  # noqa: F401

    print(f"mcp import          {(time.perf_counter() - started) * 1000:7.1f} ms (once per agent process)")
    print(f"cpus                {os.cpu_count()}   runs {args.runs}   (the hub directly, without the agent)")

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

    sdk_overhead = 0.0
    for label, server in (("SDK ", spec("basic", "basic")), ("tiny", spec("tiny", "tiny"))):
        round_trips, overheads = await call_overhead(server, args.calls)
        print(f"call round trip {label}  {fmt(round_trips)}")
        print(f"call overhead {label}    {fmt(overheads)}   (round trip minus the tool's own time)")
        if label == "SDK ":
            sdk_overhead = statistics.median(overheads) * 1000

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
    return ok, sdk_overhead


# ---- part 2: through the spawned agent ---------------------------------------------------------------------------

AGENT_KINDS = (  # label, module, the variable that delays its start (by --idle seconds), goal is primary
    ("SDK", "basic", None, False),
    ("slow_start", "slow_start", "SLOW_START_SECONDS", False),
    ("tiny (idle)", "tiny", "TINY_START_SECONDS", True),
)
TOOL_WARMUPS = 3
FOLLOW_UP = "available_commands_update"  # the agent's notification just after a session opens
SERVER_MARK = b"tests.support.mcp_servers."


def acp_server(name: str, module: str, **env: str) -> dict[str, Any]:
    """An ACP stdio MCP server entry for a test server."""
    variables = [{"name": "PYTHONPATH", "value": str(ROOT)}, *({"name": k, "value": v} for k, v in env.items())]
    return {
        "name": name,
        "command": sys.executable,
        "args": ["-m", f"tests.support.mcp_servers.{module}"],
        "env": variables,
    }


class AgentPipe(JsonLinesAgent):
    """The spawned agent, read line by line; every arrival is stamped with time.monotonic().

    Requests from the agent: `session/request_permission` is answered at once with `allow_once` (the arrival and the
    moment the answer was written are kept in `permissions`); anything else gets "method not found" and is noted in
    `unexpected`.
    """

    def __init__(self, env: dict[str, str], stderr: IO[bytes]) -> None:
        super().__init__(default_agent(), env, stderr, clock=time.monotonic)
        self.permissions: list[tuple[float, float]] = []
        self.unexpected: list[str] = []

    def on_request(self, msg: dict[str, Any], line: bytes, now: float) -> None:
        if msg["method"] == "session/request_permission":
            self.send(
                {
                    "jsonrpc": "2.0",
                    "id": msg["id"],
                    "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}},
                }
            )
            self.permissions.append((now, time.monotonic()))
        else:
            self.unexpected.append(f"unexpected request from the agent: {line[:200]!r}")
            self.send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "bench: no"}})


def server_pids(root: int) -> list[int]:
    """The test MCP server processes among the descendants of `root` (zombies excluded)."""
    found = []
    for pid in descendants(root, process_children(skip_zombies=True)):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if SERVER_MARK in f.read():
                    found.append(pid)
        except OSError:
            pass
    return found


class AgentBench:
    def __init__(self, args: argparse.Namespace, agent: AgentPipe, temp: Path) -> None:
        self.args = args
        self.agent = agent
        self.temp = temp
        self.failures: list[str] = []

    def cwd(self) -> str:
        return tempfile.mkdtemp(dir=self.temp, prefix="cwd-")

    def new_session(self, servers: list[dict[str, Any]]) -> tuple[str, float, list[Note]]:
        ex = self.agent.request("session/new", {"cwd": self.cwd(), "mcpServers": servers}, self.args.timeout)
        session_id = ex.result["sessionId"]
        running = len(server_pids(self.agent.proc.pid))
        if running != len(servers):
            raise BenchFailure(f"session/new with {len(servers)} MCP servers answered with {running} of them running")
        return session_id, ex.seconds, ex.notes

    def close_session(self, session_id: str, notes: list[Note], *, follow_up_seen: bool = False) -> float:
        if not follow_up_seen and not self.agent.wait_update(session_id, FOLLOW_UP, 2.0, notes):
            self.failures.append(f"no {FOLLOW_UP} within 2 s of a session/new response")
        took = self.agent.request("session/close", {"sessionId": session_id}, self.args.timeout).seconds
        deadline = time.monotonic() + 3
        while (left := server_pids(self.agent.proc.pid)) and time.monotonic() < deadline:
            time.sleep(0.01)
        if left:
            raise BenchFailure(f"{len(left)} MCP server process(es) still running after session/close")
        return took

    def open_close(self, servers: list[dict[str, Any]]) -> tuple[float, float]:
        session_id, took, notes = self.new_session(servers)
        return took, self.close_session(session_id, notes)

    def repeat(self, servers: list[dict[str, Any]]) -> dict[str, list[float]]:
        """session/new and session/close times over --runs runs after one warm-up, and the CPU seconds each run
        took in the agent and in the servers (start to exit: counted once the agent has reaped them)."""
        self.open_close(servers)
        runs: dict[str, list[float]] = {"new": [], "close": [], "agent_cpu": [], "servers_cpu": []}
        pid = self.agent.proc.pid
        for _ in range(self.args.runs):
            own, children = cpu_times(pid)
            took, closed = self.open_close(servers)
            own_after, children_after = cpu_times(pid)
            runs["new"].append(took)
            runs["close"].append(closed)
            runs["agent_cpu"].append(own_after - own)
            runs["servers_cpu"].append(children_after - children)
        return runs

    def tool_calls(self, llm: FakeLLM) -> dict[str, list[float]]:
        """The MCP tool call figures over --agent-calls prompts (seconds)."""
        from tests.support.fake_llm import Reply

        session_id, _, notes = self.new_session([acp_server("basic", "basic")])
        self.agent.wait_update(session_id, FOLLOW_UP, 2.0, notes)
        figures: dict[str, list[float]] = {key: [] for key in ("call", "before", "after", "phase", "prompt", "own")}
        for i in range(TOOL_WARMUPS + self.args.agent_calls):
            llm.add(Reply.tool("mcp__basic__timed", {"ms": 0}), Reply("done"))
            self.agent.permissions.clear()
            prompt = [{"type": "text", "text": f"Call the timed tool ({i})."}]
            ex = self.agent.request("session/prompt", {"sessionId": session_id, "prompt": prompt}, self.args.timeout)
            if ex.result.get("stopReason") != "end_turn":
                raise BenchFailure(f"session/prompt ended with {ex.result.get('stopReason')!r}")
            shown = done = None
            content: Any = None
            for msg, _, at in ex.notes:
                update = (msg.get("params") or {}).get("update") or {}
                kind = update.get("sessionUpdate")
                if kind == "tool_call" and shown is None:
                    shown = at
                elif kind == "tool_call_update" and update.get("status") in ("completed", "failed"):
                    done, content = at, update.get("content")
                    if update["status"] == "failed":
                        raise BenchFailure(f"the MCP tool call failed: {json.dumps(update)[:300]}")
            if shown is None or done is None or len(self.agent.permissions) != 1:
                raise BenchFailure(
                    f"prompt {i}: expected a tool_call, one permission request and a completed update; got "
                    f"{shown is not None}, {len(self.agent.permissions)}, {done is not None}"
                )
            start, end = own_times(content, llm)
            answered = self.agent.permissions[0][1]
            if i >= TOOL_WARMUPS:
                figures["call"].append(done - answered - (end - start))
                figures["before"].append(start - answered)
                figures["after"].append(done - end)
                figures["phase"].append(done - shown - (end - start))
                figures["prompt"].append(ex.seconds)
                figures["own"].append(end - start)
        self.close_session(session_id, [], follow_up_seen=True)
        return figures


def own_times(content: Any, llm: FakeLLM) -> tuple[float, float]:
    """The tool's own start and end, from the completed update's text, or else from what the model was sent."""
    texts = [
        block["content"].get("text", "")
        for block in content or []
        if block.get("type") == "content" and isinstance(block.get("content"), dict)
    ]
    tool_messages = [m for m in llm.last_request.get("messages", []) if m.get("role") == "tool"]
    if tool_messages and isinstance(tool_messages[-1].get("content"), str):
        texts.append(tool_messages[-1]["content"])
    for text in texts:
        with contextlib.suppress(ValueError, TypeError, KeyError):
            data = json.loads(text)
            return float(data["start"]), float(data["end"])
    raise BenchFailure(f"the timed tool's start and end are not in its result: {json.dumps(content)[:300]}")


def agent_main(args: argparse.Namespace, hub_call_overhead: float | None) -> bool:
    """Part 2; returns whether the idle-server goal passed and every request succeeded."""
    from tests.support.fake_llm import FakeLLM

    print("== through the spawned agent ==")
    temp = Path(tempfile.mkdtemp(prefix="coder-agent-mcp-bench-"))
    stderr_path = temp / "agent-stderr.log"
    ok = True
    failures: list[str] = []
    try:
        with FakeLLM() as llm, stderr_path.open("wb") as log:
            env = agent_env(
                temp,
                CODER_AGENT_MODEL="openai/fake-model",
                CODER_AGENT_API_BASE=llm.base_url,
                CODER_AGENT_API_KEY="sk-test",
            )
            agent = AgentPipe(env, log)
            bench = AgentBench(args, agent, temp)
            try:
                ok = run_agent_figures(bench, llm, hub_call_overhead)
            except BenchFailure as exc:
                failures.append(str(exc))
                tail = stderr_path.read_text(errors="replace").splitlines()[-15:]
                failures.extend("  | " + line for line in tail)
            finally:
                code = agent.close()
                if code != 0:
                    failures.append(f"the agent exited with {code} on stdin EOF")
                failures[:0] = bench.failures + agent.unexpected
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    for failure in failures:
        print(f"FAILURE: {failure}")
    return ok and not failures


def run_agent_figures(bench: AgentBench, llm: FakeLLM, hub_call_overhead: float | None) -> bool:
    agent, args = bench.agent, bench.args
    init_took = agent.request(
        "initialize",
        {"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "bench-mcp", "version": "0"}},
        args.timeout,
    ).seconds
    first, _ = bench.open_close([])
    settled = agent.settle()
    print(f"cpus {os.cpu_count()}   runs {args.runs}   one agent   initialize {init_took * 1000:.0f} ms")
    print(
        f"first session/new, no server        {first * 1000:7.1f} ms (the agent's CPU then settled in {settled:.1f} s)"
    )
    cold, _ = bench.open_close([acp_server("s0", "basic")])
    print(f"first session/new, 1 SDK server     {cold * 1000:7.1f} ms (pays the mcp import in the agent)")
    zero = bench.repeat([])
    print(f"session/new, 0 servers              {fmt(zero['new'])}")

    idle = f"{args.idle:g}"
    results: list[tuple[str, list[float], list[float], bool, float]] = []
    for label, module, delay_var, primary in AGENT_KINDS:
        env = {delay_var: idle} if delay_var else {}
        name = f"{label}{f' {idle} s' if delay_var else ''}"
        one = bench.repeat([acp_server("s0", module, **env)])
        print(f"session/new, 1 {name:<20} {fmt(one['new'])}")
        five = bench.repeat([acp_server(f"s{i}", module, **env) for i in range(5)])
        print(f"session/new, 5 {name:<20} {fmt(five['new'])}")
        print(
            f"  session/close 1 / 5: median {statistics.median(one['close']) * 1000:.1f} / "
            f"{statistics.median(five['close']) * 1000:.1f} ms;  CPU per new+close of 5: agent "
            f"{statistics.median(five['agent_cpu']) * 1000:.0f} ms, servers "
            f"{statistics.median(five['servers_cpu']) * 1000:.0f} ms (start to exit)"
        )
        results.append((name, one["new"], five["new"], primary, statistics.median(five["servers_cpu"])))

    calls = bench.tool_calls(llm)
    own = statistics.median(calls["own"]) * 1e6
    print(
        f"MCP tool call: {args.agent_calls} prompts calling basic/timed(ms=0), whose own time is {own:.0f} us; "
        "the bench grants the permission at once"
    )
    for label, key in (
        ("permission answer -> result shown, minus own time", "call"),
        ("  answer written -> tool starts in the server", "before"),
        ("  tool returns -> completed update arrives", "after"),
        ("tool_call shown -> result shown, minus own time", "phase"),
        ("whole prompt: 2 model calls + the tool call", "prompt"),
    ):
        print(f"  {label:<52}{fmt(calls[key])}")
    if hub_call_overhead is not None:
        added = statistics.median(calls["call"]) * 1000 - hub_call_overhead
        print(
            f"  the first figure minus the hub's own call overhead (SDK, {hub_call_overhead:.1f} ms): {added:+.1f} ms"
        )

    ok = True
    cores = os.cpu_count() or 1
    for name, single, many, primary, servers_cpu in results:
        ratio = statistics.median(many) / statistics.median(single)
        passed = ratio <= 1.5
        note = (
            ""
            if passed or primary
            else f"  (CPU-bound: the 5 servers use {servers_cpu:.1f} s of CPU from start to exit, "
            f"{servers_cpu / cores:.1f} s on {cores} cores)"
        )
        print(
            f"goal agent {name:<17}: session/new 5 <= 1.5x the slowest single server's start "
            f"({statistics.median(single) * 1000:.0f} ms): {ratio:.2f}x  {'PASS' if passed else 'FAIL'}{note}"
        )
        ok = ok and (passed or not primary)
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--calls", type=int, default=50, help="hub.call calls per server kind (part 1)")
    parser.add_argument("--idle", type=float, default=0.5, help="start delay of the idle servers, seconds")
    parser.add_argument("--agent-calls", type=int, default=20, help="prompts with an MCP tool call (part 2)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for each agent response")
    parser.add_argument("--part", choices=("all", "hub", "agent"), default="all")
    args = parser.parse_args()
    if args.runs < 1 or args.calls < 1 or args.agent_calls < 1:
        parser.error("--runs, --calls and --agent-calls must be at least 1")
    ok, hub_overhead = True, None
    if args.part in ("all", "hub"):
        ok, hub_overhead = anyio.run(hub_main, args)
    if args.part in ("all", "agent"):
        if args.part == "all":
            print()
        ok = agent_main(args, hub_overhead) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
