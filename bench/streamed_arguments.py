"""Streamed tool-call arguments: what gathering a big argument costs the agent, in time and in memory.

Providers stream a tool call's arguments a few characters at a time. This bench has a fake model server (this
script with ``--serve``, a child process: stdlib asyncio, HTTP/1.1, SSE in ``chat.completion.chunk`` format, each
event encoded as it is sent, as a provider does) answer a ``BENCH:write`` prompt with one ``write_file`` call whose
``content`` is ``--size`` bytes, streamed in ``--delta``-character argument fragments; after the tool result it
answers a short text. Three figures per run, each from a fresh start:

  server alone     the server sends the reply to a reader in this process that only drains the socket: its send
                   time (first byte to last byte written), the pace the stream has with nobody slowing it down
  litellm alone    the same reply read through ``litellm.acompletion(stream=True)`` in this process, iterated up to
                   the finish reason and nothing kept: litellm's own cost per fragment, a floor for any agent on
                   litellm
  agent            coder-agent spawned as an editor spawns it (no client capabilities: it writes the file itself;
                   a permission request is allowed once): after a prompt whose write_file call is small (the
                   first request and the write path warmed up), the server's first byte to the ``tool_call``
                   notification (the arguments gathered and parsed), and the growth of the agent's peak RSS over
                   the prompt (VmHWM reset through /proc/PID/clear_refs just before it, minus VmRSS then). The file
                   written must hold the argument's bytes.

The server stamps its first and last byte with time.perf_counter() (CLOCK_MONOTONIC on Linux, one clock for every
process) and reports them on its stdout. Figures: median over ``--runs`` [min-max]. Goals (issue 31), PASS/FAIL:
  agent: server's first byte -> tool_call  <= 2 x the server's send time (server alone)
  agent: peak RSS growth over the prompt    <= 50 MB

Usage (from the repository root; Linux):

  uv run python bench/streamed_arguments.py                      # 1 MB in 4-character fragments, 3 runs
  uv run python bench/streamed_arguments.py --size 262144 --runs 5
  uv run python bench/streamed_arguments.py --json
  uv run python bench/streamed_arguments.py --agent .venv/bin/coder-agent   # --agent comes last

Exit status: 0 when every run succeeded and every goal passed, 1 otherwise, 2 on usage errors.
Stdlib + litellm (the project's dependency) + bench/acp_bench.py only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

from acp_bench import (
    AGENT_EPILOG,
    BenchFailure,
    JsonLinesAgent,
    add_agent_option,
    agent_env,
    check_agent_option,
    default_agent,
    read_http_request,
    stderr_tail,
)

GOAL_RATIO = 2.0
GOAL_GROWTH_MB = 50.0
MODEL = "openai/fake-model"
API_KEY = "sk-bench"
TARGET = "big.txt"
AFTER_TOOL_TEXT = "Written."
TIMEOUT = 600.0
SELF = str(Path(__file__).resolve())
INITIALIZE = {"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}

# =====================================================================================================================
# The fake model server (child process, `--serve SIZE DELTA`)
# =====================================================================================================================


def arguments(size: int) -> str:
    """The write_file call's arguments: `size` bytes of printable text (with newlines) in `content`."""
    line = "0123456789abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ !#$%&()*+,-./:;<=>?@[]^_{|}~ end\n"
    content = (line * (size // len(line) + 1))[:size]
    return json.dumps({"path": TARGET, "content": content})


def content_of(size: int) -> str:
    return str(json.loads(arguments(size))["content"])


class ModelServer:
    def __init__(self, size: int, delta: int) -> None:
        self.arguments = arguments(size)
        self.delta = delta
        self.number = 0

    async def connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await self.request(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, ValueError, asyncio.CancelledError):
            pass  # the client went away, or the server is shutting down
        finally:
            writer.close()

    async def request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        http = await read_http_request(reader)
        if http is None:
            return False
        arrived = time.perf_counter()
        request = json.loads(http.body)
        messages = request.get("messages") or []
        last_user = next((m for m in reversed(messages) if m.get("role") == "user"), {})
        said = json.dumps(last_user.get("content")) if messages[-1].get("role") != "tool" else ""
        kind = "write" if "BENCH:write" in said else "small" if "BENCH:small" in said else "text"
        text = self.arguments if kind == "write" else arguments(64) if kind == "small" else None
        first, last = await self.stream(writer, request, text)
        report = {"kind": kind, "arrived": arrived, "first": first, "last": last}
        sys.stdout.write(json.dumps(report) + "\n")
        sys.stdout.flush()
        return True

    async def stream(
        self, writer: asyncio.StreamWriter, request: dict[str, Any], text: str | None
    ) -> tuple[float, float]:
        """A write_file call whose arguments are `text`, in fragments (None: a short answer)."""
        self.number += 1
        base = {"id": f"chatcmpl-{self.number}", "object": "chat.completion.chunk", "created": int(time.time())}
        base["model"] = str(request.get("model") or "fake-model")

        def event(delta: dict[str, Any], finish: str | None = None, usage: dict[str, int] | None = None) -> bytes:
            choices = [] if usage else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
            data = b"data: " + json.dumps({**base, "choices": choices, "usage": usage}).encode() + b"\n\n"
            return b"%x\r\n%s\r\n" % (len(data), data)

        head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
        first = time.perf_counter()
        writer.write(head + event({"role": "assistant", "content": ""}))
        if text is not None:
            call = {"index": 0, "id": f"call_{self.number}", "type": "function"}
            writer.write(event({"tool_calls": [{**call, "function": {"name": "write_file", "arguments": ""}}]}))
            for n, start in enumerate(range(0, len(text), self.delta)):
                piece = text[start : start + self.delta]
                writer.write(event({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
                if n % 256 == 255:
                    await writer.drain()
            writer.write(event({}, "tool_calls"))
        else:
            writer.write(event({"content": AFTER_TOOL_TEXT}) + event({}, "stop"))
        usage = {"prompt_tokens": 100, "completion_tokens": len(text) // 4 if text is not None else 2}
        writer.write(event({}, usage={**usage, "total_tokens": sum(usage.values())}))
        writer.write(b"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n")
        await writer.drain()
        return first, time.perf_counter()


async def serve(size: int, delta: int) -> None:
    """Serve on 127.0.0.1 until stdin closes; the first stdout line is the port, then one line per request."""
    server = await asyncio.start_server(ModelServer(size, delta).connection, "127.0.0.1", 0)
    sys.stdout.write(f"{server.sockets[0].getsockname()[1]}\n")
    sys.stdout.flush()
    async with server:
        await asyncio.to_thread(sys.stdin.buffer.read)


class Server:
    """The server's process, and the reports of its requests as they come."""

    def __init__(self, size: int, delta: int) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, SELF, "--serve", str(size), str(delta)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        assert self.proc.stdout is not None
        self.port = int(self.proc.stdout.readline())
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.reports: list[dict[str, Any]] = []
        self.arrived = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self.arrived:
                self.reports.append(json.loads(line))
                self.arrived.notify_all()

    def report(self, number: int, timeout: float = 30.0) -> dict[str, Any]:
        """The `number`-th request's report (from 0), waiting for it."""
        with self.arrived:
            if not self.arrived.wait_for(lambda: len(self.reports) > number, timeout):
                raise BenchFailure(f"the server never reported request {number + 1}")
            return self.reports[number]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(10)


# =====================================================================================================================
# The three readers
# =====================================================================================================================


def server_alone(server: Server) -> float:
    """The server's send time to a reader that only drains the socket."""
    number = len(server.reports)
    body = json.dumps({"model": "m", "stream": True, "messages": [{"role": "user", "content": "BENCH:write"}]})
    head = f"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: {len(body)}\r\n\r\n"
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(head.encode() + body.encode())
        tail = b""
        while not tail.endswith(b"0\r\n\r\n"):
            chunk = sock.recv(1 << 20)
            if not chunk:
                break
            tail = (tail + chunk)[-16:]
    report = server.report(number)
    return float(report["last"] - report["first"])


def litellm_alone(server: Server) -> float:
    """litellm's stream of the reply, iterated in this process up to the chunk with the finish reason (where the
    agent has the whole call too), nothing kept: the server's first byte to that chunk."""
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    import litellm

    litellm.suppress_debug_info = True  # as the agent sets it (model/litellm_loader.py)
    litellm.drop_params = True
    litellm.disable_token_counter = True
    litellm.disable_streaming_logging = True
    number = len(server.reports)

    async def read() -> float:
        response = await litellm.acompletion(
            model=MODEL,
            api_base=server.url,
            api_key=API_KEY,
            messages=[{"role": "user", "content": "BENCH:write"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        async for chunk in response:
            if chunk.choices and chunk.choices[0].finish_reason:
                break
        finished = time.perf_counter()
        await response.aclose()
        return finished

    ended = asyncio.run(read())
    return ended - float(server.report(number)["first"])


def _status(pid: int) -> dict[str, int]:
    with open(f"/proc/{pid}/status") as f:
        return {k: int(v.split()[0]) for k, _, v in (line.partition(":") for line in f) if k in ("VmRSS", "VmHWM")}


class Client(JsonLinesAgent):
    """The editor: a permission request is allowed once."""

    def on_request(self, msg: dict[str, Any], line: bytes, now: float) -> None:
        if msg.get("method") == "session/request_permission":
            options = (msg.get("params") or {}).get("options") or []
            chosen = next((o["optionId"] for o in options if o.get("kind") == "allow_once"), None)
            outcome = {"outcome": "selected", "optionId": chosen} if chosen else {"outcome": "cancelled"}
            self.send({"jsonrpc": "2.0", "id": msg["id"], "result": {"outcome": outcome}})
        else:
            super().on_request(msg, line, now)


def agent_run(server: Server, cmd: list[str], temp: Path, size: int, log: IO[bytes]) -> dict[str, float]:
    """One spawned agent, one BENCH:write prompt: the seconds to the tool_call and the peak RSS growth in MB."""
    work = temp / "work"
    work.mkdir(exist_ok=True)
    for stale in work.iterdir():
        stale.unlink()
    env = agent_env(temp, CODER_AGENT_MODEL=MODEL, CODER_AGENT_API_BASE=server.url, CODER_AGENT_API_KEY=API_KEY)
    agent = Client(cmd, env, log, cwd=work)
    try:
        agent.request("initialize", INITIALIZE, TIMEOUT)
        session = agent.request("session/new", {"cwd": str(work), "mcpServers": []}, TIMEOUT).result["sessionId"]
        agent.settle(limit=60)  # litellm loaded and warmed up: the figure is the stream's, not the import's
        small = {"sessionId": session, "prompt": [{"type": "text", "text": "Write a small file. BENCH:small"}]}
        if agent.request("session/prompt", small, TIMEOUT).result.get("stopReason") != "end_turn":
            raise BenchFailure("the small write's prompt did not end with end_turn")  # the write path warmed up too
        pid = agent.proc.pid
        before = _status(pid)["VmRSS"]
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # reset VmHWM to the current RSS
        number = len(server.reports)
        params = {"sessionId": session, "prompt": [{"type": "text", "text": "Write the file. BENCH:write"}]}
        exchange = agent.request("session/prompt", params, TIMEOUT)
        peak = _status(pid)["VmHWM"]
        if exchange.result.get("stopReason") != "end_turn":
            raise BenchFailure(f"the prompt ended with {exchange.result.get('stopReason')!r}")
        call = next(
            (at for msg, _, at in exchange.notes if (msg.get("params") or {}).get("update", {}).get("sessionUpdate")
             == "tool_call"),
            None,
        )  # fmt: skip
        if call is None:
            raise BenchFailure("no tool_call notification")
        written = (work / TARGET).read_text() if (work / TARGET).exists() else ""
        if written != content_of(size):
            raise BenchFailure(f"the file written holds {len(written)} characters, not the {size} streamed")
        report = next(r for r in server.reports[number:] if r["kind"] == "write")
        return {"agent_s": call - report["first"], "growth_mb": (peak - before) / 1024}
    finally:
        agent.close()


# =====================================================================================================================
# The run
# =====================================================================================================================


def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=AGENT_EPILOG)
    parser.add_argument("--serve", nargs=2, type=int, help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, default=1 << 20, help="the argument's content in bytes (default 1 MiB)")
    parser.add_argument("--delta", type=int, default=4, help="characters per argument fragment (default 4)")
    parser.add_argument("--runs", type=int, default=3, help="runs (default 3)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    add_agent_option(parser)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve(*args.serve))
        return 0
    check_agent_option(parser, args)
    if args.size < 1 or args.delta < 1 or args.runs < 1:
        parser.error("--size, --delta and --runs must be >= 1")
    cmd = args.agent or default_agent()
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    figures: dict[str, list[float]] = {"server_s": [], "litellm_s": [], "agent_s": [], "growth_mb": []}
    failures: list[str] = []
    server = Server(args.size, args.delta)
    try:
        with tempfile.TemporaryDirectory(prefix="bench-streamed-") as temp:
            for run in range(args.runs):
                print(f"run {run + 1}/{args.runs} (load {os.getloadavg()[0]:.2f})", file=sys.stderr)
                figures["server_s"].append(server_alone(server))
                figures["litellm_s"].append(litellm_alone(server))
                with (Path(temp) / f"agent-{run}.stderr").open("w+b") as log:
                    try:
                        for key, value in agent_run(server, cmd, Path(temp), args.size, log).items():
                            figures[key].append(value)
                    except BenchFailure as exc:
                        failures.append(f"run {run + 1}: {exc}\n{stderr_tail(log)}")
    finally:
        server.close()
    report: dict[str, Any] = {
        "size": args.size,
        "delta": args.delta,
        "fragments": -(-len(arguments(args.size)) // args.delta),
        "runs": args.runs,
        "load_before": load_before,
        "load_after": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "figures": {k: summary(v) for k, v in figures.items() if v},
        "failures": failures,
    }
    got = report["figures"]
    goals = []
    if "agent_s" in got:
        ratio = got["agent_s"]["median"] / got["server_s"]["median"]
        goals.append(("agent / server send time", f"{ratio:.2f}x", f"<= {GOAL_RATIO:g}x", ratio <= GOAL_RATIO))
        growth = got["growth_mb"]["median"]
        ok = growth <= GOAL_GROWTH_MB
        goals.append(("agent peak RSS growth", f"{growth:.1f} MB", f"<= {GOAL_GROWTH_MB:g} MB", ok))
    report["goals"] = [{"goal": g, "value": v, "target": t, "ok": ok} for g, v, t, ok in goals]
    report["ok"] = not failures and bool(goals) and all(ok for *_, ok in goals)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    return 0 if report["ok"] else 1


def print_report(report: dict[str, Any]) -> None:
    size, fragments = report["size"], report["fragments"]
    print(f"write_file argument: {size} bytes of content in {fragments} fragments of {report['delta']} characters")
    print(f"runs: {report['runs']}; load average before: {report['load_before']}, after: {report['load_after']}\n")
    names = {
        "server_s": ("server alone: send time", "s"),
        "litellm_s": ("litellm alone: first byte -> finish", "s"),
        "agent_s": ("agent: first byte -> tool_call", "s"),
        "growth_mb": ("agent: peak RSS growth over the prompt", "MB"),
    }
    for key, (name, unit) in names.items():
        if key in report["figures"]:
            f = report["figures"][key]
            print(f"  {name:<42} {f['median']:8.2f} {unit}  [{f['min']:.2f}-{f['max']:.2f}]")
    if "litellm_s" in report["figures"]:
        per = report["figures"]["litellm_s"]["median"] / fragments * 1e6
        print(f"  {'litellm per fragment':<42} {per:8.1f} us")
    print()
    for goal in report["goals"]:
        print(f"  {'PASS' if goal['ok'] else 'FAIL'}  {goal['goal']}: {goal['value']} (goal {goal['target']})")
    for failure in report["failures"]:
        print(f"  FAILURE {failure}")
    print(f"\noverall: {'PASS' if report['ok'] else 'FAIL'}")


if __name__ == "__main__":
    sys.exit(main())
