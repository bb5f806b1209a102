"""OpenTelemetry, opt-in, against an OTLP/HTTP collector in this process (protobuf decoded with opentelemetry-proto):
a trace per turn with a span per model request (model, tokens, cost, time to first token) and per tool call (kind,
status, permission outcome), metrics for tokens and cost; no prompt or file content unless `log_prompts`, and no
key ever; off, the SDK is never imported."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from coder_agent.agent import observers
from coder_agent.model.base import Usage
from coder_agent.model.scripted import Call, Reply, ScriptedModel
from tests.support.otlp_collector import Collected, otlp_collector
from tests.support.scripted_agent import tool_agent

pytest.importorskip("opentelemetry.sdk", reason="the telemetry extra is not installed (uv sync --extra telemetry)")

pytestmark = pytest.mark.anyio

SECRET = "sk-otel-secret-0a1b2c3d4e5f60718293"
CONTENT = "the file's private contents"


@pytest.fixture
def collector() -> Iterator[tuple[str, Collected]]:
    with otlp_collector() as served:
        yield served


@pytest.fixture(autouse=True)
def fresh_telemetry(monkeypatch: pytest.MonkeyPatch, collector: tuple[str, Collected]) -> Iterator[None]:
    """Each test starts the process's telemetry afresh, for its own collector, and stops it after (while the
    collector still listens: stopping sends what is left)."""
    monkeypatch.setattr(observers, "_started", None)
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED"):
        monkeypatch.delenv(name, raising=False)
    yield
    started = observers._started
    if started is not None:
        started.traces.shutdown()
        started.meters.shutdown()


def script() -> ScriptedModel:
    return ScriptedModel(
        [
            Reply(
                "Reading.",
                calls=[Call("read_file", {"path": "notes.txt"})],
                usage=Usage(prompt_tokens=120, completion_tokens=8, cached_tokens=20),
                cost=0.0012,
            ),
            Reply("It says hi.", usage=Usage(prompt_tokens=150, completion_tokens=5), cost=0.0015),
        ]
    )


async def test_a_turn_is_a_trace_with_its_model_requests_and_tool_calls(
    tmp_path: Path, collector: tuple[str, Collected]
) -> None:
    url, collected = collector
    async with tool_agent(tmp_path, script(), telemetry={"endpoint": url}) as (client, editor, session, work):
        (work / "notes.txt").write_text(CONTENT)
        assert await client.prompt(session, f"read notes.txt {SECRET}") == "end_turn"
    # the session manager closed with the agent: what was batched is sent
    [turn] = collected.named("invoke_agent")
    requests = collected.named("chat ")
    [tool] = collected.named("execute_tool ")
    assert turn.attributes["gen_ai.conversation.id"] == session
    assert turn.attributes["coder_agent.stop_reason"] == "end_turn"
    assert turn.attributes["coder_agent.model_requests"] == 2
    assert {span.trace_id for span in [turn, *requests, tool]} == {turn.trace_id}, "one trace per turn"
    assert {span.parent_id for span in [*requests, tool]} == {turn.span_id}
    first = requests[0].attributes
    assert requests[0].name == "chat scripted/model" and first["gen_ai.request.model"] == "scripted/model"
    assert (first["gen_ai.usage.input_tokens"], first["gen_ai.usage.output_tokens"]) == (120, 8)
    assert first["coder_agent.usage.cached_input_tokens"] == 20 and first["coder_agent.cost_usd"] == 0.0012
    assert first["coder_agent.time_to_first_token_s"] >= 0
    assert tool.name == "execute_tool read_file"
    assert tool.attributes["coder_agent.tool.kind"] == "read"
    assert tool.attributes["coder_agent.tool.status"] == "completed"
    assert tool.attributes["coder_agent.permission"].startswith("allowed: ")
    assert collected.resources[0]["service.name"] == "coder-agent"

    tokens = collected.metrics["gen_ai.client.token.usage"]
    assert sum(point.sum for point in tokens) == 120 + 8 + 150 + 5
    assert sum(point.as_double for point in collected.metrics["coder_agent.cost"]) == pytest.approx(0.0027)

    everything = json.dumps([span.attributes for span in collected.spans])
    assert CONTENT not in everything and "read notes.txt" not in everything, "no contents unless asked"
    assert SECRET not in everything


async def test_log_prompts_adds_the_contents_and_never_a_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, collector: tuple[str, Collected]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    url, collected = collector
    fields = {"telemetry": {"endpoint": url, "log_prompts": True}}
    async with tool_agent(tmp_path, script(), **fields) as (client, editor, session, work):
        (work / "notes.txt").write_text(f"{CONTENT} {SECRET}")
        await client.prompt(session, f"read notes.txt {SECRET}")
    [turn] = collected.named("invoke_agent")
    [tool] = collected.named("execute_tool ")
    assert turn.attributes["coder_agent.prompt"].startswith("read notes.txt")
    assert CONTENT in tool.attributes["gen_ai.tool.call.result"]
    assert json.loads(tool.attributes["gen_ai.tool.call.arguments"]) == {"path": "notes.txt"}
    assert [span.attributes["coder_agent.answer"] for span in collected.named("chat ")] == ["Reading.", "It says hi."]
    assert SECRET not in json.dumps([span.attributes for span in collected.spans]), "keys never"


async def test_the_standard_endpoint_variable_turns_it_on_and_a_refused_call_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, collector: tuple[str, Collected]
) -> None:
    model = ScriptedModel([Reply(calls=[Call("write_file", {"path": "a.txt", "content": "x"})]), Reply("ok")])
    url, collected = collector
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    async with tool_agent(tmp_path, model, mode="read-only") as (client, editor, session, _):
        await client.prompt(session, "write")
    [tool] = collected.named("execute_tool ")
    assert tool.attributes["coder_agent.tool.status"] == "failed" and tool.error
    assert tool.attributes["coder_agent.permission"].startswith("denied: the session is in read-only mode")


def test_off_the_sdk_is_never_imported(tmp_path: Path) -> None:
    """A session with telemetry off runs without importing OpenTelemetry's SDK or our exporter module."""
    code = (
        "import anyio, sys\n"
        "from pathlib import Path\n"
        "from coder_agent.model.scripted import Reply, ScriptedModel\n"
        "from tests.support.scripted_agent import tool_agent\n"
        "async def main():\n"
        f"    async with tool_agent(Path({str(tmp_path)!r}), ScriptedModel([Reply('hi')])) as (c, e, s, w):\n"
        "        await c.prompt(s, 'hi')\n"
        "anyio.run(main)\n"
        "print(sorted(m for m in sys.modules if m.startswith(('opentelemetry.sdk', 'coder_agent.agent.otel'))))\n"
    )
    root = Path(__file__).resolve().parents[2]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")}
    done = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
