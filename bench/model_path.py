"""Model path benchmark for coder-agent: the waits a user sees around a model call, process by process.

The agent is spawned as an editor spawns it and pointed at the fake model server of bench/turn_overhead.py (run in a
child process, answering at once), in a session folder that is a git repository with a few commits and an edited
file. Each run takes two fresh agent processes:

  at once      initialize, session/new and the first prompt sent as soon as each answer arrives (the prompt goes out
               right after session/new answers, while litellm is still loading): spawn → ready (session/new
               answered), and spawn → the first agent_message_chunk of the model's own message in that prompt
               (its messageId: a note of the agent's own before it does not count).
  after idle   initialize and session/new, then the agent is left alone until its CPU time stops growing (litellm's
               background import done) and ``--idle`` more seconds pass. Then:
                 first prompt    prompt sent → first chunk, and prompt sent → the request reaching the server
                                 (what the agent does before the request leaves);
                 warm prompts    ``--warm`` more text prompts back to back: the same two figures, and the tail:
                                 the server's last write of the reply ([DONE]) → the session/prompt response;
                 tool prompts    ``--warm`` prompts where the model asks for read_file and then answers: minus the
                                 warm text prompts, the cost of one tool round trip;
                 RSS             VmRSS of the agent's process tree when idle before the first prompt (litellm
                                 loaded) and after the tool prompts; CPU time of the process.

The server stamps each request as it arrives and each reply after its last write with time.perf_counter()
(CLOCK_MONOTONIC on Linux, one clock for every process), and reports the stamps on its stdout.

Figures, median over runs (warm figures: over every warm prompt of every run), with the goals of issue 12:
  spawn → first chunk, sent at once
  first prompt after idle → first chunk, in warm round trips     goal <= 3
  reply end → prompt response (tail)                             goal <= 20 ms
  per tool round trip
  RSS after a tool turn                                          goal <= 200 MiB

Usage (from the repository root; Linux):

  uv run python bench/model_path.py                 # 5 runs, 10 s idle, 10 warm prompts
  uv run python bench/model_path.py --runs 3 --idle 2
  uv run python bench/model_path.py --json
  uv run python bench/model_path.py --agent .venv/bin/coder-agent   # --agent comes last
  uv run python bench/model_path.py --agent env PYTHONPATH=<other checkout> .venv/bin/python -P -m coder_agent
                                                    # another checkout of the agent, with this venv (-P: the
                                                    # current folder does not shadow PYTHONPATH)

Exit status: 0 when every prompt succeeded and every goal passed, 1 otherwise, 2 on usage errors.
Stdlib only (with bench/acp_bench.py and the model server of bench/turn_overhead.py).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from acp_bench import (
    AGENT_EPILOG,
    BenchFailure,
    JsonLinesAgent,
    add_agent_option,
    agent_env,
    check_agent_option,
    cpu_times,
    default_agent,
    finish,
    print_failures,
    stats,
    stderr_tail,
    tree_rss,
)

GOAL_IDLE_TRIPS = 3.0
GOAL_TAIL_MS = 20.0
GOAL_RSS_MIB = 200.0
TIMEOUT = 60.0
MODEL = "openai/fake-model"
SMALL_FILE = "small.txt"
SELF = str(Path(__file__).resolve())


# -- the model server (child process, `--serve`) ----------------------------------------------------------------------


async def serve() -> None:
    """bench/turn_overhead.py's server, printing `recv <stamp>` and `done <stamp>` for every chat request."""
    from turn_overhead import ModelServer

    class StampingServer(ModelServer):
        async def _stream(self, writer: asyncio.StreamWriter, body: dict[str, Any], keep: bool) -> None:
            sys.stdout.write(f"recv {time.perf_counter()!r}\n")
            await super()._stream(writer, body, keep)
            sys.stdout.write(f"done {time.perf_counter()!r}\n")
            sys.stdout.flush()

    model = StampingServer()
    server = await asyncio.start_server(model.connection, "127.0.0.1", 0)
    sys.stdout.write(f"{server.sockets[0].getsockname()[1]}\n")
    sys.stdout.flush()
    async with server:
        await asyncio.to_thread(sys.stdin.buffer.read)


