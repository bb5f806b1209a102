"""Run the agent on a pair of byte streams: the connection, the agent behind it, and an orderly shutdown."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from coder_agent.acp.front import AgentFront
from coder_agent.rpc.connection import Connection
from coder_agent.rpc.framing import ByteSink, ByteSource

if TYPE_CHECKING:
    from coder_agent.acp.agent import AcpAgent

log = logging.getLogger(__name__)

SHUTDOWN_GRACE = 1.5


def build_agent(config_file: Path | None = None, model: str | None = None) -> AcpAgent:
    """The agent with the LLM loop and the built-in tools.

    It imports pydantic, the models and the config (a few hundred ms): call it off the event loop.
    `config_file` and `model` are the `--config` and `--model` flags.
    """
    from coder_agent.acp.agent import AcpAgent
    from coder_agent.config import CliOverrides
    from coder_agent.loop import AgentLoop
    from coder_agent.store import SessionStore

    return AcpAgent(AgentLoop(CliOverrides(config_file=config_file, model=model)), SessionStore())


async def serve(receive: ByteSource, send: ByteSink, build_agent: Callable[[], AcpAgent] = build_agent) -> None:
    """Serve ACP until the input ends or the task is cancelled, then close every session."""
    front = AgentFront(build_agent)
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
