"""OpenTelemetry for coder-agent: the one module that imports it, and only when telemetry is on (`[telemetry]` or
the standard `OTEL_EXPORTER_OTLP_ENDPOINT`); the packages are the `telemetry` extra (`coder-agent[telemetry]`).

A trace per turn (`invoke_agent`), with a span per model request (`chat {model}`: the model, tokens, cost, time to
first token) and per tool call (`execute_tool {name}`: its kind, status, permission outcome; its duration is the
span's), in the names of OpenTelemetry's GenAI conventions where they have one (`gen_ai.*`) and ours otherwise
(`coder_agent.*`). Metrics: token usage and the duration of model requests (histograms), and cost (a counter).
Exported over OTLP/HTTP with the SDK's batching, flushed when the session manager closes (`flush`). What a span holds
is counts, names and times; prompts, answers, tool arguments and results only with `log_prompts = true`, and key
values never (redacted, and the collector's own header variables are kept from the commands the agent runs).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Span, Status, StatusCode

from coder_agent import __version__, secrets
from coder_agent.config.telemetry import TelemetryConfig
from coder_agent.model.base import Usage

log = logging.getLogger(__name__)

FLUSH_MILLIS = 3_000
TEXT_LIMIT = 20_000
"""A prompt, answer or tool result kept in a span (with `log_prompts`) at most."""
HEADER_VARIABLES = (
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
)
"""Where a collector's credentials live: kept from the commands the agent runs, and redacted, like model keys."""


class OtelTelemetry:
    """The process's traces and metrics (one provider each), exported to `config`'s collector."""

    def __init__(self, config: TelemetryConfig) -> None:
        for name in HEADER_VARIABLES:
            secrets.add_key_variable(name)
        self.config = config
        resource = Resource.create({"service.name": config.service_name, "service.version": __version__})
        base = config.endpoint.rstrip("/") if config.endpoint else None
        spans = OTLPSpanExporter(endpoint=f"{base}/v1/traces") if base else OTLPSpanExporter()
        numbers = OTLPMetricExporter(endpoint=f"{base}/v1/metrics") if base else OTLPMetricExporter()
        self.traces = TracerProvider(resource=resource)
        self.traces.add_span_processor(BatchSpanProcessor(spans))
        self.meters = MeterProvider(resource=resource, metric_readers=[PeriodicExportingMetricReader(numbers)])
        self.tracer = self.traces.get_tracer("coder_agent", __version__)
        meter = self.meters.get_meter("coder_agent", __version__)
        self.tokens = meter.create_histogram("gen_ai.client.token.usage", unit="{token}", description="Tokens used")
        self.duration = meter.create_histogram(
            "gen_ai.client.operation.duration", unit="s", description="How long a model request took"
        )
        self.cost = meter.create_counter("coder_agent.cost", unit="USD", description="What model requests cost")

    def turn(self, session_id: str, mode: str, model: str | None, prompt: str | None) -> OtelTurn:
        span = self.tracer.start_span(
            "invoke_agent coder-agent",
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "coder-agent",
                "gen_ai.conversation.id": session_id,
                "gen_ai.request.model": model or "",
                "coder_agent.mode": mode,
            },
        )
        if self.config.log_prompts and prompt is not None:
            span.set_attribute("coder_agent.prompt", _text(prompt))
        return OtelTurn(self, span)

    def flush(self) -> None:
        """Send what is batched now (bounded): the process may end without running anything more."""
        self.traces.force_flush(FLUSH_MILLIS)
        self.meters.force_flush(FLUSH_MILLIS)


class OtelTurn:
    """One turn's trace."""

    def __init__(self, telemetry: OtelTelemetry, span: Span) -> None:
        self.telemetry = telemetry
        self.span = span
        self.context = trace.set_span_in_context(span)
        self.open: list[Span] = []
        self.requests = 0

    def model_request(self, model: str) -> OtelModelSpan:
        self.requests += 1
        span = self.telemetry.tracer.start_span(
            f"chat {model}",
            context=self.context,
            attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": model},
        )
        self.open.append(span)
        return OtelModelSpan(self, span, model)

    def tool_call(self, name: str, kind: str, call_id: str, arguments: Any) -> OtelToolSpan:
        span = self.telemetry.tracer.start_span(
            f"execute_tool {name}",
            context=self.context,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.call.id": call_id,
                "coder_agent.tool.kind": kind,
            },
        )
        if self.telemetry.config.log_prompts:
            span.set_attribute("gen_ai.tool.call.arguments", _text(_json(arguments)))
        self.open.append(span)
        return OtelToolSpan(self, span)

    def end(self, stop_reason: str) -> None:
        for span in self.open:  # a request whose bill never came, a call cut short
            span.end()
        self.open.clear()
        self.span.set_attribute("coder_agent.stop_reason", stop_reason)
        self.span.set_attribute("coder_agent.model_requests", self.requests)
        self.span.end()

    def closed(self, span: Span) -> None:
        if span in self.open:
            self.open.remove(span)
        span.end()


class OtelModelSpan:
    def __init__(self, turn: OtelTurn, span: Span, model: str) -> None:
        self.turn = turn
        self.span = span
        self.model = model
        self.started = time.monotonic()
        self.first: float | None = None

    def first_token(self) -> None:
        if self.first is None:
            self.first = time.monotonic()
            self.span.set_attribute("coder_agent.time_to_first_token_s", round(self.first - self.started, 4))

    def end(self, usage: Usage | None, cost: float | None, answer: str | None = None, error: str | None = None) -> None:
        telemetry = self.turn.telemetry
        labels = {"gen_ai.operation.name": "chat", "gen_ai.request.model": self.model}
        telemetry.duration.record(time.monotonic() - self.started, labels)
        if usage is not None:
            self.span.set_attribute("gen_ai.usage.input_tokens", usage.prompt_tokens)
            self.span.set_attribute("gen_ai.usage.output_tokens", usage.completion_tokens)
            self.span.set_attribute("coder_agent.usage.cached_input_tokens", usage.cached_tokens)
            telemetry.tokens.record(usage.prompt_tokens, {**labels, "gen_ai.token.type": "input"})
            telemetry.tokens.record(usage.completion_tokens, {**labels, "gen_ai.token.type": "output"})
        if cost:
            self.span.set_attribute("coder_agent.cost_usd", cost)
            telemetry.cost.add(cost, labels)
        if answer is not None and telemetry.config.log_prompts:
            self.span.set_attribute("coder_agent.answer", _text(answer))
        if error is not None:
            self.span.set_status(Status(StatusCode.ERROR, secrets.redact(error)))
        self.turn.closed(self.span)


class OtelToolSpan:
    def __init__(self, turn: OtelTurn, span: Span) -> None:
        self.turn = turn
        self.span = span

    def end(self, status: str, permission: str, output: str | None = None) -> None:
        self.span.set_attribute("coder_agent.tool.status", status)
        self.span.set_attribute("coder_agent.permission", secrets.redact(permission))
        if output is not None and self.turn.telemetry.config.log_prompts:
            self.span.set_attribute("gen_ai.tool.call.result", _text(output))
        if status != "completed":
            self.span.set_status(Status(StatusCode.ERROR, status))
        self.turn.closed(self.span)


def _text(text: str) -> str:
    text = secrets.redact(text)
    return text if len(text) <= TEXT_LIMIT else text[:TEXT_LIMIT] + "…"


def _json(value: Any) -> str:
    import json

    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)
