"""Run the agent on a pair of byte streams: the connection, the agent, and an orderly shutdown."""

from __future__ import annotations

import logging

import anyio

from coder_agent.acp.agent import AcpAgent
from coder_agent.rpc.connection import Connection
from coder_agent.rpc.framing import ByteSink, ByteSource
from coder_agent.turn import TurnRunner

log = logging.getLogger(__name__)

SHUTDOWN_GRACE = 1.5


async def serve(receive: ByteSource, send: ByteSink, runner: TurnRunner) -> None:
    """Serve ACP until the input ends or the task is cancelled, then close every session."""
    agent = AcpAgent(runner)
    connection = Connection(receive, send, agent)
    agent.bind(connection)
    try:
        await connection.serve(on_input_closed=agent.cancel_all)
    finally:
        with anyio.CancelScope(shield=True), anyio.move_on_after(SHUTDOWN_GRACE) as grace:
            await agent.aclose()
        if grace.cancelled_caught:
            log.warning("sessions did not close within %.1f s", SHUTDOWN_GRACE)
