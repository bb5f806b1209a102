"""Startup benchmark for coder-agent, measured the way an ACP editor sees it.

The editor spawns the agent and talks JSON-RPC 2.0 over its stdin/stdout, one JSON object per line. This script
does the same and reports, as median / min / max over ``--runs`` runs (default 10), each figure preceded by one
discarded warm-up run:

  floor          ``python -c pass`` with this interpreter (sys.executable), spawn to exit.
  initialize     spawn of the agent to the response to ``initialize`` (time.perf_counter from just before Popen
                 to the arrival of the response line).
  session/new    spawn to the response to ``session/new`` (cwd: a fresh temp dir, no MCP servers), and
                 session/new alone (arrival of its response minus the time the request was sent).
  RSS            VmRSS summed over the agent's process tree (the process and all its descendants, found through
                 /proc/*/stat) right after the session/new response, in MB (VmRSS kB / 1024).
  exit on EOF    stdin is closed; time until the agent exits, and its exit code. An agent still alive after 5 s is
                 killed and reported as such.

Every line the agent writes to stdout must be a JSON-RPC 2.0 message; any other line fails the run and is printed.
Notifications (e.g. session/update) are skipped; requests from the agent to the client are answered with a
"method not found" error. The agent's stderr goes to a temp file, whose tail is shown when a run fails.

Goals, each with PASS/FAIL:
  initialize      median <= floor median + 150 ms
  RSS             median after session/new <= 60 MB
  exit on EOF     every run exits by itself with code 0 within 2 s

Usage (from the repository root; Linux, since RSS and exit timing use /proc and pidfd):

  uv run python bench/startup.py                                  # agent: <this python> -m coder_agent
  uv run python bench/startup.py --runs 20
  uv run python bench/startup.py --json                           # the figures as JSON on stdout
  uv run python bench/startup.py --agent .venv/bin/coder-agent    # --agent comes last: everything after
                                                                  # it is the agent command

The agent inherits the environment; when CODER_AGENT_MODEL is unset it gets CODER_AGENT_MODEL=openai/bench with an
unused local CODER_AGENT_API_BASE, so no key is needed (no model is called during startup).
Exit status: 0 when every run succeeded and every goal passed, 1 otherwise, 2 on usage errors.

Stdlib only (with bench/acp_bench.py): this script imports neither the project nor any third-party package.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import select
import selectors
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections import deque
from dataclasses import dataclass, field
from typing import IO, Any

from acp_bench import (
    AGENT_EPILOG,
    add_agent_option,
    check_agent_option,
    default_agent,
    finish,
    inherited_env,
    print_failures,
    stats,
    stderr_tail,
    tree_rss,
    warn_few_runs,
)

INIT_GOAL_MS = 150.0  # initialize within floor + this
RSS_GOAL_MB = 60.0
EOF_GOAL_S = 2.0
EOF_KILL_S = 5.0
MIN_RUNS = 10

INITIALIZE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": 1,
        "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True},
        "clientInfo": {"name": "bench", "version": "0"},
    },
}


def session_new(cwd: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}}


class RunFailure(Exception):
    """The run cannot go on: no response in time, the agent died, ..."""


class ErrorResponse(RunFailure):
    """The agent answered with a JSON-RPC error (or a malformed result): it is alive, so EOF can still be tested."""


@dataclass
class AgentRun:
    initialize_ms: float | None = None
    session_total_ms: float | None = None
    session_new_ms: float | None = None
    rss_mb: float | None = None
    tree_procs: int | None = None
    eof_exit_ms: float | None = None
    exit_code: int | None = None
    killed: bool = False
    agent_info: dict[str, Any] | None = None
    failures: list[str] = field(default_factory=list)


def clip(data: bytes, limit: int = 300) -> str:
    text = repr(data)
    return text if len(text) <= limit else text[:limit] + f"... ({len(data)} bytes)"


class Agent:
    """The spawned agent, with a line reader on its stdout that checks every line."""

    def __init__(self, cmd: list[str], env: dict[str, str], stderr: IO[bytes]) -> None:
        try:
            self.proc = subprocess.Popen(
                cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env, bufsize=0
            )
        except OSError as exc:
            raise RunFailure(f"cannot spawn {shlex.join(cmd)}: {exc}") from exc
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.stdin = self.proc.stdin
        self.fd = self.proc.stdout.fileno()
        self.buf = b""
        self.eof = False
        self.pending: deque[tuple[dict[str, Any], float]] = deque()
        self.bad_lines: list[str] = []

    # -- output ---------------------------------------------------------------------------------------------------

    def send(self, msg: dict[str, Any]) -> None:
        data = memoryview((json.dumps(msg) + "\n").encode())
        try:
            while data:
                written = self.stdin.write(data)
                data = data[written or 0 :]
        except (BrokenPipeError, ValueError) as exc:
            raise RunFailure(f"cannot write to the agent's stdin ({exc}); exit code {self.proc.poll()}") from exc

    # -- input ----------------------------------------------------------------------------------------------------

    def _read_chunk(self) -> None:
        """Read what is available (the fd is readable) and queue the complete lines it ends."""
        chunk = os.read(self.fd, 1 << 16)
        now = time.perf_counter()
        if not chunk:
            self.eof = True
            lines, self.buf = ([self.buf] if self.buf.strip() else []), b""
        else:
            *lines, self.buf = (self.buf + chunk).split(b"\n")
        for line in lines:
            self._take_line(line, now)

    def _take_line(self, line: bytes, now: float) -> None:
        try:
            msg = json.loads(line)
        except ValueError:
            self.bad_lines.append(f"non-JSON stdout line: {clip(line)}")
            return
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
            self.bad_lines.append(f"stdout line is not a JSON-RPC 2.0 message: {clip(line)}")
            return
        if "method" in msg and "id" in msg:  # a request from the agent: refuse it so that it does not wait on us
            reply = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "bench: not supported"}}
            with contextlib.suppress(RunFailure):
                self.send(reply)
            return
        self.pending.append((msg, now))

    def response(self, req_id: int, method: str, deadline: float) -> tuple[dict[str, Any], float]:
        """Wait for the response to request `req_id`; return it with its arrival time. Skips notifications."""
        with selectors.DefaultSelector() as sel:
            sel.register(self.fd, selectors.EVENT_READ)
            while True:
                while self.pending:
                    msg, at = self.pending.popleft()
                    if "method" not in msg and msg.get("id") == req_id:
                        if "error" in msg:
                            raise ErrorResponse(f"{method} returned an error: {json.dumps(msg['error'])[:300]}")
                        if not isinstance(msg.get("result"), dict):
                            raise ErrorResponse(f"{method} response has no result object: {json.dumps(msg)[:300]}")
                        return msg, at
                if self.eof:
                    with contextlib.suppress(subprocess.TimeoutExpired):  # it closed stdout; give it 1 s to exit
                        self.proc.wait(timeout=1)
                    raise RunFailure(
                        f"agent closed stdout before responding to {method}; "
                        + ("still running" if self.proc.returncode is None else f"exit code {self.proc.returncode}")
                    )
                remaining = deadline - time.perf_counter()
                if remaining <= 0:
                    raise RunFailure(f"no response to {method} in time (see --timeout)")
                if sel.select(remaining):
                    self._read_chunk()

    def close_and_wait(self, kill_after: float) -> tuple[float | None, int, bool]:
        """Close stdin and wait for the exit: (seconds to exit or None if killed, exit code, killed)."""
        try:
            pidfd: int | None = os.pidfd_open(self.proc.pid)
        except (AttributeError, OSError):
            pidfd = None  # fall back to polling every millisecond
        exited_at: float | None = None
        with selectors.DefaultSelector() as sel:
            if not self.eof:
                sel.register(self.fd, selectors.EVENT_READ)
            if pidfd is not None:
                sel.register(pidfd, selectors.EVENT_READ)
            start = time.perf_counter()
            self.stdin.close()
            deadline = start + kill_after
            while exited_at is None:
                if pidfd is None and self.proc.poll() is not None:
                    exited_at = time.perf_counter()
                    break
                remaining = deadline - time.perf_counter()
                if remaining <= 0:
                    break
                for key, _ in sel.select(remaining if pidfd is not None else min(remaining, 0.001)):
                    if key.fd == pidfd:
                        exited_at = time.perf_counter()
                    elif not self.eof:
                        self._read_chunk()
                        if self.eof:
                            sel.unregister(self.fd)
            # Whatever the agent wrote before exiting is still checked; do not wait on grandchildren holding stdout.
            while not self.eof and select.select([self.fd], [], [], 0)[0]:
                self._read_chunk()
        if pidfd is not None:
            os.close(pidfd)
        if exited_at is None:
            self.proc.kill()
            return None, self.proc.wait(), True
        return exited_at - start, self.proc.wait(), False

    def cleanup(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()


def run_floor(env: dict[str, str]) -> float:
    """`python -c pass`, spawn to exit, in ms."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", "pass"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    code = proc.wait()
    elapsed = (time.perf_counter() - start) * 1000
    if code != 0:
        raise RunFailure(f"python -c pass exited with {code}")
    return elapsed