class Server:
    """The model server process, and the stamps it reports."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, SELF, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line.isdigit():
            self.proc.kill()
            raise BenchFailure(f"the model server did not start: {line[:200]!r}")
        self.port = int(line)
        self.stamps: list[tuple[str, float]] = []
        self.lock = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            kind, _, value = line.partition(" ")
            with self.lock:
                self.stamps.append((kind, float(value)))
                self.lock.notify_all()

    def mark(self) -> int:
        with self.lock:
            return len(self.stamps)

    def since(self, mark: int, kind: str, count: int) -> list[float]:
        """The `count` stamps of `kind` after `mark`, waiting a little for the server's stdout to catch up."""
        deadline = time.perf_counter() + 5
        with self.lock:
            while True:
                found = [at for k, at in self.stamps[mark:] if k == kind]
                if len(found) >= count or not self.lock.wait(max(0.0, deadline - time.perf_counter())):
                    return found

    def stop(self) -> None:
        assert self.proc.stdin is not None
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# -- the agent --------------------------------------------------------------------------------------------------------


# Notices advertised, as editors do: an agent's notes about what the client does not offer (files, terminals) are then
# notices, never the first agent_message_chunk this bench times.
CAPABILITIES = {"session": {"notices": {}}}
INITIALIZE = {"protocolVersion": 1, "clientCapabilities": CAPABILITIES, "clientInfo": {"name": "bench", "version": "0"}}


@dataclass
class Prompt:
    sent: float
    first_chunk: float | None
    answered: float
    stop_reason: str


def prompt(agent: JsonLinesAgent, session: str, text: str) -> Prompt:
    """Send a prompt; when the first agent_message_chunk of the model's own message and the response arrive.

    The model's message is the one the prompt ends with (the messageId of its last chunk): a note of the agent's
    own before it (its own id) is not the model's first word."""
    agent.next_id += 1
    req_id = agent.next_id
    sent = time.perf_counter()
    params = {"sessionId": session, "prompt": [{"type": "text", "text": text}]}
    agent.send({"jsonrpc": "2.0", "id": req_id, "method": "session/prompt", "params": params})
    chunks: list[tuple[float, Any]] = []
    deadline = sent + TIMEOUT
    while True:
        while agent.pending:
            msg, _, at = agent.pending.popleft()
            update = (msg.get("params") or {}).get("update") or {}
            if update.get("sessionUpdate") == "agent_message_chunk":
                chunks.append((at, update.get("messageId")))
            if msg.get("id") == req_id:
                if "error" in msg:
                    raise BenchFailure(f"session/prompt answered {json.dumps(msg)[:300]}")
                first = next((when for when, message in chunks if message == chunks[-1][1]), None) if chunks else None
                return Prompt(sent, first, at, str(msg["result"].get("stopReason")))
        if agent.eof:
            raise BenchFailure(f"the agent exited during a prompt; exit code {agent.proc.poll()}")
        if time.perf_counter() > deadline:
            raise BenchFailure(f"no answer to session/prompt within {TIMEOUT:g} s")
        agent.read(deadline - time.perf_counter())


