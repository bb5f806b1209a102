"""Run the agent on a pair of byte streams: the composition root, the connection, and an orderly shutdown.

`agent_builder` composes the agent (the ACP method table over a `SessionManager` with an `AgentRunner`
and the session store); it imports pydantic, the models and the config (a few hundred ms), so the front
calls it off the event loop while `initialize` is being answered.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from anyio.abc import TaskGroup

from coder_agent.acp.front import AgentFront
from coder_agent.rpc.connection import Connection
from coder_agent.rpc.framing import ByteSink, ByteSource

if TYPE_CHECKING:
    from coder_agent.acp.client import Peer
    from coder_agent.acp.server import AcpServer
    from coder_agent.agent.settings import ConfigSource
    from coder_agent.session.runner import TurnRunner
    from coder_agent.store import SessionStore

log = logging.getLogger(__name__)

SHUTDOWN_GRACE = 1.5

AgentBuilder = Callable[["Peer", TaskGroup], "AcpServer"]


def agent_builder(
    source: Callable[[], ConfigSource],
    *,
    runner: Callable[[ConfigSource], TurnRunner] | None = None,
    store: Callable[[], SessionStore | None] | None = None,
) -> AgentBuilder:
    """How to build the agent once a connection exists; by default an `AgentRunner` and the user's session store."""

    def build(peer: Peer, tasks: TaskGroup) -> AcpServer:
        from coder_agent.acp.server import AcpServer
        from coder_agent.agent.manager import SessionManager
        from coder_agent.agent.runner import AgentRunner
        from coder_agent.store import SessionStore

        config = source()
        turns = runner(config) if runner is not None else AgentRunner(config)
        sessions = store() if store is not None else SessionStore()
        return AcpServer(SessionManager(turns, config, sessions, tasks), peer)

    return build


def cli_agent(config_file: Path | None = None, model: str | None = None) -> AgentBuilder:
    """The agent as the command line starts it: `--config` and `--model` over the usual config sources."""

    def source() -> ConfigSource:
        from coder_agent.agent.settings import ConfigSource
        from coder_agent.config import CliOverrides

        return ConfigSource(CliOverrides(config_file=config_file, model=model))

    return agent_builder(source)


async def serve(receive: ByteSource, send: ByteSink, build: AgentBuilder) -> None:
    """Serve ACP until the input ends or the task is cancelled, then close every session."""
    front = AgentFront(build)
    connection = Connection(receive, send, front)
    async with anyio.create_task_group() as task_group:
        front.bind(connection, task_group)
        task_group.start_soon(front.load)
        try:
            await connection.serve(on_input_closed=front.cancel_all)
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(SHUTDOWN_GRACE) as grace:
                await front.aclose()
            if grace.cancelled_caught:
                log.warning("sessions did not close within %.1f s", SHUTDOWN_GRACE)
            task_group.cancel_scope.cancel()
