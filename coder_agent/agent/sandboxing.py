"""Giving a session its sandbox when it opens: whether its commands can be walled in, the walls if so, and what
the user is told if not.

The answer has three sources: the config (`[sandbox] enabled`), the machine (`sandbox.probe.check`, once per
process) and the session's folders (one that holds the home folder cannot be walled). Without a sandbox a session
is not offered the `auto` mode (one that was in it falls back to the default mode), and a notice says why once.
The walls keep the agent's own config, session store, state, caches and logs out of reach, and its own installation
read-only where it lies in the session's folders; the agent no longer imports from those folders.
"""

from __future__ import annotations

import logging
from pathlib import Path

import anyio

from coder_agent import installation
from coder_agent.sandbox import probe
from coder_agent.sandbox.command import CommandSandbox
from coder_agent.sandbox.walls import Unwallable, agent_paths
from coder_agent.session.session import Session

log = logging.getLogger(__name__)

NOT_SANDBOXED = "Commands are not sandboxed in this session"


async def open_sandbox(session: Session, store_root: Path | None) -> tuple[CommandSandbox | None, str | None]:
    """The session's sandbox, or None and why not (None and None when the config turns it off). Whatever the
    answer, the agent stops importing from the session's folders (`installation.stop_importing_from`)."""
    state, services = session.state, session.services
    settings = state.config.sandbox
    installation.stop_importing_from([*state.roots, *settings.writable])
    if not settings.enabled:
        return None, None
    support = await anyio.to_thread.run_sync(probe.check)
    if not support.available:
        return None, support.reason
    try:
        sandbox = await CommandSandbox.open(
            tuple(state.roots), settings, support, services.tasks, agent_paths(store_root)
        )
    except Unwallable as exc:
        return None, str(exc)
    except OSError as exc:
        log.warning("session %s: the sandbox could not be prepared", session.id, exc_info=True)
        return None, f"its private folder could not be made ({exc.strerror or exc})"
    if sandbox.walls.missing:
        services.notices.append(
            (
                "Some sandbox paths in your config were left out",
                f"Left out: {', '.join(sandbox.walls.missing)} (sandbox.writable needs folders that exist; paths in "
                "the [sandbox] section are absolute or start with ~/).",
            )
        )
    return sandbox, None


def not_sandboxed_notice(problem: str, *, fell_back: bool) -> tuple[str, str]:
    """The notice for a session whose commands cannot be sandboxed."""
    mode = " The session is in the default mode instead of auto." if fell_back else ""
    return (
        NOT_SANDBOXED,
        f"Because {problem}. Commands run with your account's rights once you allow them, and the auto mode is "
        f"not offered.{mode} `coder-agent doctor` shows the sandbox.",
    )
