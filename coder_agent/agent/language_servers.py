"""Giving a session its language servers when it opens: none are started then (each starts when a file of its
language is first edited), only the pool that will start them inside the session's walls, and tell the user once
what went wrong with one.

Servers run inside the sandbox whatever the mode (they load the project's own code and settings); a session
without walls gets none unless the user's config says `lsp.without_sandbox = true`, and is told so once, when the
first file a server would check is edited.
"""

from __future__ import annotations

import functools

from coder_agent.lsp.editor import EditorServers
from coder_agent.lsp.pool import LanguageServers
from coder_agent.session.session import Session


def open_language_servers(session: Session) -> LanguageServers | None:
    """The session's pool of language servers; None when the config turns them off."""
    state, services = session.state, session.services
    settings = state.config.lsp
    if not settings.enabled:
        return None
    sandbox = services.sandbox
    wrap = functools.partial(sandbox.launch, shared_network=False) if sandbox is not None else None

    async def tell(title: str, description: str) -> None:
        await services.bridge.notice("warning", title, description)

    channel = services.bridge.lsp_channel()
    editor = EditorServers(channel, tuple(state.roots)) if channel is not None else None
    return LanguageServers(
        settings, tuple(state.roots), services.tasks, wrap=wrap, sandboxed=sandbox is not None, tell=tell, editor=editor
    )
