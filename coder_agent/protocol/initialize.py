"""ACP's `initialize` and `authenticate`: the capabilities both sides advertise, the agent's auth methods.

Only what coder-agent sends or reads is modelled; `tests/acp_schema/schema.json` is the truth these follow.
`acp.handshake` answers `initialize` from plain dicts (before pydantic loads); `InitializeResponse` models the same
message, and a test checks that the two agree.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    Field,
    StrictBool,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    field_validator,
)

from coder_agent.protocol import PROTOCOL_VERSION
from coder_agent.protocol.base import AcpModel


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


class AuthCapabilities(_Lenient):
    terminal: StrictBool = False
    """The client can run `terminal` auth methods."""


class ClientCapabilities(_Lenient):
    fs: FileSystemCapabilities = Field(default_factory=FileSystemCapabilities)
    terminal: StrictBool = False
    auth: AuthCapabilities = Field(default_factory=AuthCapabilities)
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


class AgentAuthCapabilities(AcpModel):
    logout: dict[str, Any] | None = None
    """The agent answers `logout` (`{}`)."""


class AgentCapabilities(AcpModel):
    load_session: bool = False
    prompt_capabilities: PromptCapabilities = Field(default_factory=PromptCapabilities)
    mcp_capabilities: McpCapabilities = Field(default_factory=McpCapabilities)
    session_capabilities: SessionCapabilities = Field(default_factory=SessionCapabilities)
    auth: AgentAuthCapabilities | None = None


class AuthMethod(AcpModel):
    """An auth method: `agent` (no `type`: the client calls `authenticate` with its id) or `terminal` (the client runs
    the agent's command with `args` added in a terminal the user works in; exit status 0 means it worked)."""

    type: Literal["terminal"] | None = None
    id: str
    name: str
    description: str | None = None
    args: list[str] | None = None
    env: dict[str, str] | None = None


class InitializeResponse(AcpModel):
    protocol_version: int = PROTOCOL_VERSION
    agent_capabilities: AgentCapabilities
    auth_methods: list[AuthMethod] = Field(default_factory=list)
    agent_info: Implementation


class AuthenticateRequest(AcpModel):
    method_id: str
