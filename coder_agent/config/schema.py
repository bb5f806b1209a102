"""The `Config` schema: every user-tunable setting, its default and its validation, with its sections.

Sections that belong to one subsystem keep their own model beside it (`sandbox.settings.SandboxConfig`); the rest
are here. Loading the layers is `config.loading`'s job. It sits on the startup path, so it imports only the standard
library and pydantic.
"""

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator

from coder_agent.config.hooks import HooksConfig, ProjectHooks
from coder_agent.config.telemetry import TelemetryConfig
from coder_agent.config.wake import WakeConfig
from coder_agent.lsp.settings import LspConfig
from coder_agent.permissions.modes import ModeName
from coder_agent.sandbox.settings import SandboxConfig

APP_NAME = "coder-agent"
"""The application name used for the platformdirs user config directory."""

CONFIG_FILE_NAME = "config.toml"
PROJECT_CONFIG_DIR = ".coder-agent"

CONFIG_ENV_VAR = "CODER_AGENT_CONFIG"
"""Names a config file layered above the user and project files (a missing file is an error)."""

API_KEY_ENV_VAR = "CODER_AGENT_API_KEY"
"""The first environment variable tried for the model's API key."""

ENV_VARS: Mapping[str, str] = MappingProxyType(
    {
        "CODER_AGENT_MODEL": "model",
        "CODER_AGENT_API_BASE": "api_base",
        "CODER_AGENT_MAX_TOKENS": "max_tokens",
        "CODER_AGENT_REASONING_EFFORT": "reasoning_effort",
        "CODER_AGENT_CONTEXT_WINDOW": "context_window",
    }
)
"""Environment variables that set a `Config` field, mapped to the field. Empty values count as unset."""

ReasoningEffort = Literal["minimal", "low", "medium", "high"]
EditTool = Literal["auto", "apply_patch", "edit_file"]
CHECK_LANGUAGES = frozenset(
    {"bash", "c", "cpp", "csharp", "css", "go", "html", "java", "javascript", "json", "php", "python", "ruby"}
    | {"rust", "toml", "typescript", "yaml"}
)
"""The languages the check after an edit knows (`tools.editing.syntax.LANGUAGES`), the keys of `checkers`."""

# extra_params keys that would collide with what the agent passes itself or with a first-class field.
_RESERVED_EXTRA_PARAMS: Mapping[str, str] = MappingProxyType(
    {
        "api_key": "keys never live in config files, set api_key_env to the NAME of the variable holding it",
        "model": "use the 'model' field",
        "api_base": "use the 'api_base' field",
        "base_url": "use the 'api_base' field",
        "temperature": "use the 'temperature' field",
        "max_tokens": "use the 'max_tokens' field",
        "reasoning_effort": "use the 'reasoning_effort' field",
        "timeout": "use the 'request_timeout' field",
        "num_retries": "use the 'retries' field",
        "messages": "the agent sets it",
        "tools": "the agent sets it",
        "stream": "the agent sets it",
    }
)

_ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"


class PermissionsConfig(BaseModel):
    """Standing permission rules, checked before asking the user. Deny rules win over allow rules."""

    model_config = ConfigDict(extra="forbid")

    allow: list[str] = Field(default_factory=list)
    """Rules for tool calls that run without asking, e.g. "edit:src/**" or "execute:git status"."""

    deny: list[str] = Field(default_factory=list)
    """Rules for tool calls that are always refused, in the same format as `allow`."""


class SubagentsConfig(BaseModel):
    """Sub-agents: the `task` tool's children, each with its own context."""

    model_config = ConfigDict(extra="forbid")

    parallel: int = Field(default=4, ge=1, le=16)
    """How many sub-agents run at once (the `task` calls of one reply run side by side, this many at a time)."""

    max_steps: int = Field(default=40, ge=1)
    """The most model requests one sub-agent may make."""

    timeout: float = Field(default=600.0, gt=0)
    """The most seconds one sub-agent may run; it is stopped after that, and its parent told what it had."""

    explore_model: str | None = Field(default=None, min_length=1)
    """The model of `explore` sub-agents (read-only searches: a cheaper, faster one does); None: the session's."""

    general_model: str | None = Field(default=None, min_length=1)
    """The model of `general` sub-agents; None: the session's."""

    isolate: bool = False
    """`general` sub-agents work in a place of their own (a git worktree on a scratch branch, or a copy of a folder
    that is not a repository) unless their task says otherwise; their changes come back as one diff to approve."""

    max_isolated: int = Field(default=3, ge=1, le=16)
    """How many isolated sub-agents run at once (each has a worktree or a copy on disk); the others wait."""

    isolation_max_mb: int = Field(default=2048, ge=1)
    """The most a worktree's checked-out files, or a copied folder, may weigh (MiB); a task over it fails and says
    so. A copy is made twice (the child's and an untouched one to compare with), cloned where the file system can."""


