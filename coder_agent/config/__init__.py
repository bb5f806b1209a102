"""Configuration: the `Config` schema (`schema`) and where its values come from (`loading`).

Import from here: `from coder_agent.config import Config, load_config`. The package sits on the startup path, so
it imports only the standard library, pydantic and platformdirs, and it never writes to stdout.
"""

from coder_agent.config.loading import (
    PROJECT_FILE_IGNORES,
    CliOverrides,
    ConfigError,
    api_key_env_names,
    load_config,
    project_config_file,
    resolve_api_key,
    user_config_file,
)
from coder_agent.config.schema import (
    API_KEY_ENV_VAR,
    APP_NAME,
    CHECK_LANGUAGES,
    CONFIG_ENV_VAR,
    CONFIG_FILE_NAME,
    ENV_VARS,
    PROJECT_CONFIG_DIR,
    Config,
    EditTool,
    PermissionsConfig,
    ReasoningEffort,
    SubagentsConfig,
)
from coder_agent.permissions.modes import ModeName
from coder_agent.sandbox.settings import SandboxConfig

__all__ = [
    "API_KEY_ENV_VAR",
    "APP_NAME",
    "CHECK_LANGUAGES",
    "CONFIG_ENV_VAR",
    "CONFIG_FILE_NAME",
    "ENV_VARS",
    "PROJECT_CONFIG_DIR",
    "PROJECT_FILE_IGNORES",
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
