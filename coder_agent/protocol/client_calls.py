"""What the agent asks of the client and the answers it reads: permission requests, elicitation (questions for the
user), and the results of `fs/*` and `terminal/*`.

Only what coder-agent sends or reads is modelled; `tests/acp_schema/schema.json` is the truth these follow.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import StrictBool, StrictFloat, StrictInt, StrictStr

from coder_agent.protocol.base import AcpModel


class PermissionOption(AcpModel):
    option_id: str
    name: str
    kind: Literal["allow_once", "allow_always", "reject_once", "reject_always"]


class PermissionOutcome(AcpModel):
    outcome: Literal["selected", "cancelled"]
    option_id: str | None = None


class RequestPermissionResponse(AcpModel):
    outcome: PermissionOutcome


class FormElicitation(AcpModel):
    """`elicitation/create` in form mode, scoped to a session (and a tool call); needs `elicitation.form`."""

    session_id: str
    tool_call_id: str | None = None
    mode: Literal["form"] = "form"
    message: str
    requested_schema: dict[str, Any]


class UrlElicitation(AcpModel):
    """`elicitation/create` in URL mode: the user is sent to a web page; needs `elicitation.url`."""

    session_id: str
    tool_call_id: str | None = None
    mode: Literal["url"] = "url"
    message: str
    elicitation_id: str
    url: str


ElicitationValue = StrictStr | StrictInt | StrictFloat | StrictBool | list[StrictStr]


class CreateElicitationResponse(AcpModel):
    action: str
    """`accept`, `decline`, `cancel`, or a future action the agent must not take for a known one."""
    content: dict[str, ElicitationValue] | None = None


class CompleteElicitationNotification(AcpModel):
    """`elicitation/complete`: a URL elicitation this client was shown has finished."""

    elicitation_id: str


class ReadTextFileResponse(AcpModel):
    content: str


class CreateTerminalResponse(AcpModel):
    terminal_id: str


class TerminalExitStatus(AcpModel):
    exit_code: int | None = None
    signal: str | None = None


class TerminalOutputResponse(AcpModel):
    output: str
    truncated: bool = False
    exit_status: TerminalExitStatus | None = None
