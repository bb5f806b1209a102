"""coder-agent against three Python ACP agents, each on the same scripted model: one table, agents as columns.

The peers are Mistral Vibe 3.0.2 (PyPI ``mistral-vibe``), Kimi CLI 1.51.0 (``kimi-cli``) and fast-agent 0.10.48
(``fast-agent-mcp``), installed from PyPI at those versions into a temp folder (``uv venv`` + ``uv pip install``;
uv's cache makes the next install quick; a peer whose pin does not install gets the nearest older release, said so;
one that does not install at all, or fails to start in the warm-up, is skipped, saying why). They need Python >= 3.12
(see bench/peer_agents.py for how each is configured and found). coder-agent is the ``coder-agent`` beside this
Python, or ``--agent CMD``.

Every agent talks over stdio, as an editor spawns it, to one fake OpenAI-compatible server on 127.0.0.1
(tests/support/fake_llm.py, in this process), through a temp HOME holding its config and a dummy key. The server
answers by script, streamed: a prompt tagged ``BENCH:text`` gets a short text (six 8-character deltas); one tagged
``BENCH:tool`` gets a call of the agent's own read tool (found in the request's ``tools``: ``read_file``,
``ReadFile``, ``read_text_file``...) on a small file in the agent's temp workspace, then, after the tool result,
a short text; a request without tools (a title, a summary) gets a short text. It times every request (body arrived,
last byte written), so figures come from its clock as well as the client's (one process: one clock). The client
advertises ``fs`` read and write, which it serves from the workspace, no terminal, and answers
``session/request_permission`` with allow (once).

Each run spawns each agent twice, afresh:
  at once  initialize, session/new, then at once a text prompt; then --trips pairs of a text prompt and a tool
           prompt (the first pair warms up and is not counted), the process tree's RSS, stdin EOF.
  idle     initialize, session/new, --idle seconds of nothing (its stdout still read), a text prompt, stdin EOF.
Runs interleave the agents round-robin, the first agent moving one place each round; one warm-up round (not
counted, and where a first start leaves bytecode behind) precedes --runs counted ones. Figures are medians over the
counted runs (all warm pairs of all runs for the round trip), [min-max] beside them:
  spawn -> ready            spawn to the session/new response
  first chunk               prompt sent to the first agent_message_chunk with text of the model's own message
                            (the agent's messageId of the turn's last message; for an agent without ids, the
                            first chunk after the model request reached the server), and spawn to it; "model
                            request": prompt sent to the request's arrival at the server (what the agent did first);
                            "its own note first": prompt sent to a chunk the agent said before the model's (such as
                            what stands in for a capability the client lacks), apart
  round trip (server)       a tool prompt's second model request arriving minus its first reply's last byte: tool
                            call, permission, fs, tool result back to the model, all the agent's
  round trip (client)       median(tool prompt) - median(text prompt), from the client's clock
  reply end -> response     the server's last byte of the prompt's last model reply to the session/prompt response
  RSS                       VmRSS of the agent's process tree after the last tool prompt
  shutdown                  stdin EOF to the exit (woken by a pidfd); "exited" counts those that left by themselves
                            within 10 s (the others, and any child left behind, are killed)
  CPU / wall                user+sys CPU of the at-once process tree (its rusage, with children it waited for, or
                            the live tree sampled before EOF, whichever is larger) next to its spawn-to-exit time
Below the table, issue 12's targets for coder-agent against the best peer in the same run, PASS or FAIL.

On a shared or 2-core machine the figures are indicative: CPU contention from other work inflates them unevenly.
The load average is printed before and after.

Usage (from the repository root; Linux, uv on PATH):

  uv run python bench/peers.py                          # N=5 runs + 1 warm-up, 10 s idle, all four agents
  uv run python bench/peers.py --runs 7 --idle 2        # a quicker idle
  uv run python bench/peers.py --agents coder,kimi      # a subset (keys: coder, vibe, kimi, fast-agent)
  uv run python bench/peers.py --peers-dir /some/dir    # keep the peers' venvs there, reused next time
  uv run python bench/peers.py --python python3.13      # the interpreter for the peers (default: found)
  uv run python bench/peers.py --json                   # every sample as JSON on stdout
  uv run python bench/peers.py --agent .venv/bin/coder-agent   # --agent comes last: the rest is the command

Exit status: 0 when every run of every agent succeeded and every target passed, 1 otherwise, 2 on usage errors.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import peer_agents  # noqa: E402
from acp_bench import (  # noqa: E402
    AGENT_EPILOG,
    BenchFailure,
    add_agent_option,
    check_agent_option,
    descendants,
    kill_tree,
    process_children,
    stderr_tail,
    tree_cpu,
    tree_rss,
    wait_exit,
    warn_few_runs,
)
from peer_report import print_report, targets  # noqa: E402
from peer_turns import INITIALIZE, SMALL_FILE, SMALL_TEXT, BenchClient, Script, prompt  # noqa: E402

from tests.support.fake_llm import FakeLLM  # noqa: E402

MODEL = "bench-model"
MIN_RUNS = 5
START_TIMEOUT = 180.0
EXIT_TIMEOUT = 10.0

# =====================================================================================================================
# One spawn
# =====================================================================================================================


@dataclass
class Setup:
    """What a spawn of each agent needs: its command, environment, workspace and stderr log folder."""

    commands: dict[str, list[str]]
    envs: dict[str, dict[str, str]]
    workspaces: dict[str, Path]
    logs: Path
    llm: FakeLLM
    script: Script
    idle: float
    trips: int
    spawned: int = 0


@dataclass
class Spawned:
    client: BenchClient
    log: IO[bytes]
    started: float
    session_id: str = ""
    ready: float = 0.0
    figures: dict[str, float] = field(default_factory=dict)


def start(setup: Setup, key: str) -> Spawned:
    setup.spawned += 1
    log = (setup.logs / f"{setup.spawned:03d}-{key}.stderr").open("w+b")
    setup.script.agent, setup.script.target = key, setup.workspaces[key] / SMALL_FILE
    started = time.perf_counter()
    client = BenchClient(setup.commands[key], setup.envs[key], log, setup.workspaces[key])
    spawned = Spawned(client, log, started)
    try:
        client.request("initialize", INITIALIZE, START_TIMEOUT)
        new = client.request("session/new", {"cwd": str(setup.workspaces[key]), "mcpServers": []}, START_TIMEOUT)
    except BaseException:  # a failure, a bug or ^C: the agent does not outlive its run
        stop(spawned)
        raise
    spawned.session_id = str(new.result.get("sessionId", ""))
    spawned.ready = new.arrived
    return spawned


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def stop(spawned: Spawned) -> dict[str, float]:
    """stdin EOF; the exit, its time and CPU; kill it after EXIT_TIMEOUT and any child it left behind."""
    client = spawned.client
    pid = client.proc.pid
    tree = descendants(pid, process_children(skip_zombies=True))
    cpu_live = tree_cpu(pid)
    eof = time.perf_counter()
    with contextlib.suppress(OSError):
        client.stdin.close()
    exited, _, cpu_reaped = wait_exit(client.proc, EXIT_TIMEOUT)
    if exited is None:
        kill_tree(pid)
    left = [p for p in tree if _alive(p)]
    for child in left:
        kill_tree(child)
    client.close()
    spawned.log.close()
    end = exited if exited is not None else time.perf_counter()
    figures = {"exited": float(exited is not None), "left_behind": float(len(left)), "wall": end - spawned.started}
    figures["cpu"] = max(cpu_live, cpu_reaped)
    if exited is not None:
        figures["shutdown"] = exited - eof
    return figures


def run_at_once(setup: Setup, key: str) -> dict[str, Any]:
    spawned = start(setup, key)
    client, sid, figures = spawned.client, spawned.session_id, spawned.figures
    try:
        figures["ready"] = spawned.ready - spawned.started
        first = prompt(client, setup.llm, sid, "text")
        if first.first_chunk is None:
            raise BenchFailure("the first text prompt streamed no agent_message_chunk")
        figures["at_once_chunk"] = first.first_chunk - first.exchange.sent
        figures["at_once_spawn_chunk"] = first.first_chunk - spawned.started
        if first.first_note is not None:
            figures["at_once_note"] = first.first_note - first.exchange.sent
        figures["at_once_request"] = first.requests[0].timing.arrived - first.exchange.sent
        figures["first_reply_end"] = first.reply_end_to_response
        texts: list[float] = []
        tools: list[float] = []
        trips: list[float] = []
        tails: list[float] = []
        for trip in range(setup.trips):
            text, tool = prompt(client, setup.llm, sid, "text"), prompt(client, setup.llm, sid, "tool")
            if trip:  # the first pair warms the tool path up
                texts.append(text.exchange.seconds)
                tools.append(tool.exchange.seconds)
                trips.append(tool.round_trip)
                tails.append(text.reply_end_to_response)
        rss = tree_rss(client.proc.pid)
        if rss is not None:
            figures["rss"], figures["processes"] = rss
        figures["requests"] = float(sum(1 for r in setup.llm.recorded if r.timing.arrived >= spawned.started))
        figures["asked"] = float(sum(client.asked.values()))
    except BaseException:  # a failure, a bug or ^C: the agent does not outlive its run
        stop(spawned)
        raise
    figures |= stop(spawned)
    return {**figures, "text_prompts": texts, "tool_prompts": tools, "round_trips": trips, "reply_ends": tails}


def run_idle(setup: Setup, key: str) -> dict[str, Any]:
    spawned = start(setup, key)
    client = spawned.client
    try:
        deadline = time.perf_counter() + setup.idle
        while (left := deadline - time.perf_counter()) > 0 and not client.eof:
            client.read(left)
        turn = prompt(client, setup.llm, spawned.session_id, "text")
        if turn.first_chunk is None:
            raise BenchFailure("the idle text prompt streamed no agent_message_chunk")
        figures = {
            "idle_chunk": turn.first_chunk - turn.exchange.sent,
            "idle_request": turn.requests[0].timing.arrived - turn.exchange.sent,
        }
        if turn.first_note is not None:
            figures["idle_note"] = turn.first_note - turn.exchange.sent
    except BaseException:  # a failure, a bug or ^C: the agent does not outlive its run
        stop(spawned)
        raise
    stopped = stop(spawned)
    return figures | {"idle_shutdown": stopped["shutdown"]} if "shutdown" in stopped else figures


# =====================================================================================================================
# The run
# =====================================================================================================================


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def prepare(args: argparse.Namespace, temp: Path) -> tuple[dict[str, list[str] | Path], dict[str, str], dict[str, str]]:
    """Install the peers: coder-agent's command and each peer's bin folder, the version lines, the skipped agents."""
    commands: dict[str, list[str] | Path] = {}
    versions: dict[str, str] = {}
    skipped: dict[str, str] = {}
    python, python_note = (None, "")
    for key in args.agents:
        agent = peer_agents.AGENTS[key]
        if agent.package is None:
            commands[key], how = peer_agents.coder_bin(args.agent)
            versions[key] = how
            continue
        if python is None and not python_note:
            python, python_note = peer_agents.find_python(args.python)
            print(f"peers' Python: {python or '-'} ({python_note})", file=sys.stderr)
        if python is None:
            skipped[key] = python_note
            continue
        print(f"installing {agent.package}=={agent.version} ...", file=sys.stderr)
        installed = peer_agents.install(agent, args.peers_dir or temp / "venvs", python)
        if installed.bin_dir is None:
            skipped[key] = f"not installed: {installed.note}"
            continue
        commands[key] = installed.bin_dir
        versions[key] = f"{agent.package} {installed.version} ({installed.note})"
    return commands, versions, skipped


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=AGENT_EPILOG)
    parser.add_argument("--runs", type=int, default=MIN_RUNS, help=f"counted runs per agent (default {MIN_RUNS})")
    parser.add_argument("--idle", type=float, default=10.0, help="seconds of idle before the idle prompt (default 10)")
    parser.add_argument("--trips", type=int, default=3, help="text+tool prompt pairs per run, first uncounted")
    parser.add_argument("--agents", default=",".join(peer_agents.AGENTS), help="comma-separated agent keys")
    parser.add_argument("--python", help="the interpreter for the peers (>= 3.12)")
    parser.add_argument("--peers-dir", type=Path, help="where the peers' venvs live (default: a temp folder)")
    parser.add_argument("--keep", action="store_true", help="keep the temp folder (homes, workspaces, stderr logs)")
    parser.add_argument("--json", action="store_true", help="print every figure as JSON instead of the table")
    add_agent_option(parser)
    args = parser.parse_args()
    check_agent_option(parser, args)
    args.agents = [a.strip() for a in args.agents.split(",") if a.strip()]
    if unknown := [a for a in args.agents if a not in peer_agents.AGENTS]:
        parser.error(f"unknown agents {unknown}; known: {', '.join(peer_agents.AGENTS)}")
    if args.runs < 1 or args.trips < 2 or args.idle < 0:
        parser.error("--runs must be >= 1, --trips >= 2 and --idle >= 0")
    warn_few_runs(args.runs, MIN_RUNS)

    temp = Path(tempfile.mkdtemp(prefix="bench-peers-"))
    try:
        return run(args, temp)
    finally:
        if args.keep:
            print(f"kept {temp}", file=sys.stderr)
        else:
            shutil.rmtree(temp, ignore_errors=True)


def run(args: argparse.Namespace, temp: Path) -> int:
    commands, versions, skipped = prepare(args, temp)
    script = Script()
    logs = temp / "logs"
    logs.mkdir()
    report: dict[str, Any] = {
        "runs": args.runs,
        "idle": args.idle,
        "trips": args.trips,
        "cpus": os.cpu_count(),
        "load_before": load(),
        "versions": versions,
        "skipped": skipped,
        "failures": {},
        "samples": {},
    }
    with FakeLLM(default=script) as llm:
        setup = Setup({}, {}, {}, logs, llm, script, args.idle, args.trips)
        for key, cmd in commands.items():
            agent = peer_agents.AGENTS[key]
            home, workspace = temp / "homes" / key, temp / "work" / key
            home.mkdir(parents=True)
            workspace.mkdir(parents=True)
            (workspace / SMALL_FILE).write_text(SMALL_TEXT)
            extra = agent.configure(home, llm.base_url, MODEL)
            setup.envs[key] = peer_agents.agent_env(home, extra)
            setup.commands[key] = peer_agents.command(agent, cmd, home, MODEL) if isinstance(cmd, Path) else cmd
            setup.workspaces[key] = workspace
        active = list(commands)
        samples: dict[str, list[dict[str, Any]]] = {key: [] for key in active}
        failures: dict[str, list[str]] = {key: [] for key in active}
        for round_no in range(args.runs + 1):
            order = active[round_no % len(active) :] + active[: round_no % len(active)] if active else []
            label = "warm-up" if round_no == 0 else f"run {round_no}/{args.runs}"
            for key in order:
                figures: dict[str, Any] = {}
                for mode, runner in (("at once", run_at_once), ("idle", run_idle)):
                    print(f"{label}: {key} {mode} (load {load()})", file=sys.stderr)
                    try:
                        figures |= runner(setup, key)
                    except Exception as exc:  # one agent's failure is reported; the others go on
                        log = sorted(logs.glob(f"*-{key}.stderr"))[-1]
                        with log.open("rb") as f:
                            failures[key].append(f"{label} {mode}: {exc!r}\n{stderr_tail(f)}")
                        if round_no == 0:
                            skipped[key] = f"failed in the warm-up ({mode}): {exc}"
                            break
                if figures and round_no:
                    samples[key].append(figures)
            active = [key for key in active if key not in skipped]
        report["read_tools"] = dict(script.read_tools)
    report["load_after"] = load()
    report["samples"] = samples
    report["failures"] = {k: v for k, v in failures.items() if v}
    report["targets"] = targets(report, args.agents)
    report["ok"] = not report["failures"] and all(t["ok"] for t in report["targets"] if t["ok"] is not None)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report, [k for k in args.agents if k in samples or k in skipped], peer_agents.AGENTS)
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
