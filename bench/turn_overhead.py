"""Turn overhead benchmark for coder-agent: what the agent adds to a prompt turn on top of litellm's own cost.

The agent is spawned as an ACP editor spawns it (``<this python> -m coder_agent``, JSON-RPC 2.0 lines on its
stdin/stdout), pointed at a fake OpenAI-compatible model server on 127.0.0.1 that answers at once. Then the same
model requests are made directly with ``litellm.acompletion(stream=True)`` in this process, against the same server,
and the two are compared. Four figures:

  1. model round trip  A prompt whose model call returns a short text (six 8-character deltas): time from writing
                       ``session/prompt`` to reading its response. Against it, the same request made directly: the
                       server logs every request body, and each of the agent's requests (system prompt, history,
                       tool schemas) is replayed with litellm, timed from the ``acompletion`` call to the end of the
                       stream. Added = median(agent) - median(direct). For information, the tail: how long the tasks
                       litellm started during a direct call (success logging, cost) run on after the stream ended.
                       The direct timing leaves them out; in the agent they share the loop with its post-stream work,
                       so part of "added" is litellm's own.
  2. tool round trip   A prompt where the model first asks for ``read_file`` on a small file in the session folder,
                       then answers a short text. The client advertises no capabilities (``clientCapabilities:
                       {}``), so the agent reads the file from disk and needs no permission. A tool round trip is
                       what the tool adds to a prompt: the tool call, its result back to the model, and one more
                       model call. Added = (median(tool prompt) - median(text prompt)) - median(direct) of figure
                       1. For information, the whole tool prompt minus two direct calls is printed too.
  3. relay throughput  A reply of 2000 one-character text deltas written as fast as the socket takes them:
                       agent_message_chunk notifications per second at the client, (n - 1) / (last - first
                       arrival), against chunks per second out of litellm's stream iterated directly.
  4. relay delay       A reply of 10 text deltas 20 ms apart, so each one travels alone. The server stamps each
                       delta with ``time.perf_counter()`` just before writing it and puts the stamp in its text
                       (CLOCK_MONOTONIC on Linux: one clock for every process on the machine). Delay = arrival -
                       stamp: at the client for each agent_message_chunk, and in this process for each chunk out of
                       litellm's iterator. Relay delay = agent delay - direct delay (median and p95), for the first
                       delta of each reply and for all of them.
  5. parallel reads    A reply holding one ``read_file`` call, then one holding five, on an agent of its own whose
                       client advertises ``fs.readTextFile`` and answers each read after 50 ms (an editor's read
                       that takes that long). Span = the first call shown (``tool_call``) to the last one completed,
                       at the client. Ratio = median(five reads) / median(one read).

Figures 1 to 4 count the model's own message only: the chunks with its messageId (the agent's notes, such as
the one about what stands in for a capability the client lacks, come first with ids of their own).

Each figure has a session of its own (one agent process for figures 1 to 4, another for 5, cwd a temp folder outside
any git repository).
Figures 1, 2, 4 and 5 take ``--runs`` prompts (default 20) after 3 warm-ups; figure 3 takes max(3, runs // 4) after
1 warm-up. The agent's prompts of a figure run back to back, then the direct calls replaying their bodies (warm-ups
too) run back to back: each side stays equally warm. (Interleaving them one by one leaves the agent idle between
its prompts, and a woken idle process is measurably slower; an editor's user is idle far longer, so absolute
figures in real use can be a few ms higher on both sides.)

The fake model server is a stdlib asyncio HTTP/1.1 server (keep-alive, chunked SSE in chat.completion.chunk format:
role chunk, content or tool-call deltas, finish_reason chunk, usage chunk, ``[DONE]``) running in a child process
(this script with ``--serve``), so it shares a GIL with neither side. Which reply a request gets depends on a
``BENCH:<kind>`` tag in its last user message, or on a last message of role ``tool`` (the answer after a tool
call); ``GET /_bench/requests?from=N`` returns the bodies of the chat requests it got, from the N-th on.

Each session/prompt must end with ``end_turn`` and deliver the expected text; the tool prompt must show a
completed ``read_file`` call and send the file's text back to the model. Requests from the agent to the client are
answered with a JSON-RPC error and reported as failures (none are expected, but figure 5's reads). The agent gets
temp XDG_CONFIG_HOME,
XDG_DATA_HOME, XDG_STATE_HOME and XDG_CACHE_HOME, so it neither reads the user's config nor leaves data behind.

Goals, each with PASS/FAIL:
  model round trip   added <= 10 ms (median)
  tool round trip    added <= 10 ms (median)
  relay delay        first delta relayed within 5 ms of its arrival (median relay delay of first deltas)
  parallel reads     five reads of 50 ms in one reply take <= 1.3 x one read

Usage (from the repository root; Linux):

  uv run python bench/turn_overhead.py                 # 20 runs
  uv run python bench/turn_overhead.py --runs 50
  uv run python bench/turn_overhead.py --json          # the figures as JSON on stdout
  uv run python bench/turn_overhead.py --agent .venv/bin/coder-agent
                                                       # --agent comes last: everything after it is the command

Exit status: 0 when every prompt succeeded and every goal passed, 1 otherwise, 2 on usage errors.

Stdlib + litellm (the project's dependency) + bench/acp_bench.py only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.metadata
import json
import os
import platform
import re
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from acp_bench import (
    AGENT_EPILOG,
    add_agent_option,
    agent_env,
    check_agent_option,
    default_agent,
    finish,
    print_failures,
    read_http_request,
    stats,
    stderr_tail,
    warn_few_runs,
)

GOAL_ROUND_TRIP_MS = 10.0
GOAL_FIRST_CHUNK_MS = 5.0
GOAL_PARALLEL_READS = 1.3  # five reads in one reply take at most this many times one read
PARALLEL_READS = 5
READ_DELAY = 0.05  # the client answers each fs/read_text_file after this long
MIN_RUNS = 20
WARMUPS = 3
BURST_CHUNKS = 2000
PACED_CHUNKS = 10
PACED_GAP_MS = 20
REQUEST_TIMEOUT = 60.0
EOF_KILL_S = 5.0

MODEL = "openai/fake-model"
API_KEY = "sk-test"
IDLE_TIMEOUT = 120.0  # the agent's default idle_timeout, passed to litellm as `timeout`
SHORT_TEXT = "Done: the answer is 42, nothing else to change."  # 6 deltas of 8 characters
AFTER_TOOL_TEXT = "I read small.txt; it holds ten short lines."
SMALL_FILE = "small.txt"
SMALL_TEXT = "".join(f"line {i}: bench-marker-{i}\n" for i in range(1, 11))
TEXT_CHUNK_SIZE = 8
REQUESTS_PATH = "/_bench/requests"
TAG = re.compile(r"BENCH:(text|tool|burst|paced|reads)(?::(\d+))?(?::(\d+))?")
STAMP = re.compile(r"<([0-9.]+)>")
SELF = str(Path(__file__).resolve())  # run again with --serve: the model server's process

# =====================================================================================================================
# The fake model server (child process, `--serve`)
# =====================================================================================================================


def _message_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def pick_reply(messages: list[dict[str, Any]]) -> tuple[str, int, float]:
    """(kind, count, gap in seconds) for a request: the BENCH tag of the last user message; text after a tool."""
    if messages and messages[-1].get("role") == "tool":
        return "after_tool", 0, 0.0
    for message in reversed(messages):
        if message.get("role") == "user":
            match = TAG.search(_message_text(message.get("content")))
            if match:
                kind, count, gap = match.groups()
                return kind, int(count or 0), int(gap or 0) / 1000
            break
    return "text", 0, 0.0


class ModelServer:
    """Chat completions streamed at once, over HTTP/1.1 with keep-alive."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.number = 0

    async def connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await self._request(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass
        except asyncio.CancelledError:  # the server is shutting down: end quietly (asyncio would log a cancelled task)
            pass
        finally:
            writer.close()

    async def _request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        request = await read_http_request(reader)
        if request is None:
            return False
        method, target, body = request.method, request.target, request.body
        keep = request.headers.get("connection", "").lower() != "close"
        path, _, query = target.partition("?")
        path = path.rstrip("/")
        if method == "GET" and path == REQUESTS_PATH:
            start = int(query.removeprefix("from=") or 0)
            self._send_json(writer, 200, b"[" + b",".join(self.bodies[start:]) + b"]", keep)
        elif method == "POST" and path.endswith("/chat/completions"):
            self.bodies.append(bytes(body))
            await self._stream(writer, json.loads(body), keep)
        else:
            self._send_json(writer, 404, b'{"error": {"message": "no such route", "type": "not_found"}}', keep)
        await writer.drain()
        return keep

    @staticmethod
    def _send_json(writer: asyncio.StreamWriter, status: int, payload: bytes, keep: bool) -> None:
        head = f"HTTP/1.1 {status} {'OK' if status == 200 else 'Not Found'}\r\ncontent-type: application/json\r\n"
        head += f"content-length: {len(payload)}\r\n" + ("" if keep else "connection: close\r\n") + "\r\n"
        writer.write(head.encode() + payload)

    async def _stream(self, writer: asyncio.StreamWriter, body: dict[str, Any], keep: bool) -> None:
        self.number += 1
        messages = body.get("messages") or []
        kind, count, gap = pick_reply(messages)
        options = body.get("stream_options")
        with_usage = isinstance(options, dict) and bool(options.get("include_usage"))
        base = {
            "id": f"chatcmpl-bench-{self.number}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": str(body.get("model") or "fake-model"),
            "system_fingerprint": "fp_fake",
        }

        def event(delta: dict[str, Any], finish: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            data = json.dumps({**base, "choices": [choice], "usage": None}, separators=(",", ":"))
            return frame(b"data: " + data.encode() + b"\n\n")

        def frame(data: bytes) -> bytes:  # one HTTP/1.1 chunk
            return b"%x\r\n%s\r\n" % (len(data), data)

        head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ncache-control: no-cache\r\n"
        head += "transfer-encoding: chunked\r\n" + ("" if keep else "connection: close\r\n") + "\r\n"
        writer.write(head.encode() + event({"role": "assistant", "content": ""}))
        produced, finish = 0, "stop"
        if kind == "tool":
            call = {"index": 0, "id": f"call_{self.number}_0", "type": "function"}
            writer.write(event({"tool_calls": [{**call, "function": {"name": "read_file", "arguments": ""}}]}))
            arguments = json.dumps({"path": SMALL_FILE})
            writer.write(event({"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]}))
            produced, finish = len(arguments) + 9, "tool_calls"
        elif kind == "reads":  # `count` read_file calls in one reply
            for index in range(count):
                call = {"index": index, "id": f"call_{self.number}_{index}", "type": "function"}
                writer.write(event({"tool_calls": [{**call, "function": {"name": "read_file", "arguments": ""}}]}))
                arguments = json.dumps({"path": SMALL_FILE})
                writer.write(event({"tool_calls": [{"index": index, "function": {"arguments": arguments}}]}))
            produced, finish = count * 30, "tool_calls"
        elif kind == "burst":
            for i in range(count):
                writer.write(event({"content": "x"}))
                if i % 200 == 199:
                    await writer.drain()
            produced = count
        elif kind == "paced":
            await writer.drain()
            before, after = event({"content": "\0"}).split(b"\\u0000")
            before = before.split(b"\r\n", 1)[1]  # drop the chunk-size line: the length changes with the stamp
            after = after[: -len(b"\r\n")]
            for _ in range(count):
                await asyncio.sleep(gap)
                data = before + b"<%r>" % time.perf_counter() + after
                writer.write(frame(data))
            produced = count * 20
        else:
            text = AFTER_TOOL_TEXT if kind == "after_tool" else SHORT_TEXT
            for i in range(0, len(text), TEXT_CHUNK_SIZE):
                writer.write(event({"content": text[i : i + TEXT_CHUNK_SIZE]}))
            produced = len(text)
        writer.write(event({}, finish))
        if with_usage:
            prompt = max(1, len(json.dumps(messages)) // 4)
            completion = max(1, produced // 4)
            usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
            data = json.dumps({**base, "choices": [], "usage": usage}, separators=(",", ":"))
            writer.write(frame(b"data: " + data.encode() + b"\n\n"))
        writer.write(frame(b"data: [DONE]\n\n") + b"0\r\n\r\n")


async def serve_model() -> None:
    """Serve on 127.0.0.1 until stdin closes; the first stdout line is the port."""
    model = ModelServer()
    server = await asyncio.start_server(model.connection, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    sys.stdout.write(f"{port}\n")
    sys.stdout.flush()
    async with server:
        await asyncio.to_thread(sys.stdin.buffer.read)  # returns at EOF: the parent is done or gone


# =====================================================================================================================
# The editor side: a JSON-lines ACP client over the agent's pipes
# =====================================================================================================================


class RunFailure(Exception):
    """The run cannot go on: no response in time, the agent died, an error response."""


@dataclass
class Update:
    at: float
    kind: str
    update: dict[str, Any]


class AcpClient:
    """Spawns the agent and talks to it; each session/update goes to the list registered for its session."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.next_id = 1
        self.pending: dict[int, asyncio.Future[tuple[dict[str, Any], float]]] = {}
        self.sinks: dict[str, list[Update]] = {}
        self.agent_requests: list[str] = []
        self.bad_lines: list[str] = []
        self.files: Path | None = None
        """Where fs/read_text_file is served from, after READ_DELAY (None: refused, as every other request)."""
        self.served: list[asyncio.Task[None]] = []
        self.reader = asyncio.ensure_future(self._read())

    @classmethod
    async def spawn(cls, cmd: list[str], env: dict[str, str], stderr: IO[bytes]) -> AcpClient:
        try:
            process = await asyncio.create_subprocess_exec(
                *cmd,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr,
                env=env,
                limit=1 << 26,
            )
        except OSError as exc:
            raise RunFailure(f"cannot spawn {shlex.join(cmd)}: {exc}") from exc
        return cls(process)

    def _write(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    async def _read(self) -> None:
        assert self.process.stdout is not None
        stdout = self.process.stdout
        try:
            while line := await stdout.readline():
                at = time.perf_counter()
                try:
                    message = json.loads(line)
                except ValueError:
                    if line.strip():
                        self.bad_lines.append(f"not JSON on stdout: {line[:200]!r}")
                    continue
                if not isinstance(message, dict):
                    self.bad_lines.append(f"not a JSON object on stdout: {line[:200]!r}")
                elif "method" in message:
                    self._on_call(message, at)
                else:
                    future = self.pending.pop(message.get("id"), None)  # type: ignore[arg-type]
                    if future is not None and not future.done():
                        future.set_result((message, at))
        finally:
            for future in self.pending.values():
                if not future.done():
                    future.set_exception(RunFailure("the agent closed its stdout (it exited?)"))

    def _on_call(self, message: dict[str, Any], at: float) -> None:
        method = str(message["method"])
        if "id" in message and method == "fs/read_text_file" and self.files is not None:
            self.served.append(asyncio.ensure_future(self._read_later(message)))
            return
        if "id" in message:  # a request to the client: this bench offers nothing (but slow reads, when asked to)
            self.agent_requests.append(method)
            error = {"code": -32601, "message": f"bench client: {method} is not supported"}
            with contextlib.suppress(ConnectionError):
                self._write({"jsonrpc": "2.0", "id": message["id"], "error": error})
            return
        if method != "session/update":
            return
        params = message.get("params") or {}
        sink = self.sinks.get(params.get("sessionId"))
        if sink is not None:
            update = params.get("update") or {}
            sink.append(Update(at, str(update.get("sessionUpdate")), update))

    async def _read_later(self, message: dict[str, Any]) -> None:
        """Answer a read after READ_DELAY, as an editor whose reads take that long."""
        await asyncio.sleep(READ_DELAY)
        assert self.files is not None
        reply = read_inside(Path(str((message.get("params") or {}).get("path", ""))), self.files)
        with contextlib.suppress(ConnectionError):
            self._write({"jsonrpc": "2.0", "id": message["id"], **reply})

    async def request(self, method: str, params: dict[str, Any]) -> tuple[dict[str, Any], float, float]:
        """(result, time written, time the response arrived)."""
        request_id = self.next_id
        self.next_id += 1
        future: asyncio.Future[tuple[dict[str, Any], float]] = asyncio.get_running_loop().create_future()
        self.pending[request_id] = future
        assert self.process.stdin is not None
        sent = time.perf_counter()
        try:
            self._write({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
            await self.process.stdin.drain()
            message, at = await asyncio.wait_for(future, REQUEST_TIMEOUT)
        except TimeoutError:
            raise RunFailure(f"no response to {method} within {REQUEST_TIMEOUT:g} s") from None
        except ConnectionError:
            raise RunFailure(f"cannot send {method}: the agent's stdin is closed (did it exit?)") from None
        finally:
            self.pending.pop(request_id, None)
            if not future.done():
                future.cancel()
            elif not future.cancelled():
                future.exception()  # retrieved: asyncio would log it at exit otherwise
        if "error" in message:
            raise RunFailure(f"{method} failed: {json.dumps(message['error'])[:300]}")
        return message.get("result") or {}, sent, at

    async def prompt(self, session_id: str, text: str) -> tuple[float, list[Update], str]:
        """(seconds from writing session/prompt to its response, the session's updates meanwhile, stop reason)."""
        sink: list[Update] = []
        self.sinks[session_id] = sink
        try:
            params = {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
            result, sent, at = await self.request("session/prompt", params)
        finally:
            self.sinks.pop(session_id, None)
        return at - sent, sink, str(result.get("stopReason"))

    async def close(self) -> int | None:
        """Close stdin, wait for the exit (kill after EOF_KILL_S); the exit code, None when it had to be killed."""
        assert self.process.stdin is not None
        with contextlib.suppress(ConnectionError):
            self.process.stdin.close()
        try:
            code: int | None = await asyncio.wait_for(self.process.wait(), EOF_KILL_S)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()
            code = None
        self.reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, RunFailure):
            await self.reader
        return code


def read_inside(path: Path, root: Path) -> dict[str, Any]:
    """The answer to fs/read_text_file of `path`: its text when it is under `root` (a small file), else an error."""
    if not path.resolve().is_relative_to(root):
        return {"error": {"code": -32602, "message": "bench: outside the project"}}
    return {"result": {"content": path.read_text(encoding="utf-8")}}


def texts(updates: list[Update]) -> list[tuple[float, str]]:
    """(arrival, text) of each chunk of the model's own message: the one the prompt ends with, by its messageId (the
    agent's notes, such as what stands in for a capability the client lacks, have ids of their own)."""
    chunks = [u for u in updates if u.kind == "agent_message_chunk"]
    model = chunks[-1].update.get("messageId") if chunks else None
    return [
        (u.at, str(u.update.get("content", {}).get("text", ""))) for u in chunks if u.update.get("messageId") == model
    ]


# =====================================================================================================================
# The direct side: litellm in this process
# =====================================================================================================================


class Direct:
    """litellm.acompletion with the agent's parameters, replaying the body of one of the agent's requests."""

    def __init__(self, base_url: str) -> None:
        os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
        import litellm

        litellm.suppress_debug_info = True
        litellm.drop_params = True  # as the agent sets it
        litellm.telemetry = False
        self.litellm = litellm
        self.base_url = base_url

    async def call(self, body: dict[str, Any]) -> tuple[float, list[tuple[float, str]], float]:
        """(seconds from the acompletion call to the end of the stream, (arrival, text) of each text delta, tail).

        The tail: how long the tasks litellm started during the call (its success logging, cost, ...) keep running
        after the stream ended. They are waited for, so the next call starts on a quiet loop, as in the agent, whose
        next prompt comes after its response; inside the agent they share the loop with its post-stream work.
        """
        before = asyncio.all_tasks()
        params: dict[str, Any] = {
            "model": MODEL,
            "messages": body["messages"],
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_retries": 0,
            "timeout": IDLE_TIMEOUT,
            "api_key": API_KEY,
            "api_base": self.base_url,
        }
        if body.get("tools"):
            params["tools"] = body["tools"]
        for key in ("temperature", "max_tokens", "max_completion_tokens", "reasoning_effort", "tool_choice"):
            if key in body:
                params[key] = body[key]
        chunks: list[tuple[float, str]] = []
        start = time.perf_counter()
        response = await self.litellm.acompletion(**params)
        async for chunk in response:
            if chunk.choices and chunk.choices[0].delta.content:
                chunks.append((time.perf_counter(), chunk.choices[0].delta.content))
        end = time.perf_counter()
        started = asyncio.all_tasks() - before - {asyncio.current_task()}
        if started:
            await asyncio.wait(started, timeout=1.0)  # a task still running after 1 s is not per-call work
        return end - start, chunks, time.perf_counter() - end


async def http_get_json(port: int, path: str) -> Any:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(f"GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n".encode())
        await writer.drain()
        raw = await reader.read()
    finally:
        writer.close()
    return json.loads(raw.split(b"\r\n\r\n", 1)[1])


# =====================================================================================================================
# The measurements
# =====================================================================================================================


@dataclass
class Results:
    agent_text_ms: list[float] = field(default_factory=list)
    direct_text_ms: list[float] = field(default_factory=list)
    direct_tail_ms: list[float] = field(default_factory=list)
    agent_tool_ms: list[float] = field(default_factory=list)
    agent_burst_rate: list[float] = field(default_factory=list)
    direct_burst_rate: list[float] = field(default_factory=list)
    agent_burst_ms: list[float] = field(default_factory=list)
    direct_burst_ms: list[float] = field(default_factory=list)
    agent_first_ms: list[float] = field(default_factory=list)
    direct_first_ms: list[float] = field(default_factory=list)
    agent_delay_ms: list[float] = field(default_factory=list)
    direct_delay_ms: list[float] = field(default_factory=list)
    one_read_ms: list[float] = field(default_factory=list)
    parallel_reads_ms: list[float] = field(default_factory=list)
    request: dict[str, Any] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)


def rate(arrivals: list[float]) -> float | None:
    if len(arrivals) < 2 or arrivals[-1] <= arrivals[0]:
        return None
    return (len(arrivals) - 1) / (arrivals[-1] - arrivals[0])


def stamped_delays(chunks: list[tuple[float, str]]) -> list[float]:
    """Arrival - server stamp, in ms, for each text delta carrying a stamp, in order."""
    delays = []
    for at, text in chunks:
        match = STAMP.search(text)
        if match:
            delays.append((at - float(match.group(1))) * 1000)
    return delays


class Bench:
    def __init__(self, client: AcpClient, direct: Direct, port: int, cwd: Path, runs: int, progress: bool) -> None:
        self.client = client
        self.direct = direct
        self.port = port
        self.cwd = cwd
        self.runs = runs
        self.progress = progress
        self.results = Results()
        self.seen = 0  # model requests already fetched from the server's log

    def note(self, text: str) -> None:
        if self.progress:
            print(f"\r{text:<60}", end="", file=sys.stderr, flush=True)

    async def new_session(self) -> str:
        result, _, _ = await self.client.request("session/new", {"cwd": str(self.cwd), "mcpServers": []})
        return str(result["sessionId"])

    async def agent_prompt(self, session: str, text: str, label: str) -> tuple[float, list[Update]]:
        seconds, updates, stop = await self.client.prompt(session, text)
        if stop != "end_turn":
            raise RunFailure(f"{label}: stopReason {stop!r}, expected 'end_turn'")
        return seconds, updates

    async def new_bodies(self) -> list[dict[str, Any]]:
        """The bodies of the chat requests the model server got since the last call."""
        bodies = await http_get_json(self.port, f"{REQUESTS_PATH}?from={self.seen}")
        self.seen += len(bodies)
        return list(bodies)

    async def agent_block(self, session: str, text: str, label: str, count: int) -> list[tuple[float, list[Update]]]:
        """`count` prompts back to back: (seconds, updates) of each."""
        out = []
        for i in range(count):
            self.note(f"{label}: agent {i + 1}/{count}")
            out.append(await self.agent_prompt(session, text, label))
        return out

    async def direct_block(self, bodies: list[dict[str, Any]], label: str) -> list[tuple[float, list[Any], float]]:
        """Each body replayed with litellm, back to back: (seconds, text deltas, tail seconds) of each.

        The server logs the replayed requests too: each must equal the agent's, or the comparison is unfair.
        """
        out = []
        for i, body in enumerate(bodies):
            self.note(f"{label}: direct {i + 1}/{len(bodies)}")
            out.append(await self.direct.call(body))
        replayed = await self.new_bodies()
        differing = sum(a != b for a, b in zip(bodies, replayed, strict=False)) + abs(len(bodies) - len(replayed))
        if differing:
            self.results.failures.append(f"{label}: {differing} direct request(s) differ from the agent's")
        return out

    def check_text(self, label: str, got: str, expected: str) -> None:
        if got != expected:
            self.results.failures.append(f"{label}: text {got[:120]!r}, expected {expected[:120]!r}")

    async def model_round_trip(self) -> None:
        r = self.results
        session = await self.new_session()
        await self.new_bodies()
        agent = await self.agent_block(session, "BENCH:text", "model round trip", WARMUPS + self.runs)
        bodies = await self.new_bodies()
        if len(bodies) != len(agent):
            raise RunFailure(f"model round trip: {len(bodies)} model requests for {len(agent)} prompts")
        direct = await self.direct_block(bodies, "model round trip")
        for i, ((seconds, updates), (direct_seconds, chunks, tail)) in enumerate(zip(agent, direct, strict=True)):
            self.check_text("model round trip (agent)", "".join(t for _, t in texts(updates)), SHORT_TEXT)
            self.check_text("model round trip (direct)", "".join(t for _, t in chunks), SHORT_TEXT)
            if i >= WARMUPS:
                r.agent_text_ms.append(seconds * 1000)
                r.direct_text_ms.append(direct_seconds * 1000)
                r.direct_tail_ms.append(tail * 1000)
        r.request = describe_request(bodies[-1])

    async def tool_round_trip(self) -> None:
        session = await self.new_session()
        await self.new_bodies()
        agent = await self.agent_block(session, "BENCH:tool", "tool round trip", WARMUPS + self.runs)
        for i, (seconds, updates) in enumerate(agent):
            statuses = [u.update.get("status") for u in updates if u.kind in ("tool_call", "tool_call_update")]
            starts = [u.update for u in updates if u.kind == "tool_call"]
            if len(starts) != 1 or starts[0].get("kind") != "read" or "completed" not in statuses:
                self.results.failures.append(f"tool round trip: no completed read_file call (statuses {statuses})")
            self.check_text("tool round trip", "".join(t for _, t in texts(updates)), AFTER_TOOL_TEXT)
            if i >= WARMUPS:
                self.results.agent_tool_ms.append(seconds * 1000)
        bodies = await self.new_bodies()
        if len(bodies) != 2 * len(agent):
            self.results.failures.append(f"tool round trip: {len(bodies)} model requests for {len(agent)} prompts")
        last = bodies[-1]["messages"][-1] if bodies else {}
        if last.get("role") != "tool" or "bench-marker-10" not in _message_text(last.get("content")):
            self.results.failures.append(f"tool round trip: the file's text did not reach the model: {last!r:.200}")

    async def throughput(self, runs: int) -> None:
        r = self.results
        session = await self.new_session()
        await self.new_bodies()
        agent = await self.agent_block(session, f"BENCH:burst:{BURST_CHUNKS}", "relay throughput", 1 + runs)
        direct = await self.direct_block(await self.new_bodies(), "relay throughput")
        for i, ((seconds, updates), (direct_seconds, direct_chunks, _)) in enumerate(zip(agent, direct, strict=True)):
            agent_chunks = texts(updates)
            for side, chunks in (("agent", agent_chunks), ("direct", direct_chunks)):
                if len(chunks) != BURST_CHUNKS or "".join(t for _, t in chunks) != "x" * BURST_CHUNKS:
                    r.failures.append(f"relay throughput ({side}): {len(chunks)} text chunks, expected {BURST_CHUNKS}")
            agent_rate, direct_rate = rate([at for at, _ in agent_chunks]), rate([at for at, _ in direct_chunks])
            if i and agent_rate is not None and direct_rate is not None:
                r.agent_burst_rate.append(agent_rate)
                r.direct_burst_rate.append(direct_rate)
                r.agent_burst_ms.append(seconds * 1000)
                r.direct_burst_ms.append(direct_seconds * 1000)

    async def relay_delay(self) -> None:
        r = self.results
        session = await self.new_session()
        await self.new_bodies()
        tag = f"BENCH:paced:{PACED_CHUNKS}:{PACED_GAP_MS}"
        agent = await self.agent_block(session, tag, "relay delay", WARMUPS + self.runs)
        direct = await self.direct_block(await self.new_bodies(), "relay delay")
        for i, ((_, updates), (_, chunks, _)) in enumerate(zip(agent, direct, strict=True)):
            agent_delays, direct_delays = stamped_delays(texts(updates)), stamped_delays(chunks)
            for side, delays in (("agent", agent_delays), ("direct", direct_delays)):
                if len(delays) != PACED_CHUNKS:
                    r.failures.append(f"relay delay ({side}): {len(delays)} stamped chunks, expected {PACED_CHUNKS}")
            if i >= WARMUPS and agent_delays and direct_delays:
                r.agent_first_ms.append(agent_delays[0])
                r.direct_first_ms.append(direct_delays[0])
                r.agent_delay_ms.extend(agent_delays)
                r.direct_delay_ms.extend(direct_delays)

    async def parallel_reads(self) -> None:
        """Prompts whose one reply holds 1, then PARALLEL_READS, read_file calls, each read answered by the client
        after READ_DELAY: the span from the first call shown to the last one completed."""
        session = await self.new_session()
        for count, into in ((1, self.results.one_read_ms), (PARALLEL_READS, self.results.parallel_reads_ms)):
            label = f"{count} read(s) in one reply"
            agent = await self.agent_block(session, f"BENCH:reads:{count}", label, WARMUPS + self.runs)
            for i, (_, updates) in enumerate(agent):
                shown = [u.at for u in updates if u.kind == "tool_call"]
                done = [u.at for u in updates if u.kind == "tool_call_update" and u.update.get("status") == "completed"]
                if len(shown) != count or len(done) != count:
                    self.results.failures.append(f"{label}: {len(shown)} calls shown, {len(done)} completed")
                elif i >= WARMUPS:
                    into.append((max(done) - min(shown)) * 1000)
        await self.new_bodies()


def describe_request(body: dict[str, Any]) -> dict[str, Any]:
    messages = body.get("messages") or []
    system = next((m for m in messages if m.get("role") == "system"), None)
    return {
        "messages": len(messages),
        "tools": len(body.get("tools") or []),
        "body_bytes": len(json.dumps(body)),
        "system_prompt_chars": len(_message_text(system.get("content"))) if system else 0,
        "keys": sorted(body),
    }


# =====================================================================================================================
# Report
# =====================================================================================================================


def diff(a: float | None, b: float | None, factor: float = 1.0) -> float | None:
    return None if a is None or b is None else round(a - factor * b, 3)


def build_report(r: Results, runs: int, burst_runs: int, cmd: list[str], failures: list[str]) -> dict[str, Any]:
    def summary(values: list[float]) -> dict[str, Any]:
        return stats(values, p95=True)

    figures = {
        "agent_text_ms": summary(r.agent_text_ms),
        "direct_text_ms": summary(r.direct_text_ms),
        "direct_tail_ms": summary(r.direct_tail_ms),
        "agent_tool_ms": summary(r.agent_tool_ms),
        "agent_burst_chunks_per_s": summary(r.agent_burst_rate),
        "direct_burst_chunks_per_s": summary(r.direct_burst_rate),
        "agent_burst_ms": summary(r.agent_burst_ms),
        "direct_burst_ms": summary(r.direct_burst_ms),
        "agent_first_chunk_delay_ms": summary(r.agent_first_ms),
        "direct_first_chunk_delay_ms": summary(r.direct_first_ms),
        "agent_chunk_delay_ms": summary(r.agent_delay_ms),
        "direct_chunk_delay_ms": summary(r.direct_delay_ms),
        "one_read_ms": summary(r.one_read_ms),
        "parallel_reads_ms": summary(r.parallel_reads_ms),
    }
    med = {name: fig["median"] for name, fig in figures.items()}
    p95 = {name: fig["p95"] for name, fig in figures.items()}
    derived = {
        "model_round_trip_added_ms": diff(med["agent_text_ms"], med["direct_text_ms"]),
        "tool_round_trip_added_ms": diff(diff(med["agent_tool_ms"], med["agent_text_ms"]), med["direct_text_ms"]),
        "tool_prompt_added_ms": diff(med["agent_tool_ms"], med["direct_text_ms"], 2.0),
        "tool_turn_minus_text_turn_ms": diff(med["agent_tool_ms"], med["agent_text_ms"]),
        "throughput_ratio": (
            round(med["agent_burst_chunks_per_s"] / med["direct_burst_chunks_per_s"], 3)
            if med["agent_burst_chunks_per_s"] and med["direct_burst_chunks_per_s"]
            else None
        ),
        "first_chunk_relay_ms": {
            "median": diff(med["agent_first_chunk_delay_ms"], med["direct_first_chunk_delay_ms"]),
            "p95": diff(p95["agent_first_chunk_delay_ms"], p95["direct_first_chunk_delay_ms"]),
        },
        "chunk_relay_ms": {
            "median": diff(med["agent_chunk_delay_ms"], med["direct_chunk_delay_ms"]),
            "p95": diff(p95["agent_chunk_delay_ms"], p95["direct_chunk_delay_ms"]),
        },
        "parallel_reads_ratio": (
            round(med["parallel_reads_ms"] / med["one_read_ms"], 3)
            if med["parallel_reads_ms"] and med["one_read_ms"]
            else None
        ),
    }

    def goal(name: str, text: str, value: float | None, limit: float) -> dict[str, Any]:
        return {
            "figure": name,
            "goal": text,
            "value": value,
            "limit": limit,
            "pass": value is not None and value <= limit,
        }

    first_relay = derived["first_chunk_relay_ms"]["median"]
    goals = [
        goal(
            "model_round_trip_added_ms",
            f"<= {GOAL_ROUND_TRIP_MS:g} ms",
            derived["model_round_trip_added_ms"],
            GOAL_ROUND_TRIP_MS,
        ),
        goal(
            "tool_round_trip_added_ms",
            f"<= {GOAL_ROUND_TRIP_MS:g} ms",
            derived["tool_round_trip_added_ms"],
            GOAL_ROUND_TRIP_MS,
        ),
        goal("first_chunk_relay_ms", f"median <= {GOAL_FIRST_CHUNK_MS:g} ms", first_relay, GOAL_FIRST_CHUNK_MS),
        goal(
            "parallel_reads_ratio",
            f"<= {GOAL_PARALLEL_READS:g} x",
            derived["parallel_reads_ratio"],
            GOAL_PARALLEL_READS,
        ),
    ]
    return {
        "python": platform.python_version(),
        "executable": sys.executable,
        "litellm": _version("litellm"),
        "cpus": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "agent": cmd,
        "runs": runs,
        "warmups": WARMUPS,
        "burst_runs": burst_runs,
        "burst_chunks": BURST_CHUNKS,
        "paced_chunks": PACED_CHUNKS,
        "paced_gap_ms": PACED_GAP_MS,
        "request": r.request,
        "figures": figures,
        "derived": derived,
        "goals": goals,
        "failures": failures,
        "ok": not failures and all(g["pass"] for g in goals),
    }


def _version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def print_report(report: dict[str, Any]) -> None:
    figures, derived = report["figures"], report["derived"]
    goals = {g["figure"]: g for g in report["goals"]}

    def num(value: float | None, unit: str = "ms", digits: int = 2) -> str:
        return "-" if value is None else f"{value:.{digits}f} {unit}"

    def verdict(name: str) -> str:
        g = goals[name]
        return f"{g['goal']:<18}{'PASS' if g['pass'] else 'FAIL'}"

    print(
        f"coder-agent turn overhead: {report['runs']} runs after {report['warmups']} warm-ups "
        "(fake model on 127.0.0.1, answering at once)"
    )
    print(f"python   {report['python']} ({report['executable']}), litellm {report['litellm']}")
    load = ", ".join(f"{x:.2f}" for x in report["load_average"])
    print(f"host     {platform.system()} {platform.machine()}, {report['cpus']} CPUs, load average {load} at the end")
    print(f"agent    {shlex.join(report['agent'])}")
    req = report["request"]
    if req:
        print(
            f"request  replayed directly (the agent's last text prompt): {req['messages']} messages, "
            f"{req['tools']} tools, {req['body_bytes']} bytes of JSON "
            f"(system prompt {req['system_prompt_chars']} chars)"
        )
    print()
    header = f"{'figure':<44}{'median':>12}{'p95':>12}{'min':>12}{'max':>12}{'n':>6}"
    print(header)
    print("-" * len(header))
    rows = [
        ("model round trip: agent prompt", "agent_text_ms", "ms", 2),
        ("model round trip: litellm direct", "direct_text_ms", "ms", 2),
        ("  litellm's own tasks after the stream (info)", "direct_tail_ms", "ms", 2),
        ("tool round trip: agent prompt", "agent_tool_ms", "ms", 2),
        (f"{BURST_CHUNKS} chunks: agent, chunks/s", "agent_burst_chunks_per_s", "/s", 0),
        (f"{BURST_CHUNKS} chunks: litellm direct, chunks/s", "direct_burst_chunks_per_s", "/s", 0),
        (f"{BURST_CHUNKS} chunks: agent prompt, total", "agent_burst_ms", "ms", 1),
        (f"{BURST_CHUNKS} chunks: litellm direct, total", "direct_burst_ms", "ms", 1),
        ("first delta delay: agent", "agent_first_chunk_delay_ms", "ms", 3),
        ("first delta delay: litellm direct", "direct_first_chunk_delay_ms", "ms", 3),
        ("every delta delay: agent", "agent_chunk_delay_ms", "ms", 3),
        ("every delta delay: litellm direct", "direct_chunk_delay_ms", "ms", 3),
        (f"1 read ({READ_DELAY * 1000:g} ms at the client): shown -> done", "one_read_ms", "ms", 2),
        (f"{PARALLEL_READS} reads in one reply: shown -> done", "parallel_reads_ms", "ms", 2),
    ]
    for label, key, unit, digits in rows:
        fig = figures[key]
        cells = "".join(f"{num(fig[k], unit, digits):>12}" for k in ("median", "p95", "min", "max"))
        print(f"{label:<44}{cells}{fig['n']:>6}")
    print()
    print(f"{'derived (medians unless said)':<52}{'value':>12}   {'goal':<18}result")
    print("-" * 90)
    print(
        f"{'added per model round trip (agent - direct)':<52}{num(derived['model_round_trip_added_ms']):>12}   "
        + verdict("model_round_trip_added_ms")
    )
    print(
        f"{'added per tool round trip (see 2.)':<52}{num(derived['tool_round_trip_added_ms']):>12}   "
        + verdict("tool_round_trip_added_ms")
    )
    print(f"{'  (tool prompt - text prompt)':<52}{num(derived['tool_turn_minus_text_turn_ms']):>12}")
    print(f"{'  (whole tool prompt - 2 x direct)':<52}{num(derived['tool_prompt_added_ms']):>12}")
    ratio = derived["throughput_ratio"]
    print(f"{'relay throughput, agent / direct':<52}{'-' if ratio is None else f'{ratio:.2f} x':>12}")
    first, every = derived["first_chunk_relay_ms"], derived["chunk_relay_ms"]
    print(
        f"{'relay delay, first delta (agent - direct)':<52}{num(first['median'], 'ms', 3):>12}   "
        + verdict("first_chunk_relay_ms")
    )
    print(f"{'relay delay, first delta, p95 - p95':<52}{num(first['p95'], 'ms', 3):>12}")
    print(f"{'relay delay, every delta (agent - direct)':<52}{num(every['median'], 'ms', 3):>12}")
    print(f"{'relay delay, every delta, p95 - p95':<52}{num(every['p95'], 'ms', 3):>12}")
    reads = derived["parallel_reads_ratio"]
    print(
        f"{f'{PARALLEL_READS} reads in one reply / 1 read':<52}{'-' if reads is None else f'{reads:.2f} x':>12}   "
        + verdict("parallel_reads_ratio")
    )
    print()
    print_failures(report, before="")


# =====================================================================================================================
# Main
# =====================================================================================================================


async def start_model_server() -> tuple[asyncio.subprocess.Process, int]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        SELF,
        "--serve",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    line = await asyncio.wait_for(process.stdout.readline(), 20)
    if not line.strip().isdigit():
        process.kill()
        await process.wait()
        raise RunFailure(f"the model server did not start: {line[:200]!r}")
    return process, int(line)


async def stop_process(process: asyncio.subprocess.Process) -> None:
    if process.stdin is not None:
        with contextlib.suppress(ConnectionError):
            process.stdin.close()
    try:
        await asyncio.wait_for(process.wait(), 5)
    except TimeoutError:
        process.kill()
        await process.wait()


async def run(args: argparse.Namespace, cmd: list[str], progress: bool) -> dict[str, Any]:
    burst_runs = max(3, args.runs // 4)
    failures: list[str] = []
    results = Results()
    temp = Path(tempfile.mkdtemp(prefix="coder-agent-turn-bench-"))
    server: asyncio.subprocess.Process | None = None
    try:
        cwd = temp / "project"
        cwd.mkdir()
        (cwd / SMALL_FILE).write_text(SMALL_TEXT, encoding="utf-8")
        server, port = await start_model_server()
        base_url = f"http://127.0.0.1:{port}/v1"
        env = agent_env(  # temp XDG dirs: the user's config, data and caches are kept out of it
            temp,
            CODER_AGENT_MODEL=MODEL,
            CODER_AGENT_API_BASE=base_url,
            CODER_AGENT_API_KEY=API_KEY,
            LITELLM_LOCAL_MODEL_COST_MAP="True",
        )
        importing = asyncio.ensure_future(asyncio.to_thread(Direct, base_url))  # litellm, while the agent starts

        async def figures_1_to_4(bench: Bench) -> None:
            await bench.model_round_trip()
            await bench.tool_round_trip()
            await bench.throughput(burst_runs)
            await bench.relay_delay()

        agent = Agent(cmd, env, cwd, args.runs, progress, results, importing)
        failures += await agent.measure({}, figures_1_to_4)
        if not failures:  # figure 5: an agent of its own, whose client serves reads (slowly)
            failures += await agent.measure({"fs": {"readTextFile": True}}, Bench.parallel_reads)
        if not importing.done():  # a thread cannot be cancelled: let the import finish
            with contextlib.suppress(Exception):
                await importing
    except RunFailure as exc:
        failures.append(str(exc))
    finally:
        if server is not None:
            await stop_process(server)
        shutil.rmtree(temp, ignore_errors=True)
    return build_report(results, args.runs, burst_runs, cmd, [*results.failures, *failures])


@dataclass
class Agent:
    """How to spawn the agent for a set of figures, and where their results go."""

    cmd: list[str]
    env: dict[str, str]
    cwd: Path
    runs: int
    progress: bool
    results: Results
    importing: asyncio.Future[Direct]

    async def measure(self, capabilities: dict[str, Any], figures: Callable[[Bench], Awaitable[None]]) -> list[str]:
        """Spawn the agent with a client of `capabilities` (fs reads served slowly when asked), take `figures`,
        close it; the failures."""
        failures: list[str] = []
        with tempfile.TemporaryFile() as log:
            client = await AcpClient.spawn(self.cmd, self.env, log)
            if capabilities.get("fs"):
                client.files = self.cwd.resolve()
            try:
                init = {"protocolVersion": 1, "clientCapabilities": capabilities}
                await client.request("initialize", {**init, "clientInfo": {"name": "bench", "version": "0"}})
                bench = Bench(client, await self.importing, self.port(), self.cwd, self.runs, self.progress)
                bench.results = self.results
                await figures(bench)
            except RunFailure as exc:
                failures.append(f"{exc}\n{stderr_tail(log)}")
            finally:
                if self.progress:
                    print("\r" + " " * 60 + "\r", end="", file=sys.stderr, flush=True)
                code = await client.close()
                if client.process.returncode is None:
                    client.process.kill()
                    await client.process.wait()
                if code != 0:
                    failures.append(
                        f"the agent {'was killed' if code is None else f'exited with {code}'} after stdin EOF\n"
                        + stderr_tail(log)
                    )
            failures.extend(client.bad_lines)
            if client.agent_requests:
                failures.append(f"the agent sent requests to the client: {sorted(set(client.agent_requests))}")
        return failures

    def port(self) -> int:
        return int(self.env["CODER_AGENT_API_BASE"].rsplit(":", 1)[1].split("/", 1)[0])


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="What coder-agent adds to a prompt turn on top of litellm: latency per model and tool round "
        "trip, relay throughput and relay delay, against a fake model server on 127.0.0.1.",
        epilog=AGENT_EPILOG,
    )
    parser.add_argument("--runs", type=int, default=MIN_RUNS, help=f"measured prompts per figure (default {MIN_RUNS})")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)  # the model server's child process
    add_agent_option(parser)
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    check_agent_option(parser, args)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.serve:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(serve_model())
        return 0
    warn_few_runs(args.runs, MIN_RUNS)
    cmd = args.agent or default_agent()
    report = asyncio.run(run(args, cmd, progress=sys.stderr.isatty()))
    return finish(report, args.json, print_report)


if __name__ == "__main__":
    sys.exit(main())
