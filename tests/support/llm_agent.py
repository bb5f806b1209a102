"""An in-process agent wired to the fake LLM through litellm, with a config file written for the test."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from coder_agent.agent.config_source import ConfigSource
from coder_agent.agent.model_runner import ModelRunner
from coder_agent.config import CliOverrides
from coder_agent.store import SessionStore
from tests.support.acp_client import FakeClient, in_process_agent
from tests.support.editor import FakeEditor
from tests.support.fake_llm import FakeLLM

FAST_FAILURES = {"idle_timeout": 5.0, "request_timeout": 30.0, "retries": 2}


def write_config(path: Path, llm: FakeLLM, **fields: Any) -> Path:
    """A config file pointing at the fake LLM; `fields` override or add settings."""
    values: dict[str, Any] = {"model": "openai/fake-model", "api_base": llm.base_url, **FAST_FAILURES, **fields}
    lines = []
    tables = {key: values.pop(key) for key in list(values) if isinstance(values[key], dict)}
    for key, value in values.items():
        if isinstance(value, str):
            lines.append(f"{key} = {value!r}".replace("'", '"'))
        elif isinstance(value, bool):
            lines.append(f"{key} = {'true' if value else 'false'}")
        else:
            lines.append(f"{key} = {value}")
    for name, table in tables.items():
        lines.append(f"[{name}]")
        lines.extend(f"{key} = {json.dumps(value)}" for key, value in table.items())
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def make_source(tmp_path: Path, llm: FakeLLM, **fields: Any) -> ConfigSource:
    """Config sources for a test: a config file pointing at the fake LLM, a test key, no user file."""
    config = write_config(tmp_path / "test-config.toml", llm, **fields)
    return ConfigSource(
        CliOverrides(config_file=config),
        environ={"CODER_AGENT_API_KEY": "sk-test"},
        user_config_path=tmp_path / "no-user-config.toml",
    )


@asynccontextmanager
async def llm_agent(
    tmp_path: Path,
    llm: FakeLLM,
    *,
    capabilities: dict[str, Any] | None = None,
    **fields: Any,
) -> AsyncIterator[tuple[FakeClient, str]]:
    """An initialized agent with one session in `tmp_path/work`; yields the client and the session id."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    async with in_process_agent(ModelRunner, source=make_source(tmp_path, llm, **fields)) as client:
        await client.initialize(capabilities)
        session_id = await client.new_session(str(work))
        yield client, session_id


@asynccontextmanager
async def tool_agent(
    tmp_path: Path,
    llm: FakeLLM,
    *,
    fs: bool = True,
    terminal: bool = True,
    mode: str | None = None,
    store: SessionStore | None = None,
    open_session: bool = True,
    **fields: Any,
) -> AsyncIterator[tuple[FakeClient, FakeEditor, str, Path]]:
    """An agent with the built-in tools, a real fake editor on `tmp_path/work`, and one session there.

    Yields the client, the editor, the session id ("" with `open_session=False`) and the work folder.
    `mode` sets the session mode; `store` keeps sessions on disk.
    """
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    if mode is not None:
        fields["default_mode"] = mode
    async with in_process_agent(ModelRunner, store, make_source(tmp_path, llm, **fields)) as client:
        editor = FakeEditor(client, root=work, fs=fs, terminal=terminal)
        try:
            await client.initialize(editor.capabilities())
            session_id = await client.new_session(str(work)) if open_session else ""
            yield client, editor, session_id, work
        finally:
            await editor.aclose()
