"""An OTLP/HTTP collector in the test's process: it takes `POST /v1/traces` and `/v1/metrics` with protobuf bodies, as
the OpenTelemetry exporter sends them, decodes them with `opentelemetry-proto` and keeps the spans and metrics.
Needs the `telemetry` extra (`uv sync --extra telemetry`; `.ci/run` installs every extra)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Span:
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    attributes: dict[str, Any]
    error: bool


@dataclass
class Collected:
    spans: list[Span] = field(default_factory=list)
    metrics: dict[str, list[Any]] = field(default_factory=dict)
    """Metric name → its data points (histograms' and sums' alike), as decoded."""
    resources: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def named(self, prefix: str) -> list[Span]:
        with self.lock:
            return [span for span in self.spans if span.name.startswith(prefix)]


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind is not None else None


def _attributes(items: Any) -> dict[str, Any]:
    return {item.key: _value(item.value) for item in items}


@contextmanager
def otlp_collector() -> Iterator[tuple[str, Collected]]:
    """A collector on a free port of 127.0.0.1; yields its base URL and what it collects."""
    from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

    collected = Collected()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.path == "/v1/traces":
                traces = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
                with collected.lock:
                    for resource in traces.resource_spans:
                        collected.resources.append(_attributes(resource.resource.attributes))
                        for scope in resource.scope_spans:
                            for span in scope.spans:
                                collected.spans.append(
                                    Span(
                                        span.name,
                                        span.trace_id.hex(),
                                        span.span_id.hex(),
                                        span.parent_span_id.hex(),
                                        _attributes(span.attributes),
                                        span.status.code == 2,
                                    )
                                )
                answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
            elif self.path == "/v1/metrics":
                metrics = metrics_service_pb2.ExportMetricsServiceRequest.FromString(body)
                with collected.lock:
                    for resource in metrics.resource_metrics:
                        for scope in resource.scope_metrics:
                            for metric in scope.metrics:
                                kind = metric.WhichOneof("data")
                                points = list(getattr(metric, kind).data_points) if kind else []
                                collected.metrics.setdefault(metric.name, []).extend(points)
                answer = metrics_service_pb2.ExportMetricsServiceResponse().SerializeToString()
            else:
                self.send_response(404)
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", collected
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
