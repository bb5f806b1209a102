"""Configuration: the `Config` schema, where its values come from, and where the API key is looked up.

This module owns:

* `Config` (with its `permissions` section): every user-tunable setting, its default and its validation;
* `load_config`, which layers the sources, later winning field by field (nested sections key by key):
  defaults < user file < project file (`<cwd>/.coder-agent/config.toml`) < the file named by
  `CODER_AGENT_CONFIG` < `CODER_AGENT_*` environment variables < `--config FILE` < `--model`;
  a project file comes with the repository, so it may not set `PROJECT_FILE_IGNORES` (where the key is sent,
  extra call parameters, the default mode, allow rules, the sandbox, the checkers run after every edit), and its
  deny rules add to the user's;
* `ConfigError`, whose message names the file (or variable, or option) and the field at fault;
* the API-key lookup (`api_key_env_names`, `resolve_api_key`). Keys never live in config files nor in `Config`:
  only the *name* of the variable holding one does, so no key can reach `repr(config)`, a log or an error.

It sits on the startup path, so it imports only the standard library, pydantic and platformdirs, and it never
writes to stdout (stdout carries the ACP stream).
"""

import difflib
import logging
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from coder_agent.errors import field_problems
from coder_agent.permissions.modes import ModeName
from coder_agent.sandbox.settings import SandboxConfig

__all__ = [
    "API_KEY_ENV_VAR",
    "CONFIG_ENV_VAR",
    "ENV_VARS",
    "CliOverrides",
    "Config",
    "ConfigError",
    "EditTool",
    "ModeName",
    "PermissionsConfig",
    "ReasoningEffort",
    "SandboxConfig",
    "SubagentsConfig",
    "api_key_env_names",
    "load_config",
    "project_config_file",
    "resolve_api_key",
    "user_config_file",
]

_log = logging.getLogger(__name__)

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

    subagents: SubagentsConfig = Field(default_factory=SubagentsConfig)
    """Sub-agents (`task`): how many at once, their step and time limits, their models."""

    extra_params: dict[str, Any] = Field(default_factory=dict)
    """Advanced: extra keyword arguments passed through to the model call (e.g. provider-specific options).
    Keys the agent sets itself or that have their own field are rejected."""

    _sources: dict[str, str] = PrivateAttr(default_factory=dict)

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


@dataclass(frozen=True)
class CliOverrides:
    """The command-line options that feed the configuration (the highest precedence)."""

    config_file: Path | None = None
    """`--config FILE`: a config file layered above everything but `--model`. A missing file is an error."""

    model: str | None = None
    """`--model MODEL`: the model, overriding every other source."""


class ConfigError(Exception):
    """Invalid configuration. The message names the file, environment variable or option, and the field."""

    def __init__(self, message: str, source: str | None = None) -> None:
        super().__init__(message)
        self.source = source
        """The file path, "env VAR" or command-line option at fault, if known."""


_NO_CLI = CliOverrides()


def user_config_file() -> Path:
    """The user config file: `config.toml` in the platformdirs user config directory for coder-agent."""
    return platformdirs.user_config_path(APP_NAME) / CONFIG_FILE_NAME


def project_config_file(cwd: Path) -> Path:
    """The project config file for a session whose working directory is `cwd`."""
    return cwd / PROJECT_CONFIG_DIR / CONFIG_FILE_NAME


