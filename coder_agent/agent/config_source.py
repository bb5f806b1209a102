"""Where a session's config comes from, and the model settings (with credentials) a config gives.

`ConfigSource` is the `--config`/`--model` flags, the environment and the user's config file, fixed when the
agent starts; `load(cwd)` adds the project file of a session's folder. A broken project file (it came with the
repository) does not stop the session: it is left out and the problem is reported (so is a model string in it
that names a server, which would carry the user's key there); any other broken source is a `ConfigInvalid` error
naming the file and field. Each problem is told once, by whoever shows it (the error the caller reports, the
session's notice): the log has it at info level only. `model_settings` turns a config into what one model call
needs, or raises `AuthRequired` / `ConfigInvalid` naming exactly what to set (or to log in: `LOGIN_HINT`).

With `logins` (the agent's and `doctor`'s source), what `coder-agent login` stored fills what no other source gives:
the model when none is configured, and the key when no variable holds one and the model is its provider's at the
provider's own endpoint (a stored key never goes to another provider or server). The store is read only then, so a
configured agent never loads the keyring.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from coder_agent.config import (
    CliOverrides,
    Config,
    ConfigError,
    load_config,
    project_config_file,
    resolve_api_key,
)
from coder_agent.credentials import LoginStore
from coder_agent.errors import AuthRequired, ConfigInvalid
from coder_agent.model import providers
from coder_agent.model.base import ModelSettings

log = logging.getLogger(__name__)

IGNORED_MODEL = "a project file may not name a model by a server's address (set it in the user config)"
LOGIN_METHOD = "login"
"""The id of the terminal auth method that runs `coder-agent login` (`acp.handshake`), named by `AuthRequired`."""
LOGIN_HINT = (
    "Or log in: run `coder-agent login` in a terminal (your editor's Log in button runs it: the auth method "
    f'"{LOGIN_METHOD}"), which stores a key in the OS keyring.'
)


@dataclass(frozen=True)
class ConfigSource:
    """The config sources fixed at start; `environ` None means the process environment."""

    cli: CliOverrides = field(default_factory=CliOverrides)
    environ: Mapping[str, str] | None = None
    user_config_path: Path | None = None
    logins: LoginStore | None = None
    """What `coder-agent login` stored (None: not consulted)."""

    def load(self, cwd: Path | None) -> tuple[Config, list[str]]:
        """The config for a session in `cwd` (None: without a project file), and problems to tell the user."""
        config, problems = self._layers(cwd)
        if cwd is not None:
            config, problems = self._without_project_endpoint(config, cwd, problems)
        if self.logins is not None:
            self.logins.know_stored_file()  # redacted even where unused (cheap: no keyring)
        if not config.model and self.logins is not None and (login := self.logins.load()) is not None:
            config = config.model_copy(update={"model": login.model})
        return config, problems

    def _without_project_endpoint(self, config: Config, cwd: Path, problems: list[str]) -> tuple[Config, list[str]]:
        """A project file's model string that names a server (`huggingface/https://…`): litellm would send the
        user's key and the conversation there, so it is ignored, as `api_base` is."""
        fields: dict[str, object] = {}
        project = str(project_config_file(cwd))
        if config.source_of("model") == project and config.model and "://" in config.model:
            fields["model"] = self._layers(None)[0].model
            problems = [*problems, f"{project_config_file(cwd)}: {IGNORED_MODEL}: {config.model!r}"]
        if config.source_of("models") == project:
            fields["models"] = [name for name in config.models if "://" not in name]
        if not fields:
            return config, problems
        log.info("%s: ignoring a model string that names a server", project_config_file(cwd))
        return config.model_copy(update=fields), problems

    def _layers(self, cwd: Path | None) -> tuple[Config, list[str]]:
        try:
            return self._load(cwd), []
        except ConfigError as exc:
            if cwd is None or exc.source != str(project_config_file(cwd)):
                log.info("the config is invalid: %s", exc)
                raise ConfigInvalid(str(exc), {"source": exc.source}) from None
            log.info("the project config is left out: %s", exc)
            problem = str(exc)
        try:
            return self._load(None), [problem]
        except ConfigError as exc:
            log.info("the config is invalid: %s", exc)
            raise ConfigInvalid(str(exc), {"source": exc.source}) from None

    def _stored_key(self, config: Config) -> str | None:
        """The stored login's key, for a model of its provider at the provider's own endpoint."""
        provider = providers.provider_of(config.model or "")
        if self.logins is None or config.api_base is not None or provider in providers.KEYLESS_PROVIDERS:
            return None
        return self.logins.key_for(provider)

    def _load(self, cwd: Path | None) -> Config:
        environ = dict(self.environ) if self.environ is not None else None
        return load_config(cwd, self.cli, environ, self.user_config_path)

    def model_settings(self, config: Config) -> ModelSettings:
        """The model settings for `config`, or AuthRequired naming what to set."""
        if not config.model:
            raise AuthRequired(
                "No model is configured. Set CODER_AGENT_MODEL to a litellm model string "
                "(for example anthropic/claude-sonnet-4-5, openai/gpt-4.1, or openai/<name> with "
                f"CODER_AGENT_API_BASE for a self-hosted server), or `model` in a config file. {LOGIN_HINT}",
                {"authMethodId": LOGIN_METHOD},
            )

        key = resolve_api_key(config, self.environ)
        if key is None:
            environ = self.environ if self.environ is not None else os.environ
            provider_vars = providers.key_variables(config.model)
            has_provider_key = any(environ.get(name) for name in provider_vars)
            if not has_provider_key:
                key = self._stored_key(config)
            if key is None and not has_provider_key and providers.needs_key(config.model, config.api_base):
                names = " or ".join([*provider_vars, "CODER_AGENT_API_KEY"])
                raise AuthRequired(
                    f"No API key for {config.model}: set {names} in the agent's environment. {LOGIN_HINT}",
                    {"authMethodId": LOGIN_METHOD},
                )
            if not has_provider_key and config.api_base is not None:
                key = "no-key"  # self-hosted servers often need none, but the OpenAI client insists on one
        return ModelSettings(
            model=config.model,
            api_key=key,
            api_base=config.api_base,
            temperature=config.temperature,
            max_tokens=config.max_tokens,
            reasoning_effort=config.reasoning_effort,
            context_window=config.context_window,
            request_timeout=config.request_timeout,
            idle_timeout=config.idle_timeout,
            retries=config.retries,
            prompt_caching=config.prompt_caching,
            extra_params=dict(config.extra_params),
        )
