"""`coder-agent serve` in this process, and a fake editor connected to it over a real WebSocket.

`acp_server` runs `serve.run` on a free port of 127.0.0.1 with the scripted model and a session store of the
test's; `websocket_client` opens a WebSocket with the `websockets` client library and puts a `FakeClient` on it
(every frame checked against the ACP schema, as over stdio), one JSON-RPC message per text message.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import anyio
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from coder_agent.composition import agent_builder
from coder_agent.model.scripted import ScriptedModel
from coder_agent.serve import AcpWebSocketServer, ServeSettings, run
from coder_agent.store import SessionStore
from tests.support.acp_client import WAIT, FakeClient
from tests.support.scripted_agent import scripted_runner, scripted_source

TOKEN = "test-token-0123456789abcdef"


@dataclass(frozen=True)
class Served:
    server: AcpWebSocketServer
    url: str
    store: SessionStore


@asynccontextmanager
async def acp_server(
    tmp_path: Path, model: ScriptedModel, *, token: str = TOKEN, **settings: Any
) -> AsyncIterator[Served]:
    """The WebSocket server on a free port, serving `model`'s agent; its sessions in `tmp_path/store`."""
    store = SessionStore(tmp_path / "store")
    build = agent_builder(partial(scripted_source, tmp_path), runner=scripted_runner(model), store=lambda: store)
    server = AcpWebSocketServer(ServeSettings(token=token, port=0, **settings), build)
    stop = anyio.Event()
    ports: list[int] = []
    ready = anyio.Event()

    def listening(port: int) -> None:
        ports.append(port)
        ready.set()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(run, server, stop, listening)
        with anyio.fail_after(WAIT):
            await ready.wait()
        try:
            yield Served(server, f"ws://127.0.0.1:{ports[0]}/acp", store)
        finally:
            stop.set()


@asynccontextmanager
async def websocket_client(
    url: str, token: str | None = TOKEN, *, receive_buffer: int | None = None, **options: Any
) -> AsyncIterator[tuple[FakeClient, ClientConnection]]:
    """A `FakeClient` over a WebSocket to `url`, sending `token` as a bearer token (None: no header);
    `receive_buffer` fixes the socket's receive buffer (a small one fills as soon as the client stops reading)."""
    if receive_buffer is not None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        sock.setblocking(False)
        host, port = url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
        sock.connect_ex((host, int(port)))
        await anyio.wait_writable(sock)
        options["sock"] = sock
    headers = dict(options.pop("additional_headers", {}))
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    async with connect(url, additional_headers=headers, open_timeout=WAIT, **options) as connection:
        client = FakeClient(partial(_send, connection))
        async with anyio.create_task_group() as tasks:
            client._task_group = tasks
            tasks.start_soon(_pump, connection, client)
            try:
                yield client, connection
            finally:
                tasks.cancel_scope.cancel()


def stop_reading(connection: ClientConnection) -> None:
    """The client reads nothing more, not even a ping: its frames and the server's wait in the socket."""
    connection.recv_messages.resume = lambda: None  # the library would start reading again as its queue empties
    connection.transport.pause_reading()


async def _send(connection: ClientConnection, data: bytes) -> None:
    await connection.send(data.decode("utf-8"))


async def _pump(connection: ClientConnection, client: FakeClient) -> None:
    try:
        async for message in connection:
            await client.on_frame(message.encode("utf-8") if isinstance(message, str) else message)
    except ConnectionClosed:
        pass