def load_config(
    cwd: Path | None,
    cli: CliOverrides = _NO_CLI,
    environ: Mapping[str, str] | None = None,
    user_config_path: Path | None = None,
) -> Config:
    """Load the configuration for a session working in `cwd` (None: no project file).

    Layers, later winning field by field, nested sections key by key (lists are replaced, not joined):
    defaults, the user file (`user_config_path`, by default `user_config_file()`), the project file
    `<cwd>/.coder-agent/config.toml`, the file named by CODER_AGENT_CONFIG, the `ENV_VARS` environment variables,
    `cli.config_file`, then `cli.model`. Missing user and project files are skipped; a missing file named by
    CODER_AGENT_CONFIG or `--config` is an error. `environ` defaults to `os.environ`.

    Raises ConfigError naming the file, variable or option and the field.
    """
    env: Mapping[str, str] = os.environ if environ is None else environ
    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}

    def apply(data: dict[str, Any], label: str) -> None:
        _merge(merged, data)
        _record_sources(sources, data, label)

    user_path = user_config_file() if user_config_path is None else user_config_path
    data = _load_file(user_path, required_by=None)
    if data is not None:
        apply(data, str(user_path))
    if cwd is not None:
        project_path = project_config_file(cwd)
        data = _load_file(project_path, required_by=None)
        if data is not None:
            apply(_joining_deny_rules(_without_trusted_fields(data, project_path), merged), str(project_path))

    env_file = env.get(CONFIG_ENV_VAR, "").strip()
    if env_file:
        path = Path(env_file).expanduser()
        apply(_load_file(path, required_by=CONFIG_ENV_VAR) or {}, str(path))

    env_errors: list[ConfigError] = []
    for var, field in ENV_VARS.items():
        value = env.get(var, "").strip()
        if value:
            label = f"env {var}"
            try:
                data = _validate({field: value}, strict=False, where=f"environment variable {var}", source=label)
            except ConfigError as exc:
                env_errors.append(exc)
            else:
                apply(data, label)
    if env_errors:
        raise ConfigError("; ".join(str(e) for e in env_errors), source=env_errors[0].source)

    if cli.config_file is not None:
        path = cli.config_file.expanduser()
        apply(_load_file(path, required_by="--config") or {}, str(path))

    if cli.model is not None:
        apply(_validate({"model": cli.model}, strict=False, where="--model", source="--model"), "--model")

    config = _validate_final(merged)
    config._sources = sources
    return config


PROJECT_FILE_IGNORES: tuple[tuple[str, ...], ...] = (
    ("checkers",),
    ("api_base",),
    ("api_key_env",),
    ("extra_params",),
    ("default_mode",),
    ("permissions", "allow"),
    ("sandbox",),
)
"""Settings a project file may not make: a cloned repository must not be able to send the user's key to its own
server, grant itself permissions, widen the sandbox's walls, or name a command the agent runs unasked after every
edit. Set these in the user file, the environment, or with --config."""


def _without_trusted_fields(data: dict[str, Any], path: Path) -> dict[str, Any]:
    kept: dict[str, Any] = _copy(data)
    for keys in PROJECT_FILE_IGNORES:
        parent: dict[str, Any] = kept
        for key in keys[:-1]:
            child = parent.get(key)
            parent = child if isinstance(child, dict) else {}
        if keys[-1] in parent:
            del parent[keys[-1]]
            _log.warning("%s: ignoring %r: a project file may not set it (use the user config)", path, ".".join(keys))
    return kept


def _joining_deny_rules(data: dict[str, Any], merged: Mapping[str, Any]) -> dict[str, Any]:
    """A project file's deny rules come on top of the user's: lists replace each other between layers, and a
    project's `deny = []` must not wipe the rules its user set."""
    project = data.get("permissions", {}).get("deny")
    if project is None:
        return data
    user = merged.get("permissions", {}).get("deny", [])
    data["permissions"]["deny"] = list(dict.fromkeys([*user, *project]))
    return data


def api_key_env_names(config: Config) -> list[str]:
    """The environment variables to try for the API key, in order: CODER_AGENT_API_KEY, then `config.api_key_env`.

    The model adapter then tries the provider's usual variable (e.g. OPENAI_API_KEY) itself.
    """
    names = [API_KEY_ENV_VAR]
    if config.api_key_env is not None and config.api_key_env not in names:
        names.append(config.api_key_env)
    return names


def resolve_api_key(config: Config, environ: Mapping[str, str] | None = None) -> str | None:
    """The first non-empty value (whitespace stripped) among `api_key_env_names(config)`, or None."""
    env: Mapping[str, str] = os.environ if environ is None else environ
    for name in api_key_env_names(config):
        value = env.get(name, "").strip()
        if value:
            return value
    return None


