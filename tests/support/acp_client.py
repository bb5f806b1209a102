"""A fake ACP client (the editor's side) for tests, over in-memory streams or a spawned agent's pipes.

It speaks raw JSON lines, independent of the agent's own RPC code, and checks every frame in both
directions against the official schema (`Conformance`). It records every `session/update`, answers the
agent's requests with handlers a test registers (fs, terminal, permission), and can send raw bytes for
malformed-input tests. Every wait is bounded.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from tests.support.conformance import Conformance

WAIT = 60.0
"""How long a request may go unanswered before the test fails: a guard against hangs, never a speed goal (a
spawned agent's first `session/new` can take seconds on a busy 2-core machine; speed is measured in `bench/`)."""

RequestHandler = Callable[[dict[str, Any]], Awaitable[Any]]

DEFAULT_CAPABILITIES: dict[str, Any] = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}


class RpcFailure(Exception):
    """The agent answered a request with an error."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.error = error
        self.code = error.get("code")
        self.message = str(error.get("message"))


class FakeClient:
    """The editor side of one ACP connection."""

    def __init__(self, send: Callable[[bytes], Awaitable[None]]) -> None:
        self._send = send
        self._ids = itertools.count(1)
        self._waiting: dict[Any, anyio.Event] = {}
        self._answers: dict[Any, dict[str, Any]] = {}
        self.conformance = Conformance()
        self.frames: list[dict[str, Any]] = []  # every frame the agent sent, in order
        self.updates: list[dict[str, Any]] = []  # params of every session/update
        self.agent_requests: list[dict[str, Any]] = []  # every request the agent made
        self.handlers: dict[str, RequestHandler] = {}
        self.lenient_answers: set[str] = set()  # methods whose answers break the schema on purpose (not checked)
        self.stray: list[dict[str, Any]] = []  # responses nobody waited for (e.g. answers to raw frames)
        self._new_frame = anyio.Condition()
        self._task_group: TaskGroup | None = None

    # ---- sending --------------------------------------------------------------------------------

    async def send_raw(self, data: bytes) -> None:
        """Send bytes as they are; each line that parses is recorded leniently so answers can be matched."""
        for line in data.split(b"\n"):
            try:
                message = json.loads(line)
            except ValueError:
                continue
            self.conformance.check_client_to_agent(message, strict=False)
        await self._send(data)

    async def send_message(self, message: dict[str, Any], *, strict: bool = True) -> None:
        self.conformance.check_client_to_agent(message, strict=strict)
        await self._send(json.dumps(message).encode() + b"\n")

    async def request(self, method: str, params: Any = None, *, timeout: float = WAIT, strict: bool = True) -> Any:
        """Send a request and return its result; raise RpcFailure on an error response.

        `strict=False` lets a test send params that break the schema on purpose.
        """
        response = await self.request_raw(method, params, timeout=timeout, strict=strict)
        if "error" in response:
            raise RpcFailure(response["error"])
        return response["result"]

    async def request_raw(
        self, method: str, params: Any = None, *, timeout: float = WAIT, strict: bool = True
    ) -> dict[str, Any]:
        request_id = f"req-{next(self._ids)}"  # strings, so raw test frames with integer ids never collide
        done = anyio.Event()
        self._waiting[request_id] = done
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send_message(message, strict=strict)
        with anyio.fail_after(timeout):
            await done.wait()
        return self._answers.pop(request_id)

    async def notify(self, method: str, params: Any) -> None:
        await self.send_message({"jsonrpc": "2.0", "method": method, "params": params})

    # ---- the ACP calls tests use most -----------------------------------------------------------

    async def initialize(self, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
        params = {
            "protocolVersion": 1,
            "clientCapabilities": capabilities if capabilities is not None else DEFAULT_CAPABILITIES,
            "clientInfo": {"name": "fake-client", "version": "0"},
        }
        result: dict[str, Any] = await self.request("initialize", params)
        return result

    async def new_session(self, cwd: str, mcp_servers: list[dict[str, Any]] | None = None) -> str:
        result = await self.request("session/new", {"cwd": cwd, "mcpServers": mcp_servers or []})
        return str(result["sessionId"])

    async def prompt(self, session_id: str, text: str, *, timeout: float = WAIT) -> str:
        result = await self.request(
            "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}, timeout=timeout
        )
        return str(result["stopReason"])

    def session_updates(self, session_id: str, kind: str | None = None) -> list[dict[str, Any]]:
        """The `update` objects sent for a session, optionally of one `sessionUpdate` kind."""
        return [
            u["update"]
            for u in self.updates
            if u["sessionId"] == session_id and (kind is None or u["update"]["sessionUpdate"] == kind)
        ]

    def agent_text(self, session_id: str) -> str:
        """Everything the agent said in text chunks, joined."""
        return "".join(u["content"].get("text", "") for u in self.session_updates(session_id, "agent_message_chunk"))

    def messages(self, session_id: str, kind: str = "agent_message_chunk") -> list[tuple[str, str]]:
        """The messages of one kind of chunk, in order of their first chunk: (messageId, their text joined)."""
        texts: dict[str, str] = {}
        for update in self.session_updates(session_id, kind):
            message_id = update["messageId"]
            texts[message_id] = texts.get(message_id, "") + update["content"].get("text", "")
        return list(texts.items())

    def agent_messages(self, session_id: str) -> list[str]:
        """The text of each agent message, in order."""
        return [text for _, text in self.messages(session_id)]

    # ---- receiving ------------------------------------------------------------------------------

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = WAIT) -> None:
        """Wait until `predicate()` holds, re-checking after every frame from the agent."""
        with anyio.fail_after(timeout):
            async with self._new_frame:
                while not predicate():
                    await self._new_frame.wait()

    async def next_stray(self, timeout: float = WAIT) -> dict[str, Any]:
        """The next response nobody was waiting for (the answer to a raw frame)."""
        await self.wait_for(lambda: bool(self.stray), timeout)
        return self.stray.pop(0)

    async def on_frame(self, line: bytes) -> None:
        message = json.loads(line)  # a non-JSON line fails the test: stdout must carry frames only
        assert isinstance(message, dict), f"the agent sent a non-object frame: {line[:200]!r}"
        self.conformance.check_agent_to_client(message)
        self.frames.append(message)
        if "method" in message and "id" in message:
            self.agent_requests.append(message)
            assert self._task_group is not None
            self._task_group.start_soon(self._answer, message)
        elif "method" in message:
            if message["method"] == "session/update":
                self.updates.append(message["params"])
        elif message.get("id") in self._waiting:
            self._answers[message["id"]] = message
            self._waiting.pop(message["id"]).set()
        else:
            self.stray.append(message)
        async with self._new_frame:
            self._new_frame.notify_all()

    async def _answer(self, message: dict[str, Any]) -> None:
        handler = self.handlers.get(message["method"])
        if handler is None:
            reply: dict[str, Any] = {
                "jsonrpc": "2.0",
                "id": message["id"],
                "error": {"code": -32601, "message": f"fake client: no handler for {message['method']}"},
            }
        else:
            try:
                reply = {"jsonrpc": "2.0", "id": message["id"], "result": await handler(message["params"])}
            except RpcFailure as failure:
                reply = {"jsonrpc": "2.0", "id": message["id"], "error": failure.error}
        await self.send_message(reply, strict=message["method"] not in self.lenient_answers)

    async def read_lines(self, lines: AsyncIterator[bytes]) -> None:
        async for line in lines:
            if line.strip():
                await self.on_frame(line)


async def _memory_lines(stream: MemoryObjectReceiveStream[bytes]) -> AsyncIterator[bytes]:
    buffer = b""
    async for chunk in stream:
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            yield line


@asynccontextmanager
async def in_process_agent(runner: Any = None, store: Any = None, source: Any = None) -> AsyncIterator[FakeClient]:
    """Run the agent's `serve()` in this event loop over memory streams, with a FakeClient on the other end.

    `runner` is a TurnRunner (default: one that echoes), or a function of the ConfigSource that builds one;
    `source` the ConfigSource (default: no flags, the process environment). Leaving the block closes the
    agent's input (EOF) and waits for the agent to shut down cleanly.
    """
    from coder_agent.agent.config_source import ConfigSource
    from coder_agent.composition import agent_builder, serve
    from tests.support.runners import EchoTurnRunner

    def make_runner(config: ConfigSource) -> Any:
        if runner is None:
            return EchoTurnRunner()
        return runner(config) if callable(runner) else runner

    build = agent_builder(lambda: source or ConfigSource(), runner=make_runner, store=lambda: store)

    to_agent_send: MemoryObjectSendStream[bytes]
    to_agent_send, to_agent_receive = anyio.create_memory_object_stream[bytes](1000)
    from_agent_send, from_agent_receive = anyio.create_memory_object_stream[bytes](1000)
    client = FakeClient(to_agent_send.send)
    async with anyio.create_task_group() as task_group:
        client._task_group = task_group
        agent_done = anyio.Event()

        async def run_agent() -> None:
            try:
                await serve(to_agent_receive, from_agent_send, build)
            finally:
                from_agent_send.close()
                agent_done.set()

        task_group.start_soon(run_agent)
        task_group.start_soon(client.read_lines, _memory_lines(from_agent_receive))
        try:
            yield client
        finally:
            to_agent_send.close()
            with anyio.fail_after(WAIT):
                await agent_done.wait()
            task_group.cancel_scope.cancel()
            to_agent_receive.close()
            from_agent_receive.close()
