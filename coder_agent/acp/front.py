"""`AgentFront`: the connection's dispatcher. It answers `initialize` at once and loads the agent behind it.

Loading the agent means importing pydantic and the ACP models and building `AcpServer`; that starts in a
worker thread as soon as the process is up, so `initialize` never waits for it and `session/new` rarely
does. Every other request waits for the load, then goes to the agent.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup

from coder_agent.acp import handshake
from coder_agent.errors import InternalError

if TYPE_CHECKING:
    from coder_agent.acp.client_bridge import Peer
    from coder_agent.acp.server import AcpServer

log = logging.getLogger(__name__)


class AgentFront:
    """Dispatcher in front of a lazily built `AcpServer`."""

    def __init__(self, build_agent: Callable[[Peer, TaskGroup], AcpServer]) -> None:
        self._build_agent = build_agent
        self._peer: Peer | None = None
        self._tasks: TaskGroup | None = None
        self._agent: AcpServer | None = None
        self._loaded = anyio.Event()
        self._client_capabilities: dict[str, Any] = {}

    def bind(self, peer: Peer, tasks: TaskGroup) -> None:
        """Attach the connection the agent talks to the client through (before `load`)."""
        self._peer = peer
        self._tasks = tasks

    async def load(self) -> None:
        """Build the agent in a worker thread; requests that need it wait until this is done."""
        try:
            assert self._peer is not None, "bind() before load()"
            assert self._tasks is not None
            agent = await anyio.to_thread.run_sync(self._build_agent, self._peer, self._tasks)
            agent.set_client_capabilities(self._client_capabilities)
            self._agent = agent
        except Exception:
            log.exception("the agent failed to load")
        finally:
            self._loaded.set()

    async def agent(self) -> AcpServer:
        await self._loaded.wait()
        if self._agent is None:
            raise InternalError("Internal error: the agent failed to load; see its log")
        return self._agent

    async def handle_request(self, method: str, params: Any) -> Any:
        if method == "initialize":
            result, self._client_capabilities = handshake.initialize(params)
            if self._agent is not None:
                self._agent.set_client_capabilities(self._client_capabilities)
            return result
        return await (await self.agent()).handle_request(method, params)

    async def handle_notification(self, method: str, params: Any) -> None:
        if self._agent is not None:
            await self._agent.handle_notification(method, params)
        else:
            log.info("ignoring %s: no session exists yet", method)

    def cancel_all(self) -> None:
        if self._agent is not None:
            self._agent.manager.cancel_all()

    async def aclose(self) -> None:
        if self._agent is not None:
            await self._agent.manager.aclose()
