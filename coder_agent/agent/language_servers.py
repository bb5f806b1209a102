"""Giving a session its language servers when it opens: none are started then (each starts when a file of its
language is first edited), only the pool that will start them inside the session's walls, and tell the user once
what went wrong with one.

Servers run inside the sandbox whatever the mode (they load the project's own code and settings); a session
without walls gets none unless the user's config says `lsp.without_sandbox = true`, and is told so once, when the
first file a server would check is edited.
"""

from __future__ import annotations

import functools
from pathlib import Path

from anyio.abc import TaskGroup

from coder_agent.lsp.editor import EditorServers
from coder_agent.lsp.pool import LanguageServers
from coder_agent.lsp.settings import LspConfig
from coder_agent.sandbox.command import CommandSandbox
from coder_agent.session.bridge import ClientBridge
from coder_agent.session.session import Session


def open_language_servers(session: Session) -> LanguageServers | None:
    """The session's pool of language servers; None when the config turns them off."""
    state, services = session.state, session.services
    settings = state.config.lsp
    if not settings.enabled:
        return None
    channel = services.bridge.lsp_channel()
    editor = EditorServers(channel, tuple(state.roots)) if channel is not None else None
    return language_servers(settings, tuple(state.roots), services.tasks, services.sandbox, services.bridge, editor)


def language_servers(
    settings: LspConfig,
    roots: tuple[Path, ...],
    tasks: TaskGroup,
    sandbox: CommandSandbox | None,
    bridge: ClientBridge,
    editor: EditorServers | None = None,
) -> LanguageServers:
    """A pool of language servers for `roots`, each started inside `sandbox`'s walls (a session's, or an isolated
    sub-agent's around its copy, with no editor's servers: the editor knows nothing of the copy)."""
    wrap = functools.partial(sandbox.launch, shared_network=False) if sandbox is not None else None

    async def tell(title: str, description: str) -> None:
        await bridge.notice("warning", title, description)

    return LanguageServers(settings, roots, tasks, wrap=wrap, sandboxed=sandbox is not None, tell=tell, editor=editor)