def run_agent(cmd: list[str], env: dict[str, str], timeout: float) -> AgentRun:
    run = AgentRun()
    cwd = tempfile.mkdtemp(prefix="coder-agent-bench-")
    agent: Agent | None = None
    with tempfile.TemporaryFile() as log:
        try:
            start = time.perf_counter()
            agent = Agent(cmd, env, log)
            try:
                agent.send(INITIALIZE)
                msg, at = agent.response(1, "initialize", start + timeout)
                run.initialize_ms = (at - start) * 1000
                result = msg["result"]
                run.agent_info = {key: result.get(key) for key in ("protocolVersion", "agentInfo")}

                sent = time.perf_counter()
                agent.send(session_new(cwd))
                msg, at = agent.response(2, "session/new", sent + timeout)
                rss = tree_rss(agent.proc.pid)
                if not isinstance(msg["result"].get("sessionId"), str):
                    raise ErrorResponse(f"session/new result has no sessionId: {json.dumps(msg)[:300]}")
                run.session_total_ms = (at - start) * 1000
                run.session_new_ms = (at - sent) * 1000
                if rss is not None:
                    run.rss_mb, run.tree_procs = rss
            except ErrorResponse as exc:  # the agent is alive and answering: still test the exit on EOF
                run.failures.append(str(exc))

            elapsed, code, run.killed = agent.close_and_wait(EOF_KILL_S)
            if run.killed:
                run.failures.append(f"still alive {EOF_KILL_S:g} s after stdin EOF; killed\n{stderr_tail(log)}")
            else:
                run.exit_code, run.eof_exit_ms = code, elapsed * 1000 if elapsed is not None else None
                if code != 0:
                    run.failures.append(f"exited with code {code} on stdin EOF\n{stderr_tail(log)}")
        except RunFailure as exc:
            if agent is not None:
                agent.cleanup()
            run.failures.append(f"{exc}\n{stderr_tail(log)}")
        finally:
            if agent is not None:
                agent.cleanup()
                run.failures[:0] = agent.bad_lines
            shutil.rmtree(cwd, ignore_errors=True)
    return run


