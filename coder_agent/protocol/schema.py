"""ACP v1 method params and results, and the `session/update` variants, as pydantic models.

Only what coder-agent sends or reads is modelled; `tests/acp_schema/schema.json` is the truth these follow.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    field_validator,
)

from coder_agent.protocol import PROTOCOL_VERSION
from coder_agent.protocol.base import AcpModel
from coder_agent.protocol.content import (
    ContentBlock,
    PlanEntry,
    ToolCallContent,
    ToolCallLocation,
    ToolCallStatus,
    ToolKind,
)

StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]

# ---- initialize ---------------------------------------------------------------------------------


class Implementation(AcpModel):
    name: str
    title: str | None = None
    version: str


class _Lenient(AcpModel):
    """Capabilities: a malformed field counts as not advertised, without losing the others (ACP's
    `x-deserialize-default-on-error`); flags must be JSON booleans (`"yes"` advertises nothing)."""

    @field_validator("*", mode="wrap")
    @classmethod
    def _default_on_error(cls, value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> Any:
        try:
            return handler(value)
        except ValidationError:
            assert info.field_name is not None
            return cls.model_fields[info.field_name].get_default(call_default_factory=True)


class FileSystemCapabilities(_Lenient):
    read_text_file: StrictBool = False
    write_text_file: StrictBool = False


class ConfigOptionsCapabilities(_Lenient):
    boolean: dict[str, Any] | None = None


class ClientSessionCapabilities(_Lenient):
    compaction: dict[str, Any] | None = None
    notices: dict[str, Any] | None = None
    config_options: ConfigOptionsCapabilities | None = None
    cursors: dict[str, Any] | None = None
    """`cursor_update`s are shown (RFD "Session Cursors")."""


class ElicitationCapabilities(_Lenient):
    """Each mode is advertised by an object (`{}`); absent or null means not supported."""

    form: dict[str, Any] | None = None
    url: dict[str, Any] | None = None


class ClientCapabilities(_Lenient):
    fs: FileSystemCapabilities = Field(default_factory=FileSystemCapabilities)
    terminal: StrictBool = False
    session: ClientSessionCapabilities | None = None
    elicitation: ElicitationCapabilities | None = None
    subagents: dict[str, Any] | None = None
    """Sub-agent sessions are shown (RFD "Subagent Sessions"): `subagent_update` and the children's own updates."""
    plan: dict[str, Any] | None = None
    """`plan_update` and `plan_removed` are shown (RFD "Plan Operations"; the SDK's draft schema names it `plan`)."""
    plan_capabilities: dict[str, Any] | None = None
    """The same, by the name the RFD's text gives it (`planCapabilities`)."""
    lsp: dict[str, Any] | None = None
    """The client forwards requests to its language servers (draft RFD "Language Server Proxy": `lsp/servers`,
    `lsp/request`); offered under `_meta.lsp` until the RFD is stable, and read from either place."""

    @property
    def forwards_lsp(self) -> bool:
        return self.lsp is not None or isinstance((self.meta or {}).get("lsp"), dict)

    @property
    def shows_plan_documents(self) -> bool:
        return self.plan is not None or self.plan_capabilities is not None

    @property
    def shows_cursors(self) -> bool:
        """`session.cursors` (the RFD's name), or `_meta.cursors` (a client patch that cannot change the schema)."""
        return (self.session is not None and self.session.cursors is not None) or _meta_flag(self.meta, "cursors")

    @property
    def hears_wakes(self) -> bool:
        """`_meta.wake`: the client takes `_session/wake` notifications (a turn the agent starts itself)."""
        return _meta_flag(self.meta, "wake")


def _meta_flag(meta: dict[str, Any] | None, name: str) -> bool:
    value = (meta or {}).get(name)
    return value is True or isinstance(value, dict)


class PromptCapabilities(AcpModel):
    image: bool = False
    audio: bool = False
    embedded_context: bool = False


class McpCapabilities(AcpModel):
    http: bool = False
    sse: bool = False


class SessionCapabilities(AcpModel):
    list: dict[str, Any] | None = None
    delete: dict[str, Any] | None = None
    resume: dict[str, Any] | None = None
    close: dict[str, Any] | None = None
    additional_directories: dict[str, Any] | None = None
    fork: dict[str, Any] | None = None
    system_prompt: dict[str, Any] | None = None


