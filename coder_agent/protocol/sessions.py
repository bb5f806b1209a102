"""ACP's session methods: setting a session up (`session/new`, `load`, `resume`, `fork`, `list`), prompting it,
steering it, and setting its mode and config options.

Only what coder-agent sends or reads is modelled; `tests/acp_schema/schema.json` is the truth these follow.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictBool, StrictStr

from coder_agent.protocol.base import AcpModel
from coder_agent.protocol.content import ContentBlock

StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]


class EnvVariable(AcpModel):
    name: str
    value: str


class HttpHeader(AcpModel):
    name: str
    value: str


class McpServerStdio(AcpModel):
    type: Literal["stdio"] = "stdio"
    name: str
    command: str
    args: list[str] = Field(default_factory=list)
    env: list[EnvVariable] = Field(default_factory=list)


class McpServerHttp(AcpModel):
    type: Literal["http"]
    name: str
    url: str
    headers: list[HttpHeader] = Field(default_factory=list)


class McpServerSse(AcpModel):
    type: Literal["sse"]
    name: str
    url: str
    headers: list[HttpHeader] = Field(default_factory=list)


McpServer = Annotated[McpServerStdio | McpServerHttp | McpServerSse, Field(union_mode="left_to_right")]


class SystemPrompt(AcpModel):
    """The client's instructions for a session (unstable `systemPrompt`): `append` to the agent's own, or
    `override` them; content is text blocks (checked by the agent, which names what it cannot take)."""

    mode: str
    content: list[ContentBlock]


ClientInstructions = SystemPrompt | StrictStr
"""`systemPrompt` as the SDK's unstable schema has it (an object), or as the RFD "Client-Provided System Prompt"
has it: a plain string, added to the agent's own instructions. (`_meta.systemPrompt`, the shape of Claude's adapter,
is read from the request's `meta` by the agent.)"""


class NewSessionRequest(AcpModel):
    cwd: str
    mcp_servers: list[McpServer]
    additional_directories: list[str] = Field(default_factory=list)
    system_prompt: ClientInstructions | None = None


class SessionMode(AcpModel):
    id: str
    name: str
    description: str | None = None


class SessionModeState(AcpModel):
    current_mode_id: str
    available_modes: list[SessionMode]


class SelectOption(AcpModel):
    value: str
    name: str
    description: str | None = None


class _ConfigOptionBase(AcpModel):
    id: str
    name: str
    description: str | None = None
    category: str | None = None


class SessionConfigOption(_ConfigOptionBase):
    """A select option (a dropdown)."""

    type: Literal["select"] = "select"
    current_value: str
    options: list[SelectOption]


class BooleanConfigOption(_ConfigOptionBase):
    """An on/off option: only for clients that advertise `session.configOptions.boolean`."""

    type: Literal["boolean"] = "boolean"
    current_value: bool


ConfigOption = SessionConfigOption | BooleanConfigOption


class NewSessionResponse(AcpModel):
    session_id: str
    modes: SessionModeState | None = None
    config_options: list[ConfigOption] | None = None


class LoadSessionRequest(AcpModel):
    session_id: str
    cwd: str
    mcp_servers: list[McpServer]
    additional_directories: list[str] = Field(default_factory=list)
    system_prompt: ClientInstructions | None = None


class ResumeSessionRequest(AcpModel):
    session_id: str
    cwd: str
    mcp_servers: list[McpServer] = Field(default_factory=list)
    additional_directories: list[str] = Field(default_factory=list)
    system_prompt: ClientInstructions | None = None


class ForkSessionRequest(ResumeSessionRequest):
    """`session/fork` (unstable): a new session from another's history, whole or up to a message (`messageId`,
    the RFD session-fork-at-message: inclusive)."""

    cursor_id: str | None = None
    """A cursor (`cursor_update`) whose `capabilities` name `session/fork`: the fork holds what was before it."""

    message_id: str | None = None


class LoadSessionResponse(AcpModel):
    modes: SessionModeState | None = None
    config_options: list[ConfigOption] | None = None


class ListSessionsRequest(AcpModel):
    cwd: str | None = None
    cursor: str | None = None


class SessionInfo(AcpModel):
    session_id: str
    cwd: str
    title: str | None = None
    updated_at: str | None = None
    additional_directories: list[str] | None = None


class ListSessionsResponse(AcpModel):
    sessions: list[SessionInfo]
    next_cursor: str | None = None


class SessionRequest(AcpModel):
    """Any request that names a session."""

    session_id: str


class PromptRequest(SessionRequest):
    prompt: list[ContentBlock]


class TurnUsage(AcpModel):
    """The tokens of a prompt's turn (ACP's unstable `Usage`); input counts every input token, the cached ones too."""

    total_tokens: int
    input_tokens: int
    output_tokens: int
    cached_read_tokens: int | None = None
    cached_write_tokens: int | None = None


class PromptResponse(AcpModel):
    stop_reason: StopReason
    user_message_id: str | None = None
    """The id the prompt's user message got (its `user_message_chunk`s carry it; the message-id RFD)."""
    usage: TurnUsage | None = None
    """What the turn's model calls used (unstable in ACP); its cost is in `_meta`."""


class CancelNotification(SessionRequest):
    pass


class RewindRequest(SessionRequest):
    """`_session/rewind` (the shape of claude-agent-acp's PR #966, with a cursor): go back to a cursor (or to before a
    user message), the files, the conversation or both; `dryRun` only says what would change; `prompt` sends a new
    message from there in the same step (edit and resubmit)."""

    cursor_id: str | None = None
    message_id: str | None = None
    mode: Literal["files", "conversation", "both"] = "files"
    dry_run: StrictBool = False
    on_conflict: Literal["ask", "overwrite", "keep"] = "ask"
    """Files changed since the agent's last edit: `ask` (do nothing, say which), `overwrite` them, or `keep` them."""
    prompt: list[ContentBlock] | None = None


class InjectRequest(SessionRequest):
    """`_session/inject` in the v2 draft's shape (RFD "Mid-turn input: queue and steer"): a message for after the
    running turn (`queue`) or for its next model request (`steer`), answered as soon as it is accepted."""

    mode: Literal["queue", "steer"]
    content: list[ContentBlock] = Field(min_length=1)


class PendingMessageRequest(SessionRequest):
    """`_session/revoke_inject` and `_session/replace_inject`: a pending message, by the id its inject got."""

    message_id: str
    content: list[ContentBlock] | None = None


class SteeringRequest(SessionRequest):
    """`_session/steering`, the extension of Claude's adapter and codex-acp: a message for the turn in flight.
    `_meta.steering.idleBehavior` `promptRequired` asks for the message back when no turn runs."""

    prompt: list[ContentBlock] = Field(min_length=1)


class SteeringResponse(AcpModel):
    """`injected` (into the running turn, as the user message `messageId`), `startedNewTurn`, or `promptRequired`
    with `reason` `noRunningTurn`."""

    outcome: Literal["injected", "startedNewTurn", "promptRequired"]
    reason: str | None = None
    message_id: str | None = None


class SetSessionModeRequest(SessionRequest):
    mode_id: str


class SetSessionConfigOptionRequest(SessionRequest):
    config_id: str
    type: str | None = None
    """`boolean` for a boolean value; absent (or another type) for a value id."""
    value: StrictBool | StrictStr


class SetSessionConfigOptionResponse(AcpModel):
    config_options: list[ConfigOption]
