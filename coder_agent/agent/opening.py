"""What opening a session sets up beside its state, for `agent.manager`: the permission policy from the config, the
MCP servers started, the system prompt prepared ahead of the first turn, and the callbacks for a background job that
ends and for saving that fails."""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from coder_agent import secrets
from coder_agent.agent import system_prompt, wake
from coder_agent.config import Config
from coder_agent.errors import InternalError
from coder_agent.permissions import PermissionPolicy, Rule
from coder_agent.protocol.schema import McpServer
from coder_agent.session.jobs import Job
from coder_agent.session.session import Session
from coder_agent.session.turn_runner import TurnRunner

log = logging.getLogger(__name__)

MCP_CONNECT_TIMEOUT = 20.0


def policy(cwd: Path, config: Config) -> PermissionPolicy:
    """The session's permission policy from the config's mode and rules."""
    secrets.add_key_variable(config.api_key_env)
    secrets.let_through(config.sandbox.pass_env)
    try:
        allow = [Rule.parse(text) for text in config.permissions.allow]
        deny = [Rule.parse(text) for text in config.permissions.deny]
    except ValueError as exc:
        raise InternalError(f"Invalid config: permissions: {exc}") from None
    return PermissionPolicy(cwd=cwd, mode=config.default_mode, allow=allow, deny=deny)


async def connect_mcp(session: Session, servers: Sequence[McpServer], runner: TurnRunner) -> None:
    """Start the session's MCP servers, all at once; a server that fails is reported, not fatal."""
    from coder_agent.agent.mcp_requests import McpRequests
    from coder_agent.mcp.hub import McpHub
    from coder_agent.mcp.types import McpServerSpec

    hooks = McpRequests(session, runner).hooks()
    state, services = session.state, session.services
    sandbox = services.sandbox if state.config.sandbox.mcp_servers else None
    wrap = functools.partial(sandbox.launch, shared_network=False) if sandbox is not None else None
    hub = McpHub(task_group=services.tasks, roots=state.roots, hooks=hooks, wrap_command=wrap)
    services.mcp = hub
    services.closers.append(hub.aclose)
    specs = [McpServerSpec.from_acp(server, cwd=state.cwd) for server in servers]
    statuses = await hub.connect(specs, timeout=MCP_CONNECT_TIMEOUT)
    for status in statuses:
        log.info("session %s: MCP server %s %s (%s)", session.id, status.name, status.state, status.error or "ok")


async def prepare(session: Session) -> None:
    try:
        await system_prompt.prepare(session.turn_context())
    except Exception:  # the first turn builds it then, and reports what fails
        log.warning("session %s: preparing the system prompt failed", session.id, exc_info=True)


def job_ended(manager: wake.Starter, session: Session) -> Callable[[Job], Awaitable[None]]:
    """A job that ends while no turn runs is a notice, or a turn of the session's own (`agent.wake`); during a turn,
    the model is told after its next tool call (either way the next environment update lists it)."""

    async def tell(job: Job) -> None:
        await wake.job_ended(manager, session, job)

    return tell


def saving_failed(session: Session) -> Callable[[str], Awaitable[None]]:
    async def tell(error: str) -> None:
        description = (
            f"{error}. It will not survive a restart until saving works again: check that the data folder is "
            "writable and has free space."
        )
        with contextlib.suppress(Exception):
            await session.services.bridge.notice("error", "This session could not be saved", description)

    return tell
