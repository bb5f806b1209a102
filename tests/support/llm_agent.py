"""An in-process agent wired to the fake LLM through litellm, with a config file written for the test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

from coder_agent.agent.config_source import ConfigSource
from coder_agent.agent.model_runner import ModelRunner
from coder_agent.config import CliOverrides
from tests.support.acp_client import FakeClient, in_process_agent
from tests.support.editor import FakeEditor
from tests.support.fake_llm import FakeLLM
from tests.support.scripted_agent import editor_agent, write_config

FAST_FAILURES = {"idle_timeout": 5.0, "request_timeout": 30.0, "retries": 2}


def make_source(tmp_path: Path, llm: FakeLLM, **fields: Any) -> ConfigSource:
    """Config sources for a test: a config file pointing at the fake LLM, a test key, no user file."""
    values = {"model": "openai/fake-model", "api_base": llm.base_url, **FAST_FAILURES, **fields}
    config = write_config(tmp_path / "test-config.toml", values)
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


def tool_agent(
    tmp_path: Path, llm: FakeLLM, **options: Any
) -> AbstractAsyncContextManager[tuple[FakeClient, FakeEditor, str, Path]]:
    """`scripted_agent.tool_agent` (same options and yield) with the model behind litellm and the fake LLM: for
    the tests of what reaches the provider."""
    return editor_agent(tmp_path, ModelRunner, partial(make_source, tmp_path, llm), **options)