# -- report -----------------------------------------------------------------------------------------------------------


def collect(floors: list[float], runs: list[AgentRun]) -> dict[str, dict[str, Any]]:
    def of(name: str) -> list[float]:
        return [v for r in runs if (v := getattr(r, name)) is not None]

    return {
        "floor_ms": stats(floors),
        "initialize_ms": stats(of("initialize_ms")),
        "session_new_total_ms": stats(of("session_total_ms")),
        "session_new_ms": stats(of("session_new_ms")),
        "rss_mb": stats(of("rss_mb")),
        "eof_exit_ms": stats(of("eof_exit_ms")),
    }


def judge(figures: dict[str, dict[str, Any]], runs: list[AgentRun]) -> list[dict[str, Any]]:
    floor, init, rss = figures["floor_ms"]["median"], figures["initialize_ms"]["median"], figures["rss_mb"]["median"]
    init_limit = None if floor is None else floor + INIT_GOAL_MS
    eof_ok = bool(runs) and all(
        not r.killed and r.exit_code == 0 and r.eof_exit_ms is not None and r.eof_exit_ms <= EOF_GOAL_S * 1000
        for r in runs
    )
    return [
        {
            "figure": "initialize_ms",
            "goal": f"median <= floor + {INIT_GOAL_MS:g} ms",
            "limit": init_limit,
            "value": init,
            "pass": init is not None and init_limit is not None and init <= init_limit,
        },
        {
            "figure": "rss_mb",
            "goal": f"median <= {RSS_GOAL_MB:g} MB",
            "limit": RSS_GOAL_MB,
            "value": rss,
            "pass": rss is not None and rss <= RSS_GOAL_MB,
        },
        {
            "figure": "eof_exit_ms",
            "goal": f"every run exits with code 0 within {EOF_GOAL_S:g} s",
            "limit": EOF_GOAL_S * 1000,
            "value": figures["eof_exit_ms"]["max"],
            "pass": eof_ok,
        },
    ]


