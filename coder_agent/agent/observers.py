"""What watches a session from outside its loop, composed when it opens (`observe`, once its sandbox is up): its
language servers (`agent.language_servers`), its hooks (`session.hooks`) and its telemetry. Telemetry is the
process's: started the first time a session's config turns it on (`agent.otel`, and with it OpenTelemetry, imported
then and only then, off the event loop), shared by every session after it, and flushed when a session closes (the
agent may exit right after). Nothing here imports OpenTelemetry: an agent with telemetry off never does.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

import anyio

from coder_agent.agent import language_servers
from coder_agent.config import Config
from coder_agent.config.telemetry import TelemetryConfig
from coder_agent.session.hooks import Hooks
from coder_agent.session.session import Session

if TYPE_CHECKING:
    from coder_agent.agent.otel import OtelTelemetry
    from coder_agent.session.telemetry import Telemetry

log = logging.getLogger(__name__)

MISSING = (
    "telemetry is on ([telemetry] or OTEL_EXPORTER_OTLP_ENDPOINT), but the OpenTelemetry packages are not installed: "
    "install coder-agent with its telemetry extra (`uv tool install 'coder-agent[telemetry]'`, or "
    "`uv sync --extra telemetry` in a checkout)"
)

_started: OtelTelemetry | None = None
_lock = anyio.Lock()


async def observe(session: Session, config: Config) -> None:
    """Give an opening session its language servers (closed before the walls they run in), its hooks (when it has
    any; `notification` ones hear what the bridge asks and tells) and its telemetry (when on, flushed when it closes;
    a notice when the packages are missing)."""
    services, state = session.services, session.state
    services.lsp = language_servers.open_language_servers(session)
    if services.lsp is not None:
        services.closers.insert(0, services.lsp.aclose)  # before the walls they run in
    if Hooks.wanted(config.hooks, config.project_hooks):
        services.hooks = Hooks(
            config.hooks,
            config.project_hooks,
            session_id=state.id,
            cwd=state.cwd,
            policy=state.policy,
            bridge=services.bridge,
            tasks=services.tasks,
            sandbox=services.sandbox,
        )
        services.bridge.attention = services.hooks.notify
    services.telemetry, problem = await telemetry_for(config.telemetry)
    if problem is not None:
        services.notices.append(("Telemetry is off", problem))
    if services.telemetry is not None:
        services.closers.append(flush)


async def telemetry_for(config: TelemetryConfig) -> tuple[Telemetry | None, str | None]:
    """The process's telemetry if `config` (with the environment) turns it on, started the first time; or None and
    why it cannot be (None, None: it is off)."""
    global _started
    if not config.active(os.environ):
        return None, None
    async with _lock:
        if _started is None:
            try:
                _started = await anyio.to_thread.run_sync(_start, config)
            except ImportError:
                return None, MISSING
        elif _started.config != config:
            log.info("telemetry was started with another [telemetry]; this session's is not used")
    return _started, None


async def flush() -> None:
    """Send what is batched (bounded): the agent may exit right after."""
    if _started is not None:
        await anyio.to_thread.run_sync(_started.flush)


def _start(config: TelemetryConfig) -> OtelTelemetry:
    from coder_agent.agent.otel import OtelTelemetry

    return OtelTelemetry(config)
