"""The `[telemetry]` section: OpenTelemetry traces and metrics, opt-in (`agent.otel` exports them).

On when `enabled = true` or an `endpoint` is set here, or when the standard `OTEL_EXPORTER_OTLP_ENDPOINT` (or its
traces variant) is set in the environment, unless `OTEL_SDK_DISABLED` is true. A project file may not set it (it
would choose where a session's facts are sent). Standard library and pydantic only: the config is loaded on the
startup path.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


class TelemetryConfig(BaseModel):
    """Where and what a session's traces and metrics go (OTLP over HTTP)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = False
    """Export traces and metrics (also on when `endpoint` or OTEL_EXPORTER_OTLP_ENDPOINT is set)."""

    endpoint: str | None = Field(default=None, min_length=1)
    """The OTLP/HTTP collector's base URL (`/v1/traces` and `/v1/metrics` are added); None: the OTEL_EXPORTER_OTLP_*
    variables, else http://localhost:4318."""

    log_prompts: bool = False
    """Put prompts, answers, tool arguments and results in the spans too (never keys). Off: counts, names, times."""

    service_name: str = Field(default="coder-agent", min_length=1)
    """The `service.name` resource attribute."""

    def active(self, environ: Mapping[str, str]) -> bool:
        """Whether telemetry is on for this config and environment."""
        if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
            return False
        return self.enabled or self.endpoint is not None or any(environ.get(v, "").strip() for v in ENDPOINT_VARIABLES)
