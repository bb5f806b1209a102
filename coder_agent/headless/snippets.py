"""How an editor starts this install of coder-agent, and the settings snippets that say so.

`this_install()` tells a checkout (`uv run --directory <checkout>`, which starts offline), a `uvx` cache
environment (`uvx coder-agent`), an installed command (its absolute path: editors do not always see the
shell's PATH) and anything else (`python -P -m coder_agent`: `-P` keeps the folder it is started in off `sys.path`, so
an editor starting it in a cloned repository never imports that repository's `coder_agent` or any module it
shadows). Standard library only: `--help` prints these.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

SERVER_NAME = "Coder Agent"
SELF_HOSTED_ENV = {"CODER_AGENT_MODEL": "openai/<model-name>", "CODER_AGENT_API_BASE": "http://localhost:8000/v1"}
HOSTED_ENV = {"CODER_AGENT_MODEL": "anthropic/claude-sonnet-4-5", "ANTHROPIC_API_KEY": "sk-..."}


@dataclass(frozen=True)
class Launch:
    """The command and arguments that start this install as an ACP agent, and what kind of install it is."""

    command: str
    args: tuple[str, ...]
    kind: str
    """"checkout", "uvx", "installed" or "module"."""


def this_install(package_dir: Path | None = None, prefix: Path | None = None) -> Launch:
    """How this copy of the package is started (`package_dir`: the `coder_agent` folder; `prefix`: sys.prefix)."""
    package = (package_dir or Path(__file__).resolve().parents[1]).resolve()
    root = package.parent
    if "site-packages" not in package.parts and (root / "pyproject.toml").is_file() and (root / "uv.lock").is_file():
        return Launch("uv", ("run", "--directory", str(root), "coder-agent"), "checkout")
    environment = prefix or Path(sys.prefix)
    if any(re.fullmatch(r"archive-v\d+", part) for part in environment.parts):
        return Launch("uvx", ("coder-agent",), "uvx")
    script = environment / "bin" / "coder-agent"
    if script.is_file():
        return Launch(str(script), (), "installed")
    return Launch(sys.executable, ("-P", "-m", "coder_agent"), "module")


def zed(launch: Launch, env: Mapping[str, str]) -> str:
    """The `agent_servers` entry for Zed's settings.json."""
    return _settings({"type": "custom"}, launch, env)


def jetbrains(launch: Launch, env: Mapping[str, str]) -> str:
    """The `agent_servers` entry for a JetBrains IDE's ~/.jetbrains/acp.json."""
    return _settings({}, launch, env)


def _settings(first: dict[str, str], launch: Launch, env: Mapping[str, str]) -> str:
    entry = {**first, "command": launch.command, "args": _ARGS, "env": dict(env)}
    text = json.dumps({"agent_servers": {SERVER_NAME: entry}}, indent=2)
    return text.replace(json.dumps(_ARGS), json.dumps(list(launch.args)))  # the arguments on one line


_ARGS = "<args>"


def indented(text: str, prefix: str = "  ") -> str:
    return "\n".join(prefix + line for line in text.splitlines())