class AgentCapabilities(AcpModel):
    load_session: bool = False
    prompt_capabilities: PromptCapabilities = Field(default_factory=PromptCapabilities)
    mcp_capabilities: McpCapabilities = Field(default_factory=McpCapabilities)
    session_capabilities: SessionCapabilities = Field(default_factory=SessionCapabilities)


class AuthMethod(AcpModel):
    """An `agent` auth method: the client calls `authenticate` with its id."""

    id: str
    name: str
    description: str | None = None


class InitializeResponse(AcpModel):
    protocol_version: int = PROTOCOL_VERSION
    agent_capabilities: AgentCapabilities
    auth_methods: list[AuthMethod] = Field(default_factory=list)
    agent_info: Implementation


class AuthenticateRequest(AcpModel):
    method_id: str


# ---- sessions -----------------------------------------------------------------------------------


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


class NewSessionRequest(AcpModel):
    cwd: str
    mcp_servers: list[McpServer]
    additional_directories: list[str] = Field(default_factory=list)
    system_prompt: SystemPrompt | None = None


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
    system_prompt: SystemPrompt | None = None


class ResumeSessionRequest(AcpModel):
    session_id: str
    cwd: str
    mcp_servers: list[McpServer] = Field(default_factory=list)
    additional_directories: list[str] = Field(default_factory=list)
    system_prompt: SystemPrompt | None = None


class ForkSessionRequest(ResumeSessionRequest):
    cursor_id: str | None = None
    """A cursor (`cursor_update`) whose `capabilities` name `session/fork`: the fork holds what was before it."""
    """`session/fork` (unstable): a new session from another's history, whole or up to a message (`messageId`,
    the RFD session-fork-at-message: inclusive)."""

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


# ---- session/update -----------------------------------------------------------------------------


def new_message_id() -> str:
    """A fresh `messageId`: every chunk of one message carries the same one (a UUID, as clients expect)."""
    return str(uuid.uuid4())


class UserMessageChunk(AcpModel):
    session_update: Literal["user_message_chunk"] = "user_message_chunk"
    content: ContentBlock
    message_id: str
    """Every chunk we send names its message (ACP's `messageId`, optional on the wire, always set by us)."""


class AgentMessageChunk(AcpModel):
    session_update: Literal["agent_message_chunk"] = "agent_message_chunk"
    content: ContentBlock
    message_id: str


class AgentThoughtChunk(AcpModel):
    session_update: Literal["agent_thought_chunk"] = "agent_thought_chunk"
    content: ContentBlock
    message_id: str
    """A thought is a message of its own: never the id of the answer it comes with."""


MessageChunk = UserMessageChunk | AgentMessageChunk | AgentThoughtChunk


class ToolCallStart(AcpModel):
    session_update: Literal["tool_call"] = "tool_call"
    tool_call_id: str
    title: str
    name: str | None = None
    """The tool's programmatic name (ACP v1.25)."""
    kind: ToolKind = "other"
    status: ToolCallStatus = "pending"
    content: list[ToolCallContent] | None = None
    locations: list[ToolCallLocation] | None = None
    raw_input: Any = None
    raw_output: Any = None


class ToolCallUpdate(AcpModel):
    """`tool_call_update`; also the `toolCall` of a permission request (without `sessionUpdate`)."""

    session_update: Literal["tool_call_update"] = "tool_call_update"
    tool_call_id: str
    title: str | None = None
    kind: ToolKind | None = None
    status: ToolCallStatus | None = None
    content: list[ToolCallContent] | None = None
    locations: list[ToolCallLocation] | None = None
    raw_input: Any = None
    raw_output: Any = None


class PlanUpdate(AcpModel):
    session_update: Literal["plan"] = "plan"
    entries: list[PlanEntry]


class AvailableCommandInput(AcpModel):
    hint: str


class AvailableCommand(AcpModel):
    name: str
    description: str
    input: AvailableCommandInput | None = None


class AvailableCommandsUpdate(AcpModel):
    session_update: Literal["available_commands_update"] = "available_commands_update"
    available_commands: list[AvailableCommand]


class CurrentModeUpdate(AcpModel):
    session_update: Literal["current_mode_update"] = "current_mode_update"
    current_mode_id: str


class ConfigOptionUpdate(AcpModel):
    session_update: Literal["config_option_update"] = "config_option_update"
    config_options: list[ConfigOption]


