"""The variants of `session/update` the agent sends: message chunks, tool calls, plans, modes and options, usage,
compactions, notices, sub-agent sessions and plan documents (the last two from their RFDs).

Only what coder-agent sends is modelled; `tests/acp_schema/schema.json` (and `rfd.schema.json` for what is newer)
is the truth these follow.
"""

from __future__ import annotations

import uuid
from typing import Any, Literal

from pydantic import Field, computed_field

from coder_agent.protocol.base import AcpModel
from coder_agent.protocol.content import (
    ContentBlock,
    PlanEntry,
    ToolCallContent,
    ToolCallLocation,
    ToolCallStatus,
    ToolKind,
)
from coder_agent.protocol.sessions import ConfigOption, StopReason


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
    state, after all of its own updates and before the parent's turn ends).

    The fields follow the RFD's text; the child's id, name and task are sent a second time under the names of the
    SDK's unstable schema (`sessionId`, `title`, `description`), so a client built on the SDK's types reads the frame
    too. `capabilities.cancel` and `state` cannot be sent both ways (one key, a boolean or a string in the RFD, an
    object in the SDK's draft): they keep the RFD's shape, which that schema reads as "not given"
    (`x-deserialize-default-on-error`)."""

    session_update: Literal["subagent_update"] = "subagent_update"
    subagent_session_id: str
    name: str | None = None
    task: str | None = None
    capabilities: SubagentCapabilities | None = None
    state: SubagentState | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def session_id(self) -> str:
        """The child's id, as the SDK's unstable schema names it."""
        return self.subagent_session_id

    @computed_field  # type: ignore[prop-decorator]
    @property
    def title(self) -> str | None:
        """`name`, as the SDK's unstable schema names it."""
        return self.name

    @computed_field  # type: ignore[prop-decorator]
    @property
    def description(self) -> str | None:
        """`task`, as the SDK's unstable schema names it."""
        return self.task


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


class PlanRemoved(AcpModel):
    """`plan_removed`: a plan shown by `plan_update` is dropped (RFD "Plan Operations"; its id under both names,
    as `MarkdownPlan` has it); only for clients that advertise plans."""

    session_update: Literal["plan_removed"] = "plan_removed"
    id: str
    plan_id: str


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
    | PlanRemoved
    | CursorUpdate
    | WakeUpdate
)
