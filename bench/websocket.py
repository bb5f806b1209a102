"""What a WebSocket adds per frame: the same agent over stdio and over `coder-agent serve`, side by side in one run.

Both transports are real processes started from this checkout: `coder-agent` with pipes, and `coder-agent serve`
on 127.0.0.1 (a free port, a token of this run). Each gets `initialize`, then `--warmup` and `--runs` round trips
of a cheap request the agent answers itself (`session/list` on an empty store: two frames, one each way, and no
model), alternating between the transports so that a busy machine slows both alike. The report gives each
transport's round trip (median, p95, min, max, in microseconds) and the difference of the medians: the latency
the WebSocket adds to a request and its response.

    uv run python bench/websocket.py [--runs 2000] [--warmup 200] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import acp_bench
from websockets.sync.client import connect

INITIALIZE = {"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}
READY = re.compile(r"ws://127\.0\.0\.1:(\d+)/acp")


class Stdio:
    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "coder_agent"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.ids = 0

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.ids += 1
        message = {"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params}
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()
        while True:
            answer: dict[str, Any] = json.loads(self.proc.stdout.readline())
            if answer.get("id") == self.ids:
                return answer

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


class WebSocket:
    def __init__(self, env: dict[str, str]) -> None:
        token = secrets.token_urlsafe(24)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "coder_agent", "serve", "--port", "0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**env, "CODER_AGENT_SERVE_TOKEN": token},
            text=True,
        )
        assert self.proc.stderr is not None
        port = None
        for line in self.proc.stderr:
            found = READY.search(line)
            if found:
                port = int(found.group(1))
                break
        if port is None:
            raise acp_bench.BenchFailure("coder-agent serve did not say where it listens")
        self.opened = contextlib.ExitStack()
        url, headers = f"ws://127.0.0.1:{port}/acp", {"Authorization": f"Bearer {token}"}
        self.socket = self.opened.enter_context(connect(url, additional_headers=headers))
        self.ids = 0

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.ids += 1
        self.socket.send(json.dumps({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params}))
        while True:
            answer: dict[str, Any] = json.loads(self.socket.recv())
            if answer.get("id") == self.ids:
                return answer

    def close(self) -> None:
        self.opened.close()
        self.proc.terminate()
        self.proc.wait(timeout=30)


def measure(runs: int, warmup: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-websocket-") as temp:
        env = acp_bench.agent_env(Path(temp))
        env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
        transports = {"stdio": Stdio(env), "websocket": WebSocket(env)}
        try:
            for transport in transports.values():
                transport.call("initialize", INITIALIZE)
            times: dict[str, list[float]] = {name: [] for name in transports}
            for number in range(warmup + runs):
                for name, transport in transports.items():
                    started = time.perf_counter()
                    answer = transport.call("session/list", {})
                    elapsed = time.perf_counter() - started
                    if "result" not in answer:
                        raise acp_bench.BenchFailure(f"{name}: session/list failed: {answer}")
                    if number >= warmup:
                        times[name].append(elapsed * 1e6)
        finally:
            for transport in transports.values():
                transport.close()
    report: dict[str, Any] = {name: acp_bench.stats(values, 1, p95=True) for name, values in times.items()}
    report["added_by_websocket_us"] = round(report["websocket"]["median"] - report["stdio"]["median"], 1)
    report["runs"] = runs
    report["machine"] = {"cpus": os.cpu_count(), "python": sys.version.split()[0]}
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = measure(args.runs, args.warmup)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"round trip of session/list, {args.runs} runs each, microseconds")
    for name in ("stdio", "websocket"):
        s = report[name]
        print(f"  {name:<10} median {s['median']:>8}  p95 {s['p95']:>8}  min {s['min']:>8}  max {s['max']:>8}")
    print(f"  added by the WebSocket (median): {report['added_by_websocket_us']} us per request and response")
    return 0


if __name__ == "__main__":
    sys.exit(main())