class SessionInfoUpdate(AcpModel):
    session_update: Literal["session_info_update"] = "session_info_update"
    title: str | None = None
    updated_at: str | None = None


class Cost(AcpModel):
    amount: float
    currency: str = "USD"


class UsageUpdate(AcpModel):
    session_update: Literal["usage_update"] = "usage_update"
    used: int
    size: int
    cost: Cost | None = None


class CompactionUpdate(AcpModel):
    session_update: Literal["compaction_update"] = "compaction_update"
    compaction_id: str
    status: Literal["in_progress", "completed", "failed", "cancelled"]
    summary: list[ContentBlock] | None = None
    error: str | None = None


class CompactionSummaryChunk(AcpModel):
    """A piece of a compaction's summary, appended in order (only for clients that advertise `session.compaction`)."""

    session_update: Literal["compaction_summary_chunk"] = "compaction_summary_chunk"
    compaction_id: str
    content: ContentBlock


class NoticeUpdate(AcpModel):
    """A live notice for the user (never replayed); only for clients that advertise `session.notices`."""

    session_update: Literal["notice"] = "notice"
    severity: Literal["info", "warning", "error"]
    title: str = Field(min_length=1)
    description: str | None = None


NoticeSeverity = Literal["info", "warning", "error"]
SubagentState = Literal["running", "completed", "failed", "cancelled", "disconnected"]


class SubagentCapabilities(AcpModel):
    cancel: bool | None = None
    """The client may cancel this child alone with `session/cancel` on its session id."""


class SubagentUpdate(AcpModel):
    """Announces a sub-agent session (the first update for its id) or changes it, on its parent's session; only
    for clients that advertise `subagents` (RFD "Subagent Sessions": every announced child gets one terminal
    state, after all of its own updates and before the parent's turn ends)."""

    session_update: Literal["subagent_update"] = "subagent_update"
    subagent_session_id: str
    name: str | None = None
    task: str | None = None
    capabilities: SubagentCapabilities | None = None
    state: SubagentState | None = None


class MarkdownPlan(AcpModel):
    type: Literal["markdown"] = "markdown"
    id: str
    """The plan's id, as the RFD names it."""
    plan_id: str
    """The same id, as the SDK's draft schema names it (sent under both names so either kind of client reads it)."""
    content: str


class PlanDocumentUpdate(AcpModel):
    """`plan_update` with a Markdown plan (RFD "Plan Operations"); only for clients that advertise plans."""

    session_update: Literal["plan_update"] = "plan_update"
    plan: MarkdownPlan


class CursorAnchor(AcpModel):
    """Where a cursor stands: before or after a message (`messageId`) or a tool call (`toolCallId`)."""

    position: Literal["before", "after"]
    message_id: str | None = None
    tool_call_id: str | None = None


class CursorUpdate(AcpModel):
    """Announces a point of the session that methods can take (RFD "Session Cursors"): an opaque `cursorId`, its
    anchor, and the methods that accept it; only for clients that show cursors."""

    session_update: Literal["cursor_update"] = "cursor_update"
    cursor_id: str
    anchor: CursorAnchor
    capabilities: list[str]


class WakeUpdate(AcpModel):
    """Not a `session/update`: the agent starts a turn itself (`running`, with the synthetic user message's id and
    why) or that turn ended (`idle`, with its stop reason). `AcpClientBridge` sends it as the `_session/wake`
    notification to clients that advertise `_meta.wake` (the v2 draft's `state_update`, in v1); others never see it."""

    session_update: Literal["_wake"] = "_wake"
    state: Literal["running", "idle"]
    message_id: str | None = None
    reason: dict[str, Any] | None = None
    stop_reason: StopReason | None = None


SessionUpdate = (
    UserMessageChunk
    | AgentMessageChunk
    | AgentThoughtChunk
    | ToolCallStart
    | ToolCallUpdate
    | PlanUpdate
    | AvailableCommandsUpdate
    | CurrentModeUpdate
    | ConfigOptionUpdate
    | SessionInfoUpdate
    | UsageUpdate
    | CompactionUpdate
    | CompactionSummaryChunk
    | NoticeUpdate
    | SubagentUpdate
    | PlanDocumentUpdate
    | CursorUpdate
    | WakeUpdate
)

# ---- agent -> client ----------------------------------------------------------------------------


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
