"""The editor's side of one bench/peers.py turn, and the scripted model it talks to.

This module owns what a prompt turn is in that benchmark: the fake model's script (``Script``: a ``BENCH:text``
prompt gets a short text, a ``BENCH:tool`` prompt a call of the agent's own read tool, found in the request's
``tools``, on the workspace's small file, then after the tool result a short text; a request without tools, such as a
title, a short text), the client (``BenchClient``: ``session/request_permission`` allowed once, ``fs`` reads and
writes served from the workspace, anything else refused) and ``prompt``, which sends one prompt and checks the turn
went as scripted, keeping its client and server times (``Turn``). Stdlib, bench/acp_bench.py and the fake server.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from acp_bench import BenchFailure, Exchange, JsonLinesAgent

from tests.support.fake_llm import FakeLLM, RecordedRequest, Reply

PROMPT_TIMEOUT = 120.0
SMALL_FILE = "small.txt"
MARKER = "bench-marker-7"
SMALL_TEXT = "".join(f"line {i}: bench-marker-{i}\n" for i in range(1, 11))
TEXT_REPLY = "Done: the answer is 42, nothing else to change."
AFTER_TOOL_REPLY = "I read small.txt; it holds ten short lines."
SIDE_REPLY = "Bench session"
PROMPTS = {"text": "Say hello.", "tool": f"Read {SMALL_FILE} and tell me what it holds."}
READ_TOOLS = ("read_file", "ReadFile", "read_text_file", "Read", "read")
PATH_ARGS = ("path", "file_path", "filePath", "absolute_path", "file")
INITIALIZE = {
    "protocolVersion": 1,
    "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": False},
    "clientInfo": {"name": "bench-peers", "version": "1"},
}

# =====================================================================================================================
# The scripted model
# =====================================================================================================================


def _text(content: Any) -> str:
    return content if isinstance(content, str) else json.dumps(content)


def request_kind(body: dict[str, Any]) -> str:
    """side (no tools offered), after_tool (the last message is a tool result), tool or text (the last user tag)."""
    if not body.get("tools"):
        return "side"
    messages = body.get("messages") or []
    if messages and messages[-1].get("role") == "tool":
        return "after_tool"
    user: dict[str, Any] = next((m for m in reversed(messages) if m.get("role") == "user"), {})
    return "tool" if "BENCH:tool" in _text(user.get("content")) else "text"


def read_call(tools: list[dict[str, Any]], target: Path) -> tuple[str, dict[str, str]] | None:
    """The agent's read tool and arguments reading `target`, from the request's tool list; None if it has none."""
    functions = {t["function"]["name"]: t["function"] for t in tools if isinstance(t.get("function"), dict)}
    name = next((n for n in READ_TOOLS if n in functions), None)
    name = name or next((n for n in functions if "read" in n.lower() and "file" in n.lower()), None)
    if name is None:
        return None
    properties = (functions[name].get("parameters") or {}).get("properties") or {}
    arg = next((a for a in PATH_ARGS if a in properties), None) or next((a for a in properties if "path" in a), "path")
    return name, {arg: str(target)}


class Script:
    """The server's answers; `target` is the file the current agent reads, `read_tools` what each agent was told."""

    def __init__(self) -> None:
        self.target = Path(SMALL_FILE)
        self.agent = ""
        self.read_tools: dict[str, str] = {}

    def __call__(self, body: dict[str, Any]) -> Reply:
        kind = request_kind(body)
        if kind == "after_tool":
            return Reply(AFTER_TOOL_REPLY)
        if kind == "tool" and (call := read_call(body["tools"], self.target)) is not None:
            self.read_tools.setdefault(self.agent, f"{call[0]}({next(iter(call[1]))})")
            return Reply.tool(call[0], call[1])
        return Reply(SIDE_REPLY if kind == "side" else TEXT_REPLY)


# =====================================================================================================================
# The client
# =====================================================================================================================


