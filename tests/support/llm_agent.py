"""An in-process agent wired to the fake LLM through litellm, with a config file written for the test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from coder_agent.config import CliOverrides
from coder_agent.loop import AgentLoop, ToolSetFactory
from tests.support.acp_client import FakeClient, in_process_agent
from tests.support.fake_llm import FakeLLM

FAST_FAILURES = {"idle_timeout": 5.0, "request_timeout": 30.0, "retries": 2}


def write_config(path: Path, llm: FakeLLM, **fields: Any) -> Path:
    """A config file pointing at the fake LLM; `fields` override or add settings."""
    values: dict[str, Any] = {"model": "openai/fake-model", "api_base": llm.base_url, **FAST_FAILURES, **fields}
    lines = []
    for key, value in values.items():
        if isinstance(value, str):
            lines.append(f"{key} = {value!r}".replace("'", '"'))
        elif isinstance(value, bool):
            lines.append(f"{key} = {'true' if value else 'false'}")
        else:
            lines.append(f"{key} = {value}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def make_loop(tmp_path: Path, llm: FakeLLM, tools: ToolSetFactory | None = None, **fields: Any) -> AgentLoop:
    config = write_config(tmp_path / "test-config.toml", llm, **fields)
    return AgentLoop(
        CliOverrides(config_file=config),
        tools=tools,
        environ={"CODER_AGENT_API_KEY": "sk-test"},
        user_config_path=tmp_path / "no-user-config.toml",
    )


@asynccontextmanager
async def llm_agent(
    tmp_path: Path,
    llm: FakeLLM,
    *,
    tools: ToolSetFactory | None = None,
    capabilities: dict[str, Any] | None = None,
    **fields: Any,
) -> AsyncIterator[tuple[FakeClient, str]]:
    """An initialized agent with one session in `tmp_path/work`; yields the client and the session id."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    async with in_process_agent(make_loop(tmp_path, llm, tools, **fields)) as client:
        await client.initialize(capabilities)
        session_id = await client.new_session(str(work))
        yield client, session_id
