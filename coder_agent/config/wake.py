"""`[wake]`: what a session does when background work ends while no turn runs (`agent.wake`).

Off (the default in an editor), the user gets one notice and the model hears of it at the next prompt. On (the
`auto_continue` session option; the default of `coder-agent run`), the agent starts a turn itself, bounded: at most
`max_per_hour` such turns in any hour, and none once the session's own turns have cost `max_cost` (USD).
"""

from pydantic import BaseModel, ConfigDict, Field


class WakeConfig(BaseModel):
    """Turns the agent starts itself when a background job ends."""

    model_config = ConfigDict(extra="forbid")

    auto_continue: bool = False
    """Start a turn when a background job ends while no turn runs (`coder-agent run` turns it on)."""
    max_per_hour: int = Field(default=6, ge=0)
    """At most this many such turns in any hour of a session (0: never)."""
    max_cost: float = Field(default=1.0, ge=0)
    """No such turn once the turns the agent started itself in this session have cost this much (USD)."""
    run_wait: float = Field(default=600.0, ge=0)
    """How long `coder-agent run` with auto_continue waits, after its turn, for background jobs to end (seconds)."""