class BenchClient(JsonLinesAgent):
    """The agent with an editor's answers: permission allowed once, fs served from the workspace."""

    def __init__(self, cmd: list[str], env: dict[str, str], log: IO[bytes], workspace: Path) -> None:
        self.workspace = workspace.resolve()
        self.asked: Counter[str] = Counter()
        super().__init__(cmd, env, log, cwd=workspace)

    def reply(self, msg: dict[str, Any], result: dict[str, Any] | None = None, error: str | None = None) -> None:
        if error is None:
            self.send({"jsonrpc": "2.0", "id": msg["id"], "result": result or {}})
        else:
            self.send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32602, "message": error}})

    def inside(self, path: str) -> Path | None:
        resolved = Path(path).resolve()
        return resolved if resolved.is_relative_to(self.workspace) else None

    def on_request(self, msg: dict[str, Any], line: bytes, now: float) -> None:
        method, params = msg["method"], msg.get("params") or {}
        self.asked[method] += 1
        if method == "session/request_permission":
            options = params.get("options") or []
            kinds = {o.get("kind"): o.get("optionId") for o in options}
            chosen = kinds.get("allow_once") or kinds.get("allow_always")
            outcome = {"outcome": "selected", "optionId": chosen} if chosen else {"outcome": "cancelled"}
            self.reply(msg, {"outcome": outcome})
        elif method == "fs/read_text_file":
            path = self.inside(str(params.get("path", "")))
            if path is None or not path.is_file():
                self.reply(msg, error=f"bench: no such file in the workspace: {params.get('path')}")
                return
            lines = path.read_text().splitlines(keepends=True)
            start = max(int(params.get("line") or 1), 1) - 1
            limit = params.get("limit")
            self.reply(msg, {"content": "".join(lines[start : None if limit is None else start + int(limit)])})
        elif method == "fs/write_text_file":
            path = self.inside(str(params.get("path", "")))
            if path is None:
                self.reply(msg, error="bench: writes stay in the workspace")
                return
            path.write_text(str(params.get("content", "")))
            self.reply(msg, None)
        else:
            super().on_request(msg, line, now)


@dataclass
class Turn:
    """One session/prompt: the client's exchange, the first text chunk of the model's own message, the first text
    chunk of anything else the agent said before it (a note of its own, such as what stands in for a capability the
    client lacks; None when there was none), and its model requests (side ones left out)."""

    exchange: Exchange
    first_chunk: float | None
    requests: list[RecordedRequest]
    first_note: float | None = None

    def since_sent(self, at: float | None) -> float | None:
        return None if at is None else at - self.exchange.sent

    @property
    def reply_end_to_response(self) -> float:
        finished = self.requests[-1].timing.finished
        assert finished is not None
        return self.exchange.arrived - finished

    @property
    def round_trip(self) -> float:
        finished = self.requests[0].timing.finished
        assert finished is not None
        return self.requests[1].timing.arrived - finished


def text_chunks(exchange: Exchange, session_id: str) -> list[tuple[float, str | None]]:
    """(arrival, messageId) of each agent_message_chunk with text of the session, in order."""
    found: list[tuple[float, str | None]] = []
    for msg, _, at in exchange.notes:
        params = msg.get("params") or {}
        update = params.get("update") or {}
        content = update.get("content")
        if (
            params.get("sessionId") == session_id
            and update.get("sessionUpdate") == "agent_message_chunk"
            and isinstance(content, dict)
            and content.get("text")
        ):
            found.append((at, update.get("messageId")))
    return found


def model_chunk(exchange: Exchange, session_id: str, requested: float) -> tuple[float | None, float | None]:
    """When the model's own message began (its first text chunk) and when anything the agent said before it began.

    The model's message is the one the turn ends with: where the agent gives its chunks a messageId, the first chunk
    with the last chunk's id; where it does not, the first chunk after the model request reached the server
    (`requested`, on this process's clock). A chunk before it is the agent's own (a note)."""
    chunks = text_chunks(exchange, session_id)
    if not chunks:
        return None, None
    last_id = chunks[-1][1]
    if last_id is not None:
        first = next(at for at, message_id in chunks if message_id == last_id)
    else:
        first = next((at for at, _ in chunks if at >= requested), chunks[0][0])
    before = [at for at, _ in chunks if at < first]
    return first, before[0] if before else None


def prompt(client: BenchClient, llm: FakeLLM, session_id: str, kind: str) -> Turn:
    """Send a prompt of `kind` (text or tool), wait for its response and check the turn went as scripted."""
    before = len(llm.recorded)
    text = f"{PROMPTS[kind]} BENCH:{kind}"
    params = {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
    exchange = client.request("session/prompt", params, PROMPT_TIMEOUT)
    if exchange.result.get("stopReason") != "end_turn":
        raise BenchFailure(f"{kind} prompt stopped with {exchange.result.get('stopReason')!r}")
    requests = [
        r
        for r in llm.recorded[before:]
        if request_kind(r.body) != "side" and exchange.sent <= r.timing.arrived <= exchange.arrived
    ]
    kinds = [request_kind(r.body) for r in requests]
    expected = ["tool", "after_tool"] if kind == "tool" else ["text"]
    if kinds != expected:
        raise BenchFailure(f"{kind} prompt: model requests {kinds}, expected {expected}")
    if kind == "tool" and MARKER not in json.dumps(requests[1].body.get("messages", [])[-3:]):
        raise BenchFailure("tool prompt: the file's text never reached the model (no read tool, or it failed)")
    deadline = time.perf_counter() + 1.0  # a reply cut short is never stamped finished
    while requests[-1].timing.finished is None and time.perf_counter() < deadline:
        time.sleep(0.001)
    if requests[-1].timing.finished is None:
        raise BenchFailure(f"{kind} prompt: the server never finished its reply")
    first, note = model_chunk(exchange, session_id, requests[0].timing.arrived)
    return Turn(exchange, first, requests, note)
