"""Where the configuration's values come from: the layered files, environment variables and options, and the key.

* `load_config` layers the sources, later winning field by field (nested sections key by key):
  defaults < user file < project file (`<cwd>/.coder-agent/config.toml`) < the file named by
  `CODER_AGENT_CONFIG` < `CODER_AGENT_*` environment variables < `--config FILE` < `--model`;
  a project file comes with the repository, so it may not set `PROJECT_FILE_IGNORES` (where the key is sent,
  extra call parameters, the default mode, allow rules, the sandbox, the checkers and language servers run after
  every edit, where telemetry goes), its deny rules add to the user's, its hooks are kept apart
  (`Config.project_hooks`: they run once trusted), and it is read as a file tool reads (`nofollow.read_confined`):
  one that leads out of the session's folder through a symlink is left out, with a line in the log;
* `ConfigError`, whose message names the file (or variable, or option) and the field at fault;
* the API-key lookup (`api_key_env_names`, `resolve_api_key`). Keys never live in config files nor in `Config`:
  only the *name* of the variable holding one does, so no key can reach `repr(config)`, a log or an error.

It never writes to stdout (stdout carries the ACP stream).
"""

import difflib
import logging
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs
from pydantic import BaseModel, ValidationError

from coder_agent import nofollow
from coder_agent.config.hooks import HooksConfig, ProjectHooks
from coder_agent.config.schema import (
    API_KEY_ENV_VAR,
    APP_NAME,
    CONFIG_ENV_VAR,
    CONFIG_FILE_NAME,
    ENV_VARS,
    PROJECT_CONFIG_DIR,
    Config,
)
from coder_agent.errors import field_problems

_log = logging.getLogger(__name__)


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
PROJECT_FILE_BYTES = 1_000_000
"""A project's config file bigger than this is not read."""


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
    project_hooks: ProjectHooks | None = None
    if cwd is not None:
        project_path = project_config_file(cwd)
        data = _load_file(project_path, required_by=None, within=cwd)
        if data is not None:
            hooks = HooksConfig.model_validate(data.pop("hooks", {}))  # kept apart: they run once trusted
            project_hooks = None if hooks.empty else ProjectHooks(file=project_path, hooks=hooks)
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
    config._project_hooks = project_hooks
    return config


PROJECT_FILE_IGNORES: tuple[tuple[str, ...], ...] = (
    ("checkers",),
    ("api_base",),
    ("api_key_env",),
    ("extra_params",),
    ("default_mode",),
    ("permissions", "allow"),
    ("sandbox",),
    ("lsp",),
    ("telemetry",),
    ("wake",),
)
"""Settings a project file may not make: a cloned repository must not be able to send the user's key to its own
server, grant itself permissions, widen the sandbox's walls, name a command the agent runs unasked after every
edit, send the session's traces (with prompts, if it asked) to a collector of its choosing, or have the agent spend
on turns nobody asked for (`[wake]`: its own turns when jobs end, and what they may cost). Set these in the
user file, the environment, or with --config."""


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


def _load_file(path: Path, *, required_by: str | None, within: Path | None = None) -> dict[str, Any] | None:
    """Read and validate one config file. None if it is optional (`required_by` is None) and missing, or a project
    file (`within`: the folder it must lie in) that leads out of it."""
    try:
        if within is not None:
            raw = tomllib.loads(nofollow.read_confined(path, (within,), limit=PROJECT_FILE_BYTES).decode("utf-8"))
        else:
            with path.open("rb") as f:
                raw = tomllib.load(f)
    except nofollow.Refused as exc:
        _log.warning("%s: not read: %s", path, exc)
        return None
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
