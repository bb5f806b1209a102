"""`initialize`, answered from plain dicts so the editor gets its answer before pydantic is even imported.

This is the one method on the startup path: the rest of the agent (pydantic models, sessions, the model
library) loads in the background while the editor reads this answer. `InitializeResponse` in
`protocol.schema` models the same message, and a test checks that the two agree.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import platformdirs

from coder_agent import __version__
from coder_agent.errors import InvalidParams
from coder_agent.mcp.support import supported_transports
from coder_agent.protocol import PROTOCOL_VERSION
from coder_agent.sandbox.declaration import declared

AGENT_INFO = {"name": "coder-agent", "title": "Coder Agent", "version": __version__}

ENV_AUTH_METHOD = {
    "id": "env-api-key",
    "name": "API key from the environment",
    "description": (
        "Set CODER_AGENT_API_KEY (or your provider's usual variable, such as OPENAI_API_KEY or ANTHROPIC_API_KEY) "
        "in the agent's environment, and the model with CODER_AGENT_MODEL or a config file; then retry."
    ),
}


LOGIN_AUTH_METHOD = {
    "type": "terminal",
    "id": "login",
    "name": "Log in with an API key",
    "description": (
        "Runs coder-agent login in a terminal: pick a provider and a model, paste your key; it is checked with one "
        "request and kept in the OS keyring (or a file only you can read), never in the project."
    ),
    "args": ["login"],
}
"""The terminal auth method (ACP v1.25), offered to clients that can run one (`clientCapabilities.auth.terminal`):
the client runs the agent's command with `login` added; `AuthRequired` names its id."""
AUTH_CAPABILITIES: dict[str, Any] = {"logout": {}}
"""`logout` removes what `coder-agent login` stored."""

STEERING_METHOD = "_session/steering"
"""The steering extension of Claude's adapter and codex-acp, advertised as they do: `_meta.steering.supported`."""
STEERING_META = {"steering": {"supported": True}}
REWIND_METHODS = ("_session/rewind", "_session/rewind_points")
REWIND_META = {
    "methods": list(REWIND_METHODS),
    "modes": ["files", "conversation", "both"],
    "dryRun": True,
    "editPrompt": True,
    "cursors": True,
}
"""`_session/rewind` as claude-agent-acp's PR #966 names it, with session cursors and edit-and-resubmit (`prompt`)."""
INJECT_METHODS = ("_session/inject", "_session/revoke_inject", "_session/replace_inject")
INJECT_META = {"modes": ["queue", "steer"], "pending": {"replace": True}}
"""Messages for after the running turn or into it, withdrawn or replaced while pending (the v2 draft's shape)."""


def agent_capabilities() -> dict[str, Any]:
    """What this agent implements, and nothing more."""
    transports = supported_transports()
    return {
        "loadSession": True,
        "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
        "mcpCapabilities": {"http": transports["http"], "sse": transports["sse"]},
        "sessionCapabilities": {
            "list": {},
            "delete": {},
            "resume": {},
            "close": {},
            "additionalDirectories": {},
            "fork": {"atMessageId": True},
            "systemPrompt": {"mode": {"override": {}}},
        },
        "auth": AUTH_CAPABILITIES,
        "_meta": {"sandbox": declared(_user_config()), "rewind": REWIND_META, "inject": INJECT_META},
    }


def _user_config() -> Path:
    return platformdirs.user_config_path("coder-agent") / "config.toml"


def initialize(params: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Check `initialize` params; return the result and the client's capabilities (raw JSON)."""
    if not isinstance(params, dict):
        raise InvalidParams("Invalid params: params: Input should be an object", _errors("params", "object"))
    version = params.get("protocolVersion")
    if isinstance(version, bool) or not isinstance(version, int):
        raise InvalidParams(
            "Invalid params: protocolVersion: Input should be an integer", _errors("protocolVersion", "integer")
        )
    capabilities = params.get("clientCapabilities")
    auth = capabilities.get("auth") if isinstance(capabilities, dict) else None
    terminal_auth = isinstance(auth, dict) and auth.get("terminal") is True
    result = {
        "protocolVersion": PROTOCOL_VERSION,
        "agentCapabilities": agent_capabilities(),
        "authMethods": [LOGIN_AUTH_METHOD, ENV_AUTH_METHOD] if terminal_auth else [ENV_AUTH_METHOD],
        "agentInfo": AGENT_INFO,
        "_meta": STEERING_META,
    }
    return result, capabilities if isinstance(capabilities, dict) else {}


def _errors(field: str, kind: str) -> dict[str, Any]:
    return {"errors": [{"field": field, "message": f"Input should be an {kind}"}]}
