"""Stored-session benchmark for coder-agent, through the real agent as an ACP editor sees it.

A temp XDG_DATA_HOME is filled, with `coder_agent.store.SessionStore` and the generators of bench/sessions_store.py,
with ``--sessions`` small stored sessions (default 1,000, over 7 working directories) and one big one of ``--turns``
turns (default 200: prompts, tool calls with file contents and diffs, streamed answers, ~7,000 replay events, ~4 MB).
Then the agent is spawned (``<this python> -m coder_agent``, JSON-RPC 2.0 lines on its stdin/stdout, its config and
data folders pointed at the temp dirs) and, after ``initialize``, this script times, from writing a request to
reading its response, as median / min / max over ``--runs`` runs (default 10) after one discarded warm-up:

  list, first page       ``session/list`` with no params (the 50 newest sessions)
  list, all pages        every page, following ``nextCursor`` until there is none (the sum of the round trips)
  list, one cwd          the first page of ``session/list`` with ``cwd`` = one of the 7 working directories
  load, big session      ``session/load`` of the big session (its stored ``cwd``, ``mcpServers: []``), INCLUDING the
                         replayed ``session/update`` notifications that precede the response: their number and bytes
                         are reported (and must be one per stored event), and so is the arrival of the first one.
                         The agent's follow-up notification (available_commands_update, sent 20 ms after the
                         session opens) usually lands in the middle of the replay: it is counted apart. After each
                         load the session is closed with ``session/close`` (not timed) once that notification has
                         arrived, so every load starts from the same state and nothing left over lands in the next.

Warm runs share one agent: its store has already parsed the listing sidecars. What an editor sees first after it
spawns the agent is reported too, for information: ``--cold-runs`` fresh agents (default 5), each timing its first
``session/list`` (every sidecar parsed) and then its first ``session/load`` (which also pays the agent's first-session
imports). The first session the agent opens starts importing the model library in a background thread; the warm
runs begin only once the agent's CPU time has stopped growing, so that import does not share the measurements.
The files are fresh in the page cache in every case.

Goals (PASS/FAIL), on the warm medians:  list, first page < 300 ms;  load, big session < 300 ms.

Usage (from the repository root; Linux, for /proc):

  uv run python bench/sessions.py
  uv run python bench/sessions.py --runs 20 --cold-runs 3
  uv run python bench/sessions.py --sessions 5000 --turns 400
  uv run python bench/sessions.py --json          # the figures as JSON on stdout

The agent gets CODER_AGENT_MODEL=openai/bench with an unused local CODER_AGENT_API_BASE (no key, no model call) and
temp XDG_CONFIG_HOME, XDG_DATA_HOME, XDG_STATE_HOME and XDG_CACHE_HOME; every temp dir is removed at the end.
Exit status: 0 when every request succeeded and both goals passed, 1 otherwise, 2 on usage errors.

Stdlib + coder_agent.store (to write the sessions) + bench/acp_bench.py; the agent is only spoken to over its pipes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
# The repo root for coder_agent, bench/ for sessions_store and acp_bench. (bench/ also holds mcp.py, which would
# shadow the mcp package; nothing imported here imports mcp.)
for _path in (str(BENCH), str(ROOT)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from acp_bench import (  # noqa: E402
    STDERR_TAIL_LINES,
    BenchFailure,
    JsonLinesAgent,
    agent_env,
    default_agent,
    finish,
    print_failures,
    stats,
    warn_few_runs,
)
from sessions_store import big_session, small_session  # noqa: E402

from coder_agent.store import SessionStore  # noqa: E402

GOAL_MS = 300.0
MIN_RUNS = 10
BIG_ID = "sess_big"
FILTER_CWD = "/home/dev/project_3"  # one of small_session's 7 working directories
FOLLOW_UP = "available_commands_update"  # what the agent sends just after a session opens

INITIALIZE = {
    "protocolVersion": 1,
    "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True},
    "clientInfo": {"name": "bench-sessions", "version": "0"},
}


class Bench:
    def __init__(self, args: argparse.Namespace, temp: Path) -> None:
        self.args = args
        self.env = agent_env(temp)
        self.cmd = default_agent()
        self.stderr_path = temp / "agent-stderr.log"
        self.big_cwd = ""
        self.big_events = 0
        self.failures: list[str] = []

    def spawn(self, log: IO[bytes]) -> JsonLinesAgent:
        agent = JsonLinesAgent(self.cmd, self.env, log)
        try:
            result = agent.request("initialize", INITIALIZE, self.args.timeout).result
            if not (result.get("agentCapabilities") or {}).get("loadSession"):
                raise BenchFailure(f"the agent does not advertise loadSession: {json.dumps(result)[:300]}")
        except BaseException:
            agent.close()
            raise
        return agent

    # -- one measure of each kind --

    def list_first(self, agent: JsonLinesAgent, cwd: str | None = None) -> float:
        params = {} if cwd is None else {"cwd": cwd}
        ex = agent.request("session/list", params, self.args.timeout)
        sessions = ex.result.get("sessions")
        expected = min(50, self.args.sessions + 1)
        if not isinstance(sessions, list) or not sessions or (cwd is None and len(sessions) != expected):
            raise BenchFailure(f"session/list first page: {len(sessions or [])} sessions, expected {expected}")
        if cwd is not None and any(s.get("cwd") != cwd for s in sessions):
            raise BenchFailure(f"session/list with cwd {cwd} listed a session of another cwd")
        return ex.ms

    def list_all(self, agent: JsonLinesAgent) -> tuple[float, int, int]:
        """All pages: total ms, sessions, pages."""
        total, count, pages, cursor = 0.0, 0, 0, None
        while True:
            ex = agent.request("session/list", {} if cursor is None else {"cursor": cursor}, self.args.timeout)
            total += ex.ms
            count += len(ex.result.get("sessions") or [])
            pages += 1
            cursor = ex.result.get("nextCursor")
            if cursor is None:
                break
        if count != self.args.sessions + 1:
            raise BenchFailure(f"session/list over all pages: {count} sessions, expected {self.args.sessions + 1}")
        return total, count, pages

    def load(self, agent: JsonLinesAgent) -> dict[str, Any]:
        """One session/load of the big session, then session/close (not timed)."""
        ex = agent.request(
            "session/load", {"sessionId": BIG_ID, "cwd": self.big_cwd, "mcpServers": []}, self.args.timeout
        )
        updates = [
            (msg["params"].get("update") or {}, size, at)
            for msg, size, at in ex.notes
            if msg.get("method") == "session/update" and (msg.get("params") or {}).get("sessionId") == BIG_ID
        ]
        # The agent's follow-up (available_commands_update) is scheduled 20 ms after the load starts, so it can
        # arrive in the middle of the replay: it is counted apart from the replayed events.
        replayed = [(size, at) for update, size, at in updates if update.get("sessionUpdate") != FOLLOW_UP]
        follow_ups = len(updates) - len(replayed)
        if len(replayed) != self.big_events:
            self.failures.append(f"session/load replayed {len(replayed)} updates, expected {self.big_events}")
        if not follow_ups and not agent.wait_update(BIG_ID, FOLLOW_UP, 2.0):
            self.failures.append(f"no {FOLLOW_UP} within 2 s of the session/load response")
        agent.request("session/close", {"sessionId": BIG_ID}, self.args.timeout)
        return {
            "ms": ex.ms,
            "first_update_ms": (replayed[0][1] - ex.sent) * 1000 if replayed else None,
            "updates": len(replayed),
            "update_bytes": sum(size for size, _ in replayed),
            "follow_ups": follow_ups,
            "response_bytes": ex.size,
        }

    # -- the runs --

    def cold(self) -> dict[str, list[float]]:
        """First list and first load of fresh agents."""
        lists: list[float] = []
        loads: list[float] = []
        for _ in range(self.args.cold_runs):
            with self.stderr_path.open("wb") as log:
                agent = self.spawn(log)
                try:
                    lists.append(self.list_first(agent))
                    loads.append(self.load(agent)["ms"])
                finally:
                    code = agent.close()
                if code != 0:
                    self.failures.append(f"a cold-run agent exited with {code} on stdin EOF")
        return {"list_first_ms": lists, "load_ms": loads}

    def warm(self) -> dict[str, Any]:
        runs = self.args.runs
        with self.stderr_path.open("wb") as log:
            agent = self.spawn(log)
            try:
                self.list_first(agent)  # the first list parses every sidecar: warm-up
                self.load(agent)  # the first session starts the model library's background import: warm-up
                settled = agent.settle()
                first = [self.list_first(agent) for _ in range(runs + 1)][1:]
                walks = [self.list_all(agent) for _ in range(runs + 1)][1:]
                by_cwd = [self.list_first(agent, FILTER_CWD) for _ in range(runs + 1)][1:]
                loads = [self.load(agent) for _ in range(runs + 1)][1:]
            finally:
                code = agent.close()
            if code != 0:
                self.failures.append(f"the agent exited with {code} on stdin EOF")
        return {
            "settle_s": settled,
            "list_first_ms": first,
            "list_all_ms": [w[0] for w in walks],
            "pages": walks[0][2],
            "list_cwd_ms": by_cwd,
            "loads": loads,
        }


def fill_store(root: Path, sessions: int, turns: int) -> dict[str, Any]:
    store = SessionStore(root)
    started = time.perf_counter()
    for n in range(sessions):
        store.save(small_session(n))
    big = big_session(BIG_ID, turns)
    store.save(big)
    return {
        "fill_s": time.perf_counter() - started,
        "cwd": big.cwd,
        "messages": len(big.messages),
        "events": len(big.events),
        "file_bytes": (root / f"{BIG_ID}.json").stat().st_size,
    }


def stderr_tail(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()[-STDERR_TAIL_LINES:]
    except OSError:
        return ""
    return "\n".join("      | " + line for line in lines)


def print_report(report: dict[str, Any]) -> None:
    store, warm, cold = report["store"], report["warm"], report["cold"]

    def row(label: str, fig: dict[str, Any], goal: str = "") -> None:
        if fig["n"] == 0:
            print(f"{label:<38}{'-':>10}")
            return
        line = f"{label:<38}{fig['median']:>9.1f} {fig['min']:>9.1f} {fig['max']:>9.1f} {fig['n']:>4}"
        print(f"{line}   {goal}".rstrip())

    print(f"coder-agent stored sessions, through the spawned agent   python {report['python']}   cpus {os.cpu_count()}")
    print(
        f"store: {report['sessions']} small sessions + 1 big ({report['turns']} turns, {store['messages']} messages, "
        f"{store['events']} replay events, {store['file_bytes']:,} bytes) written in {store['fill_s']:.1f} s"
    )
    if warm:
        print(
            f"warm runs: one agent, {report['runs']} runs after 1 warm-up (agent CPU settled "
            f"{warm['settle_s']:.1f} s after its first load)"
        )
    print()
    header = f"{'ms':<38}{'median':>9} {'min':>9} {'max':>9} {'n':>4}   goal"
    print(header)
    print("-" * (len(header) + 20))
    goals = {g["figure"]: g for g in report["goals"]}

    def verdict(key: str) -> str:
        g = goals[key]
        return f"< {GOAL_MS:g} ms  {'PASS' if g['pass'] else 'FAIL'}"

    if warm:
        row("session/list, first page", warm["list_first_ms"], verdict("list_first_ms"))
        row(f"session/list, all {warm['pages']} pages (sum)", warm["list_all_ms"])
        row("session/list, first page, one cwd", warm["list_cwd_ms"])
        row("session/load, big session", warm["load_ms"], verdict("load_ms"))
        row("  first replayed update arrives", warm["first_update_ms"])
    if cold["list_first_ms"]["n"]:
        row("fresh agent: first session/list", cold["list_first_ms"], "(info)")
        row("fresh agent: first session/load", cold["load_ms"], "(info)")
    print()
    if warm:
        replay = warm["replay"]
        print(
            f"session/load replay: {replay['updates']} session/update notifications before the response "
            f"(expected {store['events']}), {replay['update_bytes']:,} bytes; response {replay['response_bytes']} bytes"
        )
        print(
            f"  the agent's {FOLLOW_UP} arrived before the response (mid-replay) in "
            f"{warm['follow_ups_before_response']} of {report['runs']} loads; it is not counted above"
        )
    print_failures(report)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="session/list and session/load timings through the spawned agent, with a 1,000-session store."
    )
    parser.add_argument("--sessions", type=int, default=1000, help="small stored sessions (default 1000)")
    parser.add_argument("--turns", type=int, default=200, help="turns of the big session (default 200)")
    parser.add_argument("--runs", type=int, default=MIN_RUNS, help=f"warm runs per figure (default {MIN_RUNS})")
    parser.add_argument("--cold-runs", type=int, default=5, help="fresh agents for the first-request figures")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for each response")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.cold_runs < 0 or args.sessions < 50 or args.turns < 1:
        parser.error("--runs >= 1, --cold-runs >= 0, --sessions >= 50 and --turns >= 1, please")
    warn_few_runs(args.runs, MIN_RUNS)

    temp = Path(tempfile.mkdtemp(prefix="coder-agent-sessions-bench-"))
    bench = Bench(args, temp)
    warm: dict[str, Any] | None = None
    cold: dict[str, list[float]] = {"list_first_ms": [], "load_ms": []}
    try:
        # Where platformdirs puts the agent's store on Linux: <XDG_DATA_HOME>/coder-agent/sessions. The all-pages
        # walk checks that the agent lists every session written here.
        store = fill_store(Path(bench.env["XDG_DATA_HOME"]) / "coder-agent" / "sessions", args.sessions, args.turns)
        bench.big_cwd, bench.big_events = store["cwd"], store["events"]
        try:
            warm = bench.warm()
            cold = bench.cold()
        except BenchFailure as exc:
            bench.failures.append(f"{exc}\n{stderr_tail(bench.stderr_path)}")
    finally:
        shutil.rmtree(temp, ignore_errors=True)

    warm_figures: dict[str, Any] | None = None
    if warm is not None:
        loads = warm["loads"]
        warm_figures = {
            "settle_s": warm["settle_s"],
            "pages": warm["pages"],
            "list_first_ms": stats(warm["list_first_ms"], 2),
            "list_all_ms": stats(warm["list_all_ms"], 2),
            "list_cwd_ms": stats(warm["list_cwd_ms"], 2),
            "load_ms": stats([x["ms"] for x in loads], 2),
            "first_update_ms": stats([x["first_update_ms"] for x in loads if x["first_update_ms"] is not None], 2),
            "replay": {key: loads[-1][key] for key in ("updates", "update_bytes", "response_bytes")},
            "follow_ups_before_response": sum(x["follow_ups"] for x in loads),
        }
    goals = []
    for key in ("list_first_ms", "load_ms"):
        value = warm_figures[key]["median"] if warm_figures else None
        goals.append(
            {"figure": key, "limit_ms": GOAL_MS, "value": value, "pass": value is not None and value < GOAL_MS}
        )
    report = {
        "python": platform.python_version(),
        "sessions": args.sessions,
        "turns": args.turns,
        "runs": args.runs,
        "store": store,
        "warm": warm_figures,
        "cold": {key: stats(values, 2) for key, values in cold.items()},
        "goals": goals,
        "failures": bench.failures,
        "ok": not bench.failures and all(g["pass"] for g in goals),
    }
    return finish(report, args.json, print_report)


if __name__ == "__main__":
    sys.exit(main())
