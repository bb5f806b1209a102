"""An in-process agent whose model is a `ScriptedModel`: the loop, commands and sessions without HTTP or litellm."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from coder_agent.agent.config_source import ConfigSource
from coder_agent.agent.model_runner import ModelRunner
from coder_agent.config import CliOverrides
from coder_agent.model.scripted import ScriptedModel
from coder_agent.store import SessionStore
from tests.support.acp_client import FakeClient, in_process_agent
from tests.support.editor import FakeEditor


def scripted_source(tmp_path: Path, **fields: Any) -> ConfigSource:
    """Config sources with a model string no provider owns (so no key is needed) and `fields` in a file."""
    lines = [f"{key} = {_toml(value)}" for key, value in {"model": "scripted/model", **fields}.items()]
    config = tmp_path / "scripted-config.toml"
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return ConfigSource(CliOverrides(config_file=config), environ={}, user_config_path=tmp_path / "no-user.toml")


def scripted_runner(model: ScriptedModel) -> Callable[[ConfigSource], ModelRunner]:
    """A runner factory whose every turn uses `model`."""
    return lambda source: ModelRunner(source, model_factory=lambda settings: model)


@asynccontextmanager
async def scripted_agent(
    tmp_path: Path,
    model: ScriptedModel,
    *,
    capabilities: dict[str, Any] | None = None,
    store: SessionStore | None = None,
    editor: bool = False,
    open_session: bool = True,
    **fields: Any,
) -> AsyncIterator[tuple[FakeClient, str, FakeEditor | None]]:
    """An initialized agent with one session in `tmp_path/work`; yields the client, session id and editor.

    With `editor`, a fake editor serves fs and terminals on the work folder; with `open_session=False` no
    session is opened (the id is "").
    """
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)

    async with in_process_agent(scripted_runner(model), store, scripted_source(tmp_path, **fields)) as client:
        fake_editor = FakeEditor(client, root=work) if editor else None
        try:
            caps = capabilities if capabilities is not None else fake_editor.capabilities() if fake_editor else None
            await client.initialize(caps)
            session_id = await client.new_session(str(work)) if open_session else ""
            yield client, session_id, fake_editor
        finally:
            if fake_editor is not None:
                await fake_editor.aclose()


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(value)
