"""Opening a session needs a model and its key, and a valid config: the errors name what to fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from coder_agent.agent.model_runner import ModelRunner
from tests.support.acp_client import RpcFailure, in_process_agent
from tests.support.fake_llm import FakeLLM
from tests.support.llm_agent import make_source

pytestmark = pytest.mark.anyio


async def test_missing_model_or_key_is_auth_required_naming_the_variable(tmp_path: Path, fake_llm: FakeLLM) -> None:
    from coder_agent.agent.config_source import ConfigSource
    from coder_agent.config import CliOverrides

    no_model = ConfigSource(environ={}, user_config_path=tmp_path / "none.toml")
    no_key = ConfigSource(
        CliOverrides(model="anthropic/claude-sonnet-4-5"), environ={}, user_config_path=tmp_path / "none.toml"
    )
    for source, expected in ((no_model, "CODER_AGENT_MODEL"), (no_key, "ANTHROPIC_API_KEY")):
        async with in_process_agent(ModelRunner, source=source) as client:
            await client.initialize()
            with pytest.raises(RpcFailure) as failure:
                await client.new_session(str(tmp_path))
            assert failure.value.code == -32000
            assert expected in failure.value.message
            with pytest.raises(RpcFailure):
                await client.request("authenticate", {"methodId": "env-api-key"})


async def test_invalid_config_names_the_file_and_field(tmp_path: Path, fake_llm: FakeLLM) -> None:
    work = tmp_path / "work"
    work.mkdir()
    async with in_process_agent(ModelRunner, source=make_source(tmp_path, fake_llm, temperature=9)) as client:
        await client.initialize()
        with pytest.raises(RpcFailure) as failure:
            await client.new_session(str(work))
    assert failure.value.code == -32001, "a config problem is not an internal error"
    assert "test-config.toml" in failure.value.message
    assert "temperature" in failure.value.message


async def test_a_bad_model_string_is_refused_when_the_session_opens(tmp_path: Path, fake_llm: FakeLLM) -> None:
    work = tmp_path / "work"
    work.mkdir()
    source = make_source(tmp_path, fake_llm, model="antropic/claude-sonnet-4-5")
    async with in_process_agent(ModelRunner, source=source) as client:
        await client.initialize()
        with pytest.raises(RpcFailure) as failure:
            await client.new_session(str(work))
    assert failure.value.code == -32001
    assert "'antropic'" in failure.value.message
    assert "provider/model" in failure.value.message