def print_table(report: dict[str, Any]) -> None:
    figures, goals = report["figures"], {g["figure"]: g for g in report["goals"]}

    def num(value: float | None, unit: str) -> str:
        return "-" if value is None else f"{value:.1f} {unit}"

    goal_text = {
        "initialize_ms": lambda g: f"<= floor+{INIT_GOAL_MS:g} = {num(g['limit'], 'ms')}",
        "rss_mb": lambda g: f"<= {RSS_GOAL_MB:g} MB",
        "eof_exit_ms": lambda g: f"code 0, <= {EOF_GOAL_S:g} s, every run",
    }
    rows = [
        ("python -c pass (floor)", "floor_ms", "ms"),
        ("spawn -> initialize", "initialize_ms", "ms"),
        ("spawn -> session/new", "session_new_total_ms", "ms"),
        ("session/new alone", "session_new_ms", "ms"),
        ("RSS after session/new", "rss_mb", "MB"),
        ("exit after stdin EOF", "eof_exit_ms", "ms"),
    ]
    print(f"coder-agent startup: {report['runs']} runs after 1 warm-up, median / min / max")
    print(f"python   {report['python']} ({report['executable']})")
    print(f"agent    {shlex.join(report['agent'])}")
    if report["agent_info"]:
        info = report["agent_info"]
        print(f"answers  protocolVersion {info['protocolVersion']}, agentInfo {json.dumps(info['agentInfo'])}")
    print()
    header = f"{'figure':<24}{'median':>11}{'min':>11}{'max':>11}{'n':>4}   {'goal':<32}result"
    print(header)
    print("-" * len(header))
    for label, key, unit in rows:
        fig = figures[key]
        line = f"{label:<24}{num(fig['median'], unit):>11}{num(fig['min'], unit):>11}{num(fig['max'], unit):>11}"
        line += f"{fig['n']:>4}"
        if key in goals:
            line += f"   {goal_text[key](goals[key]):<32}{'PASS' if goals[key]['pass'] else 'FAIL'}"
        print(line.rstrip())
    print()
    eof = report["eof"]
    codes = ", ".join(f"{code} x{eof['exit_codes'].count(code)}" for code in sorted(set(eof["exit_codes"]), key=str))
    print(f"EOF exit codes: {codes or '-'}; killed after {EOF_KILL_S:g} s: {eof['killed']}")
    if report["tree_procs"]:
        print(f"processes in the agent's tree at RSS time: {', '.join(map(str, sorted(set(report['tree_procs']))))}")
    print_failures(report)


# -- main -------------------------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Startup figures for an ACP agent: spawn -> initialize -> session/new, RSS, exit on EOF.",
        epilog=AGENT_EPILOG,
    )
    parser.add_argument("--runs", type=int, default=MIN_RUNS, help=f"measured runs (default {MIN_RUNS})")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds to wait for each response (default 20)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    add_agent_option(parser)
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    check_agent_option(parser, args)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    warn_few_runs(args.runs, MIN_RUNS)
    cmd = args.agent or default_agent()
    env = inherited_env()  # a self-hosted model needs no key; nothing is called during startup
    progress = sys.stderr.isatty()

    floors: list[float] = []
    runs: list[AgentRun] = []
    failures: list[str] = []
    agent_info = None
    for i in range(args.runs + 1):  # run 0 is the warm-up
        label = "warm-up" if i == 0 else f"run {i}"
        if progress:
            print(f"\r{label}/{args.runs} ...", end="", file=sys.stderr, flush=True)
        try:
            floor = run_floor(env)
            if i:
                floors.append(floor)
        except RunFailure as exc:
            failures.append(f"{label}: {exc}")
        run = run_agent(cmd, env, args.timeout)
        failures.extend(f"{label}: {failure}" for failure in run.failures)
        agent_info = agent_info or run.agent_info
        if i:
            runs.append(run)
        elif run.initialize_ms is None:
            failures.append("warm-up could not initialize the agent; no measured runs")
            break
    if progress:
        print("\r" + " " * 40 + "\r", end="", file=sys.stderr, flush=True)

    figures = collect(floors, runs)
    goals = judge(figures, runs)
    report = {
        "python": platform.python_version(),
        "executable": sys.executable,
        "agent": cmd,
        "runs": len(runs),
        "warmup": 1,
        "agent_info": agent_info,
        "figures": figures,
        "goals": goals,
        "eof": {
            "exit_codes": [r.exit_code for r in runs if r.exit_code is not None],
            "killed": sum(r.killed for r in runs),
        },
        "tree_procs": [r.tree_procs for r in runs if r.tree_procs is not None],
        "failures": failures,
        "ok": not failures and all(g["pass"] for g in goals),
    }
    return finish(report, args.json, print_table)


if __name__ == "__main__":
    sys.exit(main())