# --- internals -------------------------------------------------------------------------------------------------


def _load_file(path: Path, *, required_by: str | None) -> dict[str, Any] | None:
    """Read and validate one config file. None if it is optional (`required_by` is None) and missing."""
    try:
        with path.open("rb") as f:
            raw = tomllib.load(f)
    except (FileNotFoundError, NotADirectoryError):
        if required_by is None:
            return None
        raise ConfigError(f"Config file not found: {path} (named by {required_by})", source=str(path)) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"Invalid TOML in {path}: {exc}", source=str(path)) from None
    except UnicodeDecodeError:
        raise ConfigError(f"Invalid TOML in {path}: not valid UTF-8", source=str(path)) from None
    except OSError as exc:
        raise ConfigError(f"Cannot read config file {path}: {exc.strerror or exc}", source=str(path)) from None
    _log.debug("loaded config file %s", path)
    return _validate(raw, strict=True, where=str(path), source=str(path))


def _validate(data: dict[str, Any], *, strict: bool, where: str, source: str) -> dict[str, Any]:
    """Validate one layer on its own; return just the fields it sets, as validated values.

    Files are validated strictly (a string is not a number); environment variables and options laxly, since
    they are strings. `where` is a file path, or "environment variable X" / "--model" for a one-field layer.
    The error is raised outside the `except` so that the ValidationError, which quotes input values (perhaps
    a key pasted in by mistake), is not chained into tracebacks.
    """
    try:
        layer = Config.model_validate(data, strict=strict)
    except ValidationError as exc:
        problems = _describe_errors(exc)
    else:
        return layer.model_dump(exclude_unset=True)
    if source.startswith("env ") or source == "--model":
        raise ConfigError(f"Invalid {where}: {'; '.join(message for _, message in problems)}", source=source)
    raise ConfigError(f"Invalid config in {where}: {'; '.join(text for text, _ in problems)}", source=source)


def _describe_errors(exc: ValidationError) -> list[tuple[str, str]]:
    """For each error: ("field 'x': message" or "unknown field 'x'", bare message). Input values are left out."""
    out: list[tuple[str, str]] = []
    for problem in field_problems(exc):
        if problem.kind == "extra_forbidden":
            out.append((f"unknown field '{problem.field}'{_hint(problem.loc)}", "unknown field"))
        else:
            out.append((f"field '{problem.field}': {problem.message}", problem.message))
    return out


def _hint(loc: tuple[int | str, ...]) -> str:
    """A hint for an unknown field: the field probably meant, or where API keys go; else ""."""
    name = str(loc[-1])
    if name in {"api_key", "key", "token"}:
        return " (API keys never live in config files: set api_key_env to the NAME of the variable holding it)"
    model: type[BaseModel] = Config
    for part in loc[:-1]:
        info = model.model_fields.get(str(part))
        annotation = info.annotation if info is not None else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return ""
        model = annotation
    close = difflib.get_close_matches(name, list(model.model_fields), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _validate_final(merged: dict[str, Any]) -> Config:
    """Validate the merged layers (each already valid on its own, so this is not expected to fail)."""
    try:
        return Config.model_validate(merged)
    except ValidationError as exc:
        problems = _describe_errors(exc)
    raise ConfigError(f"Invalid combined configuration: {'; '.join(text for text, _ in problems)}")


def _merge(into: dict[str, Any], data: Mapping[str, Any]) -> None:
    """Merge `data` into `into`: nested tables key by key, anything else (lists included) replaced."""
    for key, value in data.items():
        current = into.get(key)
        if isinstance(value, Mapping) and isinstance(current, dict):
            _merge(current, value)
        else:
            into[key] = _copy(value)


def _copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def _record_sources(sources: dict[str, str], data: Mapping[str, Any], label: str) -> None:
    for key, value in data.items():
        sources[key] = label
        if isinstance(value, Mapping):
            for sub in value:
                sources[f"{key}.{sub}"] = label
