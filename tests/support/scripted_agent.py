"""An in-process agent whose model is a `ScriptedModel`: the loop, commands, tools and sessions without HTTP or
litellm. `scripted_agent` for the protocol alone, `tool_agent` with a fake editor serving fs and terminals."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

from coder_agent.agent.config_source import ConfigSource
from coder_agent.agent.model_runner import ModelRunner
from coder_agent.config import CliOverrides
from coder_agent.model.scripted import ScriptedModel
from coder_agent.store import SessionStore
from tests.support.acp_client import FakeClient, in_process_agent
from tests.support.editor import FakeEditor


def write_config(path: Path, values: dict[str, Any]) -> Path:
    """A config file of `values`: strings, numbers, booleans and lists as keys, dicts as tables."""
    lines = [f"{key} = {_toml(value)}" for key, value in values.items() if not isinstance(value, dict)]
    for name, table in values.items():
        if isinstance(table, dict):
            lines.append(f"[{name}]")
            lines.extend(f"{key} = {_toml(value)}" for key, value in table.items())
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def scripted_source(tmp_path: Path, **fields: Any) -> ConfigSource:
    """Config sources with a model string no provider owns (so no key is needed) and `fields` in a file. Language
    servers are off unless `fields` turn them on (a server found on PATH would otherwise check every test's edits)."""
    values = {"model": "scripted/model", "lsp": {"enabled": False}, **fields}
    config = write_config(tmp_path / "scripted-config.toml", values)
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


def tool_agent(
    tmp_path: Path, model: ScriptedModel, **options: Any
) -> AbstractAsyncContextManager[tuple[FakeClient, FakeEditor, str, Path]]:
    """`model` with the built-in tools, a fake editor on `tmp_path/work` and a session there: `editor_agent`, whose
    options (fs, terminal, mode, store, open_session, config fields) it takes; yields (client, editor, session, work).
    """
    return editor_agent(tmp_path, scripted_runner(model), partial(scripted_source, tmp_path), **options)


@asynccontextmanager
async def editor_agent(
    tmp_path: Path,
    runner: Callable[[ConfigSource], ModelRunner],
    source: Callable[..., ConfigSource],
    *,
    fs: bool = True,
    terminal: bool = True,
    mode: str | None = None,
    store: SessionStore | None = None,
    open_session: bool = True,
    client_capabilities: dict[str, Any] | None = None,
    client_meta: dict[str, Any] | None = None,
    **fields: Any,
) -> AsyncIterator[tuple[FakeClient, FakeEditor, str, Path]]:
    """The agent of `tool_agent` (here and in `llm_agent`): run by `runner` on `source(**fields)`, with a fake
    editor on `tmp_path/work` offering `fs` and `terminal` (and `client_capabilities` besides, `client_meta` as
    their `_meta`), and a session there ("" with `open_session=False`) in `mode`; `store` keeps sessions on disk.
    Yields the client, the editor, the session id and the work folder.
    """
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    if mode is not None:
        fields["default_mode"] = mode
    async with in_process_agent(runner, store, source(**fields)) as client:
        editor = FakeEditor(client, root=work, fs=fs, terminal=terminal)
        try:
            capabilities = {**editor.capabilities(), **(client_capabilities or {})}
            await client.initialize(capabilities if client_meta is None else {**capabilities, "_meta": client_meta})
            session_id = await client.new_session(str(work)) if open_session else ""
            yield client, editor, session_id, work
        finally:
            await editor.aclose()


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, dict):  # an inline table
        return "{ " + ", ".join(f"{json.dumps(key)} = {_toml(item)}" for key, item in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    return json.dumps(value)  # a JSON string is a TOML one
