"""Shared pieces of the ACP benchmarks: bench/startup.py, bench/sessions.py, bench/turn_overhead.py, bench/mcp.py,
bench/peers.py.

This module owns what those scripts do the same way:

  JsonLinesAgent   the spawned agent (``<cmd>`` with pipes) spoken to in newline-delimited JSON-RPC 2.0, blocking:
                   send, a selector-based read with a timeout that rejects any stdout line that is not a JSON-RPC
                   2.0 message, requests from the agent answered with "method not found" (overridable),
                   ``request`` waiting for the response by id (keeping the notifications that came before it),
                   ``wait_update``, ``settle`` (until the agent's CPU time stops growing) and ``close`` on stdin EOF.
                   Arrivals are stamped with a clock of the caller's choice (time.perf_counter by default).
  HTTP             ``read_http_request``: one request as the fake model servers of bench/turn_overhead.py and
                   bench/streamed_arguments.py read it.
  stats            median / min / max / n (and p95 on request) of a list, rounded.
  /proc            the process tree (``process_children``, ``descendants``), its RSS (``tree_rss``), CPU times
                   (``cpu_times``, ``tree_cpu``), ``wait_exit`` (woken by the exit, with the rusage) and ``kill_tree``.
  environment      ``agent_env``: the environment minus CODER_AGENT_*, temp XDG config/data/state/cache dirs, and an
                   unused local model unless told otherwise; ``inherited_env`` for a bench that keeps the user's.
  command line     ``--agent CMD...`` (must come last), the few-runs warning.
  report           the agent's stderr tail, the failures / overall lines, JSON or table output and the exit status.

Stdlib only. The scripts import it as a sibling module (``import acp_bench``): a script's folder is on sys.path when
it is run as ``python bench/<name>.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import selectors
import shlex
import statistics
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

STDERR_TAIL_LINES = 15
UNUSED_API_BASE = "http://127.0.0.1:9/v1"  # nothing listens there: no model is called
UNUSED_MODEL_ENV = {"CODER_AGENT_MODEL": "openai/bench", "CODER_AGENT_API_BASE": UNUSED_API_BASE}
AGENT_EPILOG = "--agent must come last: everything after it is the agent command."

Note = tuple[dict[str, Any], int, float]  # a message from the agent, its size in bytes (with the newline), arrival


def default_agent() -> list[str]:
    """The agent command when none is given: <this python> -m coder_agent."""
    return [sys.executable, "-m", "coder_agent"]


# -- the agent over its pipes -----------------------------------------------------------------------------------------


class BenchFailure(Exception):
    """A request failed, timed out, or answered something unexpected."""


@dataclass
class Exchange:
    """One request: its result, when it was sent and answered, and the notifications that arrived in between."""

    result: dict[str, Any]
    sent: float
    arrived: float
    size: int
    notes: list[Note] = field(default_factory=list)

    @property
    def seconds(self) -> float:
        return self.arrived - self.sent

    @property
    def ms(self) -> float:
        return (self.arrived - self.sent) * 1000


class JsonLinesAgent:
    """The spawned agent and a line reader on its stdout (every line must be a JSON-RPC 2.0 message)."""

    def __init__(
        self,
        cmd: list[str],
        env: dict[str, str],
        stderr: IO[bytes],
        clock: Callable[[], float] = time.perf_counter,
        cwd: Path | None = None,
    ) -> None:
        self.clock = clock
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env, cwd=cwd
        )
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.stdin = self.proc.stdin
        self.fd = self.proc.stdout.fileno()
        self.buf = b""
        self.eof = False
        self.next_id = 0
        self.pending: deque[Note] = deque()
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.fd, selectors.EVENT_READ)

    def send(self, msg: dict[str, Any]) -> None:
        try:
            self.stdin.write((json.dumps(msg) + "\n").encode())
            self.stdin.flush()
        except (BrokenPipeError, ValueError) as exc:
            raise BenchFailure(f"cannot write to the agent ({exc}); exit code {self.proc.poll()}") from exc

    def on_request(self, msg: dict[str, Any], line: bytes, now: float) -> None:
        """A request from the agent, which arrived at `now`: refused, as none is expected (subclasses may answer)."""
        self.send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "bench: not supported"}})

    def read(self, timeout: float) -> None:
        """Read what arrives within `timeout` and queue its complete messages (requests go to `on_request`)."""
        if not self.sel.select(timeout):
            return
        chunk = os.read(self.fd, 1 << 20)
        now = self.clock()
        if not chunk:
            self.eof = True
            return
        *lines, self.buf = (self.buf + chunk).split(b"\n")
        for line in lines:
            try:
                msg = json.loads(line)
            except ValueError:
                raise BenchFailure(f"non-JSON line on the agent's stdout: {line[:200]!r}") from None
            if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
                raise BenchFailure(f"not a JSON-RPC 2.0 message on the agent's stdout: {line[:200]!r}")
            if "method" in msg and "id" in msg:
                self.on_request(msg, line, now)
                continue
            self.pending.append((msg, len(line) + 1, now))

    def request(self, method: str, params: dict[str, Any], timeout: float) -> Exchange:
        """Send a request and wait for its response, keeping the notifications that come before it."""
        self.next_id += 1
        req_id = self.next_id
        notes: list[Note] = []
        sent = self.clock()
        self.send({"jsonrpc": "2.0", "id": req_id, "method": method, "params": params})
        deadline = sent + timeout
        while True:
            while self.pending:
                msg, size, at = self.pending.popleft()
                if "method" in msg:
                    notes.append((msg, size, at))
                elif msg.get("id") == req_id:
                    if "error" in msg or not isinstance(msg.get("result"), dict):
                        raise BenchFailure(f"{method} answered {json.dumps(msg)[:300]}")
                    return Exchange(msg["result"], sent, at, size, notes)
            if self.eof:
                raise BenchFailure(f"the agent closed stdout before answering {method}; exit code {self.proc.poll()}")
            remaining = deadline - self.clock()
            if remaining <= 0:
                raise BenchFailure(f"no answer to {method} within {timeout:g} s")
            self.read(remaining)

    def wait_update(self, session_id: str, kind: str, timeout: float, seen: Sequence[Note] = ()) -> bool:
        """Whether a session/update of `kind` for `session_id` is in `seen` or arrives within `timeout`."""

        def match(msg: dict[str, Any]) -> bool:
            params = msg.get("params") or {}
            return params.get("sessionId") == session_id and (params.get("update") or {}).get("sessionUpdate") == kind

        if any(match(msg) for msg, _, _ in seen):
            return True
        deadline = self.clock() + timeout
        while True:
            while self.pending:
                if match(self.pending.popleft()[0]):
                    return True
            remaining = deadline - self.clock()
            if remaining <= 0 or self.eof:
                return False
            self.read(remaining)

    def settle(self, limit: float = 20.0) -> float:
        """Wait until the agent's CPU time stops growing (< 10 ms in 250 ms) or `limit` passes; the seconds waited.

        Its stdout is drained meanwhile, and what arrived is dropped."""
        started = self.clock()
        last = cpu_times(self.proc.pid)[0]
        while self.clock() - started < limit:
            until = self.clock() + 0.25
            while (left := until - self.clock()) > 0 and not self.eof:
                self.read(left)
            now = cpu_times(self.proc.pid)[0]
            if now - last < 0.01:
                break
            last = now
        self.pending.clear()
        return self.clock() - started

    def close(self) -> int | None:
        """Close stdin and wait for the exit (kill after 10 s); the exit code, None if it had to be killed."""
        with contextlib.suppress(OSError):
            self.stdin.close()
        try:
            code: int | None = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            code = None
        self.sel.close()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return code


# -- the fake model servers' HTTP -------------------------------------------------------------------------------------


@dataclass
class HttpRequest:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes


async def read_http_request(reader: asyncio.StreamReader) -> HttpRequest | None:
    """One HTTP/1.1 request (a body by content-length or chunked); None when the client closed the connection."""
    line = await reader.readline()
    if not line:
        return None
    method, target, _ = line.decode("latin-1").split(" ", 2)
    headers: dict[str, str] = {}
    while (header := await reader.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = header.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = bytearray()
        while size := int((await reader.readline()).split(b";")[0], 16):
            body += await reader.readexactly(size + 2)
            del body[-2:]
        await reader.readline()
    else:
        body = bytearray(await reader.readexactly(int(headers.get("content-length") or 0)))
    return HttpRequest(method, target, headers, bytes(body))


# -- figures ----------------------------------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def stats(values: list[float], digits: int = 3, *, p95: bool = False) -> dict[str, Any]:
    """median, (p95,) min, max, n and the values, rounded to `digits`; None figures when there are no values."""
    if not values:
        return {"median": None, **({"p95": None} if p95 else {}), "min": None, "max": None, "n": 0, "values": []}
    return {
        "median": round(statistics.median(values), digits),
        **({"p95": round(percentile(values, 0.95), digits)} if p95 else {}),
        "min": round(min(values), digits),
        "max": round(max(values), digits),
        "n": len(values),
        "values": [round(v, digits) for v in values],
    }


# -- /proc ------------------------------------------------------------------------------------------------------------


def _stat_fields(pid: int | str) -> list[bytes] | None:
    """The fields of /proc/<pid>/stat after "pid (comm) ": state, ppid, ...; None when it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.rfind(b")") + 2 :].split()


