"""The composition root, and the agent run on a pair of byte streams: the connection and an orderly shutdown.

`session_manager` composes what every client of the agent gets: a `SessionManager` over an `ModelRunner` and
the session store (so sessions made by `coder-agent run` and by editors are the same sessions).
`agent_builder` puts the ACP method table over it; it imports pydantic, the models and the config (a few
hundred ms), so the front calls it off the event loop while `initialize` is being answered. `cli_source`
is the config the command line gives.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from anyio.abc import TaskGroup

from coder_agent.acp.front import AgentFront
from coder_agent.rpc.connection import Connection, Dispatcher
from coder_agent.rpc.framing import ByteSink, ByteSource

if TYPE_CHECKING:
    from coder_agent.acp.client_bridge import Peer
    from coder_agent.acp.server import AcpServer
    from coder_agent.agent.config_source import ConfigSource
    from coder_agent.agent.manager import SessionManager
    from coder_agent.session.turn_runner import TurnRunner
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
    """How to build the agent once a connection exists; by default an `ModelRunner` and the user's session store."""

    def build(peer: Peer, tasks: TaskGroup) -> AcpServer:
        from coder_agent.acp.server import AcpServer

        return AcpServer(session_manager(source(), tasks, runner=runner, store=store), peer)

    return build


def session_manager(
    config: ConfigSource,
    tasks: TaskGroup,
    *,
    runner: Callable[[ConfigSource], TurnRunner] | None = None,
    store: Callable[[], SessionStore | None] | None = None,
) -> SessionManager:
    """The sessions of one client (an editor's connection, or one `coder-agent run`): the same runner and store."""
    from coder_agent.agent.manager import SessionManager
    from coder_agent.agent.model_runner import ModelRunner
    from coder_agent.store import SessionStore

    turns = runner(config) if runner is not None else ModelRunner(config)
    sessions = store() if store is not None else SessionStore()
    return SessionManager(turns, config, sessions, tasks)


def cli_source(config_file: Path | None = None, model: str | None = None) -> Callable[[], ConfigSource]:
    """The config as the command line gives it: `--config` and `--model` over the usual config sources, and what
    `coder-agent login` stored where they give no model or key."""

    def source() -> ConfigSource:
        from coder_agent.agent.config_source import ConfigSource
        from coder_agent.config import CliOverrides
        from coder_agent.credentials import LoginStore

        return ConfigSource(CliOverrides(config_file=config_file, model=model), logins=LoginStore())

    return source


def cli_agent(config_file: Path | None = None, model: str | None = None) -> AgentBuilder:
    """The agent as the command line starts it: `--config` and `--model` over the usual config sources."""
    return agent_builder(cli_source(config_file, model))


async def serve(
    receive: ByteSource,
    send: ByteSink,
    build: AgentBuilder,
    *,
    whole_messages: bool = False,
    dispatcher: Callable[[AgentFront], Dispatcher] | None = None,
) -> None:
    """Serve ACP until the input ends or the task is cancelled, then close every session.

    `whole_messages`: the streams carry one message per call (a WebSocket), not newline-delimited frames.
    `dispatcher` puts something in front of the agent's dispatcher (`coder-agent serve` watches whose sessions
    are open where)."""
    front = AgentFront(build)
    connection = Connection(
        receive, send, front if dispatcher is None else dispatcher(front), whole_messages=whole_messages
    )
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
