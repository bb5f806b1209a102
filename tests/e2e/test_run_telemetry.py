"""`coder-agent run` spawned with the standard OTEL_EXPORTER_OTLP_ENDPOINT: its turn's trace reaches the collector
before the process exits (it exits at once after the run, so what was batched is flushed first)."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from tests.support.fake_llm import FakeLLM, Reply
from tests.support.otlp_collector import otlp_collector
from tests.support.spawn import agent_env

pytest.importorskip("opentelemetry.sdk", reason="the telemetry extra is not installed (uv sync --extra telemetry)")

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def test_a_runs_trace_reaches_the_collector_before_it_exits(tmp_path: Path, fake_llm: FakeLLM) -> None:
    work = tmp_path / "project"
    work.mkdir()
    (work / "a.txt").write_text("hi\n")
    fake_llm.script([Reply.tool("read_file", {"path": "a.txt"}), Reply("It says hi.")])
    with otlp_collector() as (url, collected):
        env = agent_env(tmp_path, fake_llm, {"OTEL_EXPORTER_OTLP_ENDPOINT": url})
        with anyio.fail_after(120):
            done = await anyio.run_process(
                [sys.executable, "-m", "coder_agent", "run", "--cwd", str(work), "what does a.txt say?"],
                env=env,
                check=False,
            )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode() == "It says hi.\n"
    [turn] = collected.named("invoke_agent")
    assert turn.attributes["coder_agent.mode"] == "read-only"
    assert [span.name for span in collected.named("chat ")] == ["chat openai/fake-model"] * 2
    [tool] = collected.named("execute_tool ")
    assert tool.name == "execute_tool read_file" and tool.parent_id == turn.span_id
    assert "gen_ai.client.token.usage" in collected.metrics