def process_children(*, skip_zombies: bool = False) -> dict[int, list[int]]:
    """Parent pid -> child pids, over every process in /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or (fields := _stat_fields(entry)) is None:
            continue
        if not (skip_zombies and fields[0] == b"Z"):
            children.setdefault(int(fields[1]), []).append(int(entry))
    return children


def descendants(root: int, children: dict[int, list[int]]) -> list[int]:
    """Every descendant of `root` (not `root` itself)."""
    found, stack = [], list(children.get(root, ()))
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, ()))
    return found


def tree_rss(root: int) -> tuple[float, int] | None:
    """VmRSS of `root` and all its descendants in MB, and the number of processes; None without /proc."""
    if not os.path.isdir("/proc"):
        return None
    pids = [root, *descendants(root, process_children())]
    total_kb = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total_kb += int(line.split()[1])
                        break
        except OSError:
            pass
    return total_kb / 1024, len(pids)


def tree_cpu(root: int) -> float:
    """User + system CPU seconds of `root` and its live descendants, with the children each has waited for."""
    return sum(sum(cpu_times(pid)) for pid in [root, *descendants(root, process_children())])


def wait_exit(proc: subprocess.Popen[bytes], timeout: float) -> tuple[float | None, int | None, float]:
    """Wait up to `timeout` s for `proc` to exit, woken by its exit (a pidfd), not by polling; then reap it.

    Returns when it exited (time.perf_counter(), None if it did not), its exit code, and the user + system CPU
    seconds of it and of the children it waited for (its rusage). On timeout nothing is reaped: the caller kills."""
    if proc.returncode is not None:
        return time.perf_counter(), proc.returncode, 0.0
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # no pidfd (old kernel or not Linux): Popen's own wait
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, None, 0.0
        return time.perf_counter(), proc.returncode, 0.0
    with selectors.DefaultSelector() as sel:
        sel.register(pidfd, selectors.EVENT_READ)
        ready = sel.select(timeout)
    exited = time.perf_counter()
    os.close(pidfd)
    if not ready:
        return None, None, 0.0
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return exited, proc.returncode, usage.ru_utime + usage.ru_stime


def kill_tree(root: int) -> int:
    """SIGKILL `root` and its descendants (found in /proc); how many were signalled."""
    pids = [root, *descendants(root, process_children(skip_zombies=True))]
    killed = 0
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, 9)
            killed += 1
    return killed


def cpu_times(pid: int) -> tuple[float, float]:
    """User + system CPU seconds of a process, and of its children it has waited for, from /proc (0 without it)."""
    fields = _stat_fields(pid)
    if fields is None:
        return 0.0, 0.0
    utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
    tick = os.sysconf("SC_CLK_TCK")
    return (utime + stime) / tick, (cutime + cstime) / tick


# -- the agent's environment ------------------------------------------------------------------------------------------


def agent_env(temp: Path, **variables: str) -> dict[str, str]:
    """This environment without CODER_AGENT_*, with XDG config/data/state/cache dirs created under `temp` (so the
    agent neither reads the user's config nor leaves data behind), the unused local model (no key, never called)
    and then `variables`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODER_AGENT_")}
    for name in ("CONFIG", "DATA", "STATE", "CACHE"):
        path = temp / f"xdg-{name.lower()}"
        path.mkdir(exist_ok=True)
        env[f"XDG_{name}_HOME"] = str(path)
    return env | UNUSED_MODEL_ENV | variables


def inherited_env() -> dict[str, str]:
    """This environment as is, plus the unused local model when CODER_AGENT_MODEL is unset."""
    env = dict(os.environ)
    if "CODER_AGENT_MODEL" not in env:
        env["CODER_AGENT_MODEL"] = UNUSED_MODEL_ENV["CODER_AGENT_MODEL"]
        env.setdefault("CODER_AGENT_API_BASE", UNUSED_API_BASE)
    return env


# -- command line -----------------------------------------------------------------------------------------------------


def add_agent_option(parser: argparse.ArgumentParser) -> None:
    """--agent CMD...: everything after it is the agent command (pass AGENT_EPILOG as the parser's epilog)."""
    parser.add_argument(
        "--agent", nargs=argparse.REMAINDER, metavar="CMD", help="agent command (default: <this python> -m coder_agent)"
    )


def check_agent_option(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.agent is not None and not args.agent:
        parser.error("--agent needs a command")
    if args.agent and len(args.agent) == 1 and not os.path.exists(args.agent[0]):
        args.agent = shlex.split(args.agent[0])  # allow --agent "uv run coder-agent"


def warn_few_runs(runs: int, minimum: int) -> None:
    if runs < minimum:
        print(f"warning: {runs} runs; the goals are meant for at least {minimum}", file=sys.stderr)


# -- report -----------------------------------------------------------------------------------------------------------


def stderr_tail(log: IO[bytes]) -> str:
    """The last lines of the agent's stderr log, indented for a failure message."""
    log.seek(0)
    lines = log.read().decode(errors="replace").splitlines()[-STDERR_TAIL_LINES:]
    return "\n".join("      | " + line for line in lines) if lines else "      | (agent stderr is empty)"


def print_failures(report: dict[str, Any], before: str = "\n") -> None:
    """The failures (or "failures: none") and the overall verdict; `before` precedes the FAILURES heading."""
    if report["failures"]:
        print(f"{before}FAILURES ({len(report['failures'])}):")
        for failure in report["failures"]:
            print(f"  - {failure}")
    else:
        print("failures: none")
    print(f"\noverall: {'PASS' if report['ok'] else 'FAIL'}")


def finish(report: dict[str, Any], as_json: bool, print_table: Callable[[dict[str, Any]], None]) -> int:
    """Print the report (as JSON or as a table); the exit status: 0 when it is ok, 1 otherwise."""
    if as_json:
        print(json.dumps(report, indent=2))
    else:
        print_table(report)
    return 0 if report["ok"] else 1