class Config(BaseModel):
    """The agent's settings. Unknown fields are errors, so typos in config files are caught."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(default=None, min_length=1)
    """The litellm model string, e.g. "anthropic/claude-sonnet-4-5", "openai/gpt-4.1", "ollama_chat/qwen2.5-coder",
    or "openai/<name>" with `api_base` for any OpenAI-compatible server. None means no model is configured."""

    api_base: str | None = Field(default=None, min_length=1)
    """The base URL of the model's API, for local or OpenAI-compatible servers. None uses the provider's default."""

    api_key_env: str | None = Field(default=None, pattern=_ENV_NAME_PATTERN)
    """The NAME of an environment variable holding the API key, tried after CODER_AGENT_API_KEY. Never the key."""

    temperature: float | None = Field(default=None, ge=0, le=2)
    """Sampling temperature, 0 to 2. None uses the model's default."""

    max_tokens: int | None = Field(default=None, gt=0)
    """The most tokens the model may generate per response. None uses the model's default."""

    reasoning_effort: ReasoningEffort | None = None
    """How hard a reasoning model thinks: "minimal", "low", "medium" or "high". None uses the model's default."""

    context_window: int | None = Field(default=None, gt=0)
    """Overrides the model's context window, in tokens. None uses what litellm knows about the model."""

    max_turn_requests: int = Field(default=100, ge=1)
    """The most model requests one prompt may make before the turn ends."""

    request_timeout: float = Field(default=600.0, gt=0)
    """The total deadline for one model call, in seconds, streaming included."""

    idle_timeout: float = Field(default=120.0, gt=0)
    """The most seconds a streaming model call may go without a chunk."""

    retries: int = Field(default=5, ge=0)
    """How many times a transient model error (rate limit, overload, connection) is retried."""

    compact_threshold: float = Field(default=0.8, gt=0, le=1)
    """The fraction of the context window at which the conversation history is compacted."""

    prompt_caching: bool = True
    """Mark the stable start of each request (tools, system prompt, history) as cacheable for providers that cache
    only where a request says so (Claude on Anthropic, Bedrock, Vertex). Others cache a repeated prefix by
    themselves. Cached input is billed at a fraction of the input price."""

    models: list[str] = Field(default_factory=list)
    """Models offered in the editor's model picker, besides `model`."""

    syntax_check: bool = True
    """After every edit, parse the changed file (tree-sitter) and report the syntax errors the edit introduced."""

    checkers: dict[str, str] = Field(default_factory=dict)
    """A fast checker to run after every edit, per language (`CHECK_LANGUAGES`): a command line where `{file}` is the
    changed file, e.g. python = "ruff check --quiet --select E9,F63,F7,F82 {file}". Its output goes to the model.
    It runs as the agent's own process (not in the editor's terminal), without asking; a project file may not set
    it."""

    checker_timeout: float = Field(default=10.0, gt=0, le=300)
    """The most seconds a checker may run; it is killed after that."""

    edit_tool: EditTool = "auto"
    """How the model edits files: "apply_patch" (the patch format OpenAI's GPT-5, GPT-4.1, o3/o4 and codex models
    were trained on), "edit_file" (exact string replacements), or "auto": apply_patch for those families, edit_file
    for the others."""

    default_mode: ModeName = "default"
    """The session mode a new session starts in: "read-only", "default", "accept-edits", "auto" (where commands can
    be sandboxed; "default" elsewhere) or "full-auto"."""

    permissions: PermissionsConfig = Field(default_factory=PermissionsConfig)
    """Standing allow/deny rules for tool calls."""

    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    """How commands are contained: the walls around them, their network, their limits."""

    lsp: LspConfig = Field(default_factory=LspConfig)
    """Language servers that check each edit (`[lsp]`): which, and how long to wait for them."""
    wake: WakeConfig = Field(default_factory=WakeConfig)
    """What a session does when background work ends while no turn runs (`auto_continue` and its bounds)."""

    subagents: SubagentsConfig = Field(default_factory=SubagentsConfig)
    """Sub-agents (`task`): how many at once, their step and time limits, their models."""

    hooks: HooksConfig = Field(default_factory=HooksConfig)
    """Commands run on a session's events (`config.hooks`); a project file's are kept apart (`project_hooks`)."""

    telemetry: TelemetryConfig = Field(default_factory=TelemetryConfig)
    """OpenTelemetry traces and metrics, opt-in; a project file may not set it."""

    extra_params: dict[str, Any] = Field(default_factory=dict)
    """Advanced: extra keyword arguments passed through to the model call (e.g. provider-specific options).
    Keys the agent sets itself or that have their own field are rejected."""

    _sources: dict[str, str] = PrivateAttr(default_factory=dict)
    _project_hooks: ProjectHooks | None = PrivateAttr(default=None)

    @property
    def project_hooks(self) -> ProjectHooks | None:
        """The hooks of the session folder's project file, which run only once the user trusts them."""
        return self._project_hooks

    @field_validator("models")
    @classmethod
    def _models_not_blank(cls, value: list[str]) -> list[str]:
        if any(not name.strip() for name in value):
            raise ValueError("model names must not be empty")
        return value

    @field_validator("checkers")
    @classmethod
    def _known_languages(cls, value: dict[str, str]) -> dict[str, str]:
        for language, command in value.items():
            if language not in CHECK_LANGUAGES:
                known = ", ".join(sorted(CHECK_LANGUAGES))
                raise ValueError(f"no language named {language!r} (the languages are {known})")
            if not command.strip():
                raise ValueError(f"the checker of {language} is empty")
        return value

    @field_validator("extra_params")
    @classmethod
    def _no_reserved_extra_params(cls, value: dict[str, Any]) -> dict[str, Any]:
        for key in value:
            if key in _RESERVED_EXTRA_PARAMS:
                raise ValueError(f"'{key}' is not allowed here: {_RESERVED_EXTRA_PARAMS[key]}")
        return value

    def __eq__(self, other: object) -> bool:
        """Equal when the settings are equal, wherever they came from (`source_of` is not compared)."""
        if not isinstance(other, Config):
            return NotImplemented
        return type(self) is type(other) and self.__dict__ == other.__dict__

    def source_of(self, field: str) -> str | None:
        """Where `field` (e.g. "model" or "permissions.allow") was last set: a file path, "env VAR", "--model";
        None if it has its default. A section name gives the source that last set any of its keys."""
        return self._sources.get(field)