def make_project(root: Path) -> Path:
    """A git repository with a few commits, an AGENTS.md, an edited file and an untracked one."""
    project = root / "project"
    project.mkdir()
    (project / SMALL_FILE).write_text("".join(f"line {i}: bench-marker-{i}\n" for i in range(1, 11)))
    (project / "AGENTS.md").write_text("Keep answers short.\n")
    git = ["git", "-C", str(project), "-c", "user.name=bench", "-c", "user.email=bench@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    for n in range(3):
        (project / f"module_{n}.py").write_text(f"VALUE = {n}\n")
        subprocess.run([*git, "add", "."], check=True)
        subprocess.run([*git, "commit", "-q", "-m", f"commit {n}"], check=True)
    (project / "module_0.py").write_text("VALUE = 'edited'\n")
    (project / "notes.txt").write_text("untracked\n")
    return project


@dataclass
class Results:
    ready_ms: list[float] = field(default_factory=list)
    at_once_first_chunk_ms: list[float] = field(default_factory=list)
    idle_first_chunk_ms: list[float] = field(default_factory=list)
    idle_request_out_ms: list[float] = field(default_factory=list)
    warm_first_chunk_ms: list[float] = field(default_factory=list)
    warm_request_out_ms: list[float] = field(default_factory=list)
    idle_round_trips: list[float] = field(default_factory=list)
    tail_ms: list[float] = field(default_factory=list)
    text_prompt_ms: list[float] = field(default_factory=list)
    tool_prompt_ms: list[float] = field(default_factory=list)
    tool_round_trip_ms: list[float] = field(default_factory=list)
    rss_idle_mib: list[float] = field(default_factory=list)
    rss_mib: list[float] = field(default_factory=list)
    cpu_s: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


def expect_end_turn(p: Prompt) -> None:
    if p.stop_reason != "end_turn" or p.first_chunk is None:
        raise BenchFailure(f"a prompt ended with {p.stop_reason!r} (first chunk: {p.first_chunk is not None})")


def open_session(agent: JsonLinesAgent, project: Path) -> str:
    agent.request("initialize", INITIALIZE, TIMEOUT)
    return str(agent.request("session/new", {"cwd": str(project), "mcpServers": []}, TIMEOUT).result["sessionId"])


def run_at_once(cmd: list[str], env: dict[str, str], project: Path, log: IO[bytes], results: Results) -> None:
    start = time.perf_counter()
    agent = JsonLinesAgent(cmd, env, log)
    try:
        session = open_session(agent, project)
        results.ready_ms.append((time.perf_counter() - start) * 1000)
        p = prompt(agent, session, "BENCH:text")
        expect_end_turn(p)
        assert p.first_chunk is not None
        results.at_once_first_chunk_ms.append((p.first_chunk - start) * 1000)
    finally:
        agent.close()


def run_after_idle(
    cmd: list[str],
    env: dict[str, str],
    project: Path,
    log: IO[bytes],
    server: Server,
    args: argparse.Namespace,
    r: Results,
) -> None:
    agent = JsonLinesAgent(cmd, env, log)
    try:
        session = open_session(agent, project)
        agent.settle(limit=60)
        end = time.perf_counter() + args.idle
        while (left := end - time.perf_counter()) > 0:
            agent.read(left)
        agent.pending.clear()
        rss = tree_rss(agent.proc.pid)
        if rss is not None:
            r.rss_idle_mib.append(rss[0])

        def measured(text: str) -> tuple[Prompt, float, float]:
            mark = server.mark()
            p = prompt(agent, session, text)
            expect_end_turn(p)
            received = server.since(mark, "recv", 1)
            done = server.since(mark, "done", 1 if text != "BENCH:tool" else 2)
            return p, received[0], done[-1]

        first, received, _ = measured("BENCH:text")
        assert first.first_chunk is not None
        warm_first: list[float] = []
        for _ in range(args.warm):
            p, received_warm, done = measured("BENCH:text")
            assert p.first_chunk is not None
            warm_first.append((p.first_chunk - p.sent) * 1000)
            r.warm_request_out_ms.append((received_warm - p.sent) * 1000)
            r.tail_ms.append((p.answered - done) * 1000)
            r.text_prompt_ms.append((p.answered - p.sent) * 1000)
        r.warm_first_chunk_ms += warm_first
        idle_ms = (first.first_chunk - first.sent) * 1000
        r.idle_first_chunk_ms.append(idle_ms)
        r.idle_request_out_ms.append((received - first.sent) * 1000)
        r.idle_round_trips.append(idle_ms / statistics.median(warm_first))
        tool_ms = []
        for _ in range(args.warm):
            p, _, done = measured("BENCH:tool")
            tool_ms.append((p.answered - p.sent) * 1000)
            r.tail_ms.append((p.answered - done) * 1000)
        r.tool_prompt_ms += tool_ms
        r.tool_round_trip_ms.append(statistics.median(tool_ms) - statistics.median(r.text_prompt_ms[-args.warm :]))
        rss = tree_rss(agent.proc.pid)
        if rss is not None:
            r.rss_mib.append(rss[0])
        r.cpu_s.append(cpu_times(agent.proc.pid)[0])
    finally:
        agent.close()


def run(args: argparse.Namespace, cmd: list[str]) -> dict[str, Any]:
    results = Results()
    temp = Path(tempfile.mkdtemp(prefix="coder-agent-model-path-"))
    server: Server | None = None
    try:
        project = make_project(temp)
        server = Server()
        env = agent_env(
            temp,
            CODER_AGENT_MODEL=MODEL,
            CODER_AGENT_API_BASE=f"http://127.0.0.1:{server.port}/v1",
            CODER_AGENT_API_KEY="sk-test",
        )
        for number in range(args.runs + 1):  # the first run warms the disk cache and is dropped
            target = results if number else Results()
            with tempfile.TemporaryFile() as log:
                try:
                    run_at_once(cmd, env, project, log, target)
                    run_after_idle(cmd, env, project, log, server, args, target)
                except BenchFailure as exc:
                    results.failures.append(f"{exc}\n{stderr_tail(log)}")
            if sys.stderr.isatty():
                print(f"\rrun {number}/{args.runs}", end="", file=sys.stderr, flush=True)
    except BenchFailure as exc:
        results.failures.append(str(exc))
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(temp, ignore_errors=True)
        if sys.stderr.isatty():
            print("\r" + " " * 20 + "\r", end="", file=sys.stderr, flush=True)
    return report(results, args, cmd)


def report(r: Results, args: argparse.Namespace, cmd: list[str]) -> dict[str, Any]:
    figures = {name: stats(getattr(r, name), 2) for name in Results.__dataclass_fields__ if name != "failures"}

    def goal(name: str, text: str, figure: str, limit: float) -> dict[str, Any]:
        value = figures[figure]["median"]
        return {"name": name, "goal": text, "value": value, "pass": value is not None and value <= limit}

    goals = [
        goal("first prompt after idle", f"<= {GOAL_IDLE_TRIPS:g} warm", "idle_round_trips", GOAL_IDLE_TRIPS),
        goal("reply end → response", f"<= {GOAL_TAIL_MS:g} ms", "tail_ms", GOAL_TAIL_MS),
        goal("RSS after a tool turn", f"<= {GOAL_RSS_MIB:g} MiB", "rss_mib", GOAL_RSS_MIB),
    ]
    ok = not r.failures and all(g["pass"] for g in goals)
    return {
        "agent": cmd,
        "runs": args.runs,
        "idle_s": args.idle,
        "warm": args.warm,
        "figures": figures,
        "goals": goals,
        "failures": r.failures,
        "ok": ok,
    }


LABELS = {
    "ready_ms": ("spawn → ready (session/new answered)", "ms"),
    "at_once_first_chunk_ms": ("spawn → first chunk, prompt sent at once", "ms"),
    "idle_first_chunk_ms": ("first prompt after idle → first chunk", "ms"),
    "idle_request_out_ms": ("  of which: prompt → request at the server", "ms"),
    "warm_first_chunk_ms": ("warm prompt → first chunk", "ms"),
    "warm_request_out_ms": ("  of which: prompt → request at the server", "ms"),
    "idle_round_trips": ("first prompt after idle, in warm round trips", "x"),
    "tail_ms": ("reply end → prompt response", "ms"),
    "text_prompt_ms": ("warm text prompt, whole", "ms"),
    "tool_prompt_ms": ("warm tool prompt, whole", "ms"),
    "tool_round_trip_ms": ("per tool round trip (tool - text prompt)", "ms"),
    "rss_idle_mib": ("RSS idle before the first prompt (litellm loaded)", "MiB"),
    "rss_mib": ("RSS after the tool prompts", "MiB"),
    "cpu_s": ("agent CPU time at the end of a run", "s"),
}


def print_table(rep: dict[str, Any]) -> None:
    print(f"coder-agent model path: {rep['runs']} runs, {rep['idle_s']:g} s idle, {rep['warm']} warm prompts")
    print(f"agent  {' '.join(rep['agent'])}\n")
    print(f"{'figure':<48}{'median':>12}{'min':>12}{'max':>12}{'n':>6}")
    print("-" * 90)
    for name, (label, unit) in LABELS.items():
        f = rep["figures"][name]

        def num(v: float | None, unit: str = unit) -> str:
            return "-" if v is None else f"{v:.2f} {unit}"

        print(f"{label:<48}{num(f['median']):>12}{num(f['min']):>12}{num(f['max']):>12}{f['n']:>6}")
    print(f"\n{'goal':<40}{'value':>12}   {'goal':<16}result")
    print("-" * 80)
    for g in rep["goals"]:
        value = "-" if g["value"] is None else f"{g['value']:.2f}"
        print(f"{g['name']:<40}{value:>12}   {g['goal']:<16}{'PASS' if g['pass'] else 'FAIL'}")
    print_failures(rep)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=AGENT_EPILOG)
    parser.add_argument("--runs", type=int, default=5, help="agent processes of each kind (default 5)")
    parser.add_argument("--idle", type=float, default=10.0, help="seconds idle before the first prompt (default 10)")
    parser.add_argument("--warm", type=int, default=10, help="warm text and tool prompts per run (default 10)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    add_agent_option(parser)
    args = parser.parse_args(argv)
    if args.runs < 1 or args.warm < 1 or args.idle < 0:
        parser.error("--runs and --warm must be at least 1, --idle at least 0")
    check_agent_option(parser, args)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.serve:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(serve())
        return 0
    return finish(run(args, args.agent or default_agent()), args.json, print_table)


if __name__ == "__main__":
    sys.exit(main())
