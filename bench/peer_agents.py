"""The agents that bench/peers.py compares, and how each is installed, configured and started.

This module owns, for coder-agent and for the three Python peers (Mistral Vibe, Kimi CLI, fast-agent):

  AGENTS          one ``Agent`` each: its PyPI package and pinned version (none for ours), the command that starts
                  it as an ACP agent over stdio, and ``configure``, which writes what it needs into a temp HOME so it
                  talks to an OpenAI-compatible base URL with a model name and a dummy key, with no network, no
                  telemetry and no interactive setup (found by reading each package's source, see below).
  install         ``uv venv`` + ``uv pip install --compile-bytecode <package>==<version>`` into a folder of its own;
                  when the pin does not install, the nearest older release (``<=``), said so; a reason when nothing
                  installs. uv's cache makes a second install quick.
  find_python     an interpreter the peers accept (they require Python >= 3.12): ``--python``, then python3.1x on
                  PATH, then pyenv's versions, then ``uv python find``.
  agent_env       the environment an agent gets: this one without model keys, base URLs or agent settings, without
                  PYTHONDONTWRITEBYTECODE (so a warm-up run leaves bytecode behind, as a user's first start does),
                  with HOME and the XDG folders in the temp HOME.

How each peer is pointed at the fake server (read from the pinned packages):

  Mistral Vibe  ``vibe-acp``; ``$VIBE_HOME/config.toml`` with a provider (``api_base``, ``api_style = "openai"``,
                ``backend = "generic"``, ``api_key_env_var``) and a model whose alias is ``active_model``; telemetry,
                update checks and auto-update off.
  Kimi CLI      ``kimi acp``; ``$KIMI_SHARE_DIR/config.toml`` with an ``openai_legacy`` provider and a model as
                ``default_model``, telemetry off. ``kimi acp`` answers ``session/new`` with "authentication
                required" unless a Kimi login token file exists, even when the model is not Kimi's: a dummy token
                file (``credentials/kimi-code.json``, no expiry, no refresh token) stands in for ``kimi login``.
  fast-agent    ``fast-agent-acp --config-path <file> --model generic.<name>``; the file sets ``generic.base_url``
                and ``generic.api_key``. Its only file tools are the client's (``read_text_file``,
                ``write_text_file``, offered when the client advertises ``fs``), and it asks permission to use them.
  coder-agent   ``coder-agent`` (or ``--agent CMD``) with ``CODER_AGENT_MODEL=openai/<name>``,
                ``CODER_AGENT_API_BASE`` and ``CODER_AGENT_API_KEY``.

Stdlib only.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

API_KEY = "sk-bench-dummy"
INSTALL_TIMEOUT = 900.0
MIN_PEER_PYTHON = (3, 12)
MAX_PEER_PYTHON = (3, 14)  # fast-agent 0.10.48 accepts < 3.16; the newest found up to this one is taken
DROPPED_ENV = re.compile(
    r"^(CODER_AGENT_|OPENAI_|ANTHROPIC_|MISTRAL_|KIMI_|MOONSHOT_|VIBE_|FAST_AGENT_|GENERIC_|LITELLM_|HF_)"
    r"|_API_KEY$|_BASE_URL$|_API_BASE$|^PYTHONDONTWRITEBYTECODE$|^VIRTUAL_ENV$|^PYTHONPATH$"
)

Configure = Callable[[Path, str, str], dict[str, str]]  # (temp HOME, base URL, model name) -> extra environment


@dataclass(frozen=True)
class Agent:
    """One agent in the comparison; ``package`` is None for coder-agent (already installed here)."""

    key: str
    title: str
    package: str | None
    version: str | None
    script: str  # the console script in the venv's bin/
    args: tuple[str, ...]
    configure: Configure


def _vibe(home: Path, base_url: str, model: str) -> dict[str, str]:
    vibe_home = home / ".vibe"
    vibe_home.mkdir(parents=True, exist_ok=True)
    (vibe_home / "config.toml").write_text(
        f'active_model = "bench"\n'
        "enable_telemetry = false\nenable_update_checks = false\nenable_auto_update = false\n"
        f'[[providers]]\nname = "bench"\napi_base = "{base_url}"\napi_key_env_var = "BENCH_API_KEY"\n'
        'api_style = "openai"\nbackend = "generic"\n'
        f'[[models]]\nname = "{model}"\nprovider = "bench"\nalias = "bench"\n'
    )
    return {"VIBE_HOME": str(vibe_home), "BENCH_API_KEY": API_KEY}


def _kimi(home: Path, base_url: str, model: str) -> dict[str, str]:
    share = home / ".kimi"
    (share / "credentials").mkdir(parents=True, exist_ok=True)
    (share / "config.toml").write_text(
        'default_model = "bench"\ntelemetry = false\n'
        f'[providers.bench]\ntype = "openai_legacy"\nbase_url = "{base_url}"\napi_key = "{API_KEY}"\n'
        f'[models.bench]\nprovider = "bench"\nmodel = "{model}"\nmax_context_size = 128000\n'
    )
    token = {"access_token": "bench-dummy", "refresh_token": "", "token_type": "Bearer"}
    (share / "credentials" / "kimi-code.json").write_text(json.dumps(token))
    return {"KIMI_SHARE_DIR": str(share)}


def _fast_agent(home: Path, base_url: str, model: str) -> dict[str, str]:
    (home / "fastagent.config.yaml").write_text(
        f"default_model: generic.{model}\n"
        f"generic:\n  api_key: {API_KEY}\n  base_url: {base_url}\n"
        "logger:\n  progress_display: false\n  show_chat: false\n  show_tools: false\n"
    )
    return {}


def _coder(home: Path, base_url: str, model: str) -> dict[str, str]:
    return {"CODER_AGENT_MODEL": f"openai/{model}", "CODER_AGENT_API_BASE": base_url, "CODER_AGENT_API_KEY": API_KEY}


AGENTS = {
    agent.key: agent
    for agent in (
        Agent("coder", "coder-agent", None, None, "coder-agent", (), _coder),
        Agent("vibe", "Mistral Vibe", "mistral-vibe", "3.0.2", "vibe-acp", (), _vibe),
        Agent("kimi", "Kimi CLI", "kimi-cli", "1.51.0", "kimi", ("acp",), _kimi),
        Agent(
            "fast-agent",
            "fast-agent",
            "fast-agent-mcp",
            "0.10.48",
            "fast-agent-acp",
            ("--config-path", "{home}/fastagent.config.yaml", "--model", "generic.{model}"),
            _fast_agent,
        ),
    )
}


def command(agent: Agent, bin_dir: Path, home: Path, model: str) -> list[str]:
    """The command line that starts `agent` from `bin_dir`, its placeholders filled."""
    return [str(bin_dir / agent.script), *(a.format(home=home, model=model) for a in agent.args)]


def agent_env(home: Path, extra: dict[str, str]) -> dict[str, str]:
    """This environment without model settings or bytecode suppression; HOME and XDG folders under `home`."""
    env = {k: v for k, v in os.environ.items() if not DROPPED_ENV.search(k)}
    env["HOME"] = str(home)
    for name in ("CONFIG", "DATA", "STATE", "CACHE"):
        path = home / f".xdg-{name.lower()}"
        path.mkdir(parents=True, exist_ok=True)
        env[f"XDG_{name}_HOME"] = str(path)
    return env | extra


# -- Python and installs ----------------------------------------------------------------------------------------------


def _version(python: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run(
            [python, "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    parts = out.stdout.split()
    return (int(parts[0]), int(parts[1])) if out.returncode == 0 and len(parts) == 2 else None


def find_python(given: str | None) -> tuple[str | None, str]:
    """An interpreter for the peers and where it was found, or None and why there is none."""
    if given:
        found = _version(given)
        return (given, f"--python ({found})") if found and found >= MIN_PEER_PYTHON else (None, f"{given}: too old")
    candidates: list[str] = []
    for minor in range(MAX_PEER_PYTHON[1], MIN_PEER_PYTHON[1] - 1, -1):
        if path := shutil.which(f"python3.{minor}"):
            candidates.append(path)
    try:
        root = subprocess.run(["pyenv", "root"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        root = os.environ.get("PYENV_ROOT", "")
    if root and (versions := Path(root) / "versions").is_dir():
        candidates += sorted((str(p / "bin" / "python3") for p in versions.iterdir()), reverse=True)
    best: tuple[tuple[int, int], str] | None = None
    for path in candidates:
        found = _version(path)
        if found and MIN_PEER_PYTHON <= found <= MAX_PEER_PYTHON and (best is None or found > best[0]):
            best = (found, path)
    if best is None and shutil.which("uv"):
        out = subprocess.run(["uv", "python", "find", ">=3.12"], capture_output=True, text=True, timeout=60)
        if out.returncode == 0 and (found := _version(out.stdout.strip())):
            best = (found, out.stdout.strip())
    if best is None:
        return None, "no Python >= 3.12 found (give one with --python)"
    return best[1], f"Python {best[0][0]}.{best[0][1]}"


@dataclass
class Installed:
    """A peer's install: its bin folder and version, or why it could not be installed."""

    bin_dir: Path | None
    version: str | None
    note: str


def _uv(*args: str, venv: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    if venv is not None:
        env["VIRTUAL_ENV"] = str(venv)
    return subprocess.run(["uv", *args], capture_output=True, text=True, timeout=INSTALL_TIMEOUT, env=env)


def _installed_version(venv: Path, package: str) -> str | None:
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", f"import importlib.metadata as m; print(m.version({package!r}))"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return out.stdout.strip() if out.returncode == 0 else None


def install(agent: Agent, root: Path, python: str) -> Installed:
    """Install `agent`'s pinned package in ``root/<key>`` (kept when it already holds the pin)."""
    assert agent.package is not None
    assert agent.version is not None
    venv = root / agent.key
    if (venv / "bin" / agent.script).exists() and _installed_version(venv, agent.package) == agent.version:
        return Installed(venv / "bin", agent.version, "already installed")
    if shutil.which("uv") is None:
        return Installed(None, None, "uv is not on PATH")
    made = _uv("venv", "-q", "--clear", "--python", python, str(venv))
    if made.returncode != 0:
        return Installed(None, None, f"uv venv failed: {_last_line(made.stderr)}")
    note = ""
    for spec in (f"{agent.package}=={agent.version}", f"{agent.package}<={agent.version}"):
        done = _uv("pip", "install", "-q", "--compile-bytecode", spec, venv=venv)
        if done.returncode == 0:
            break
        note = f"{spec} failed ({_last_line(done.stderr)})"
    else:
        return Installed(None, None, note)
    version = _installed_version(venv, agent.package)
    if not (venv / "bin" / agent.script).exists():
        return Installed(None, version, f"installed, but bin/{agent.script} is missing")
    if version != agent.version:
        note = f"{note}; took {version}, the nearest older release"
    return Installed(venv / "bin", version, note.lstrip("; ") or "installed")


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:200] if lines else "no output"


def coder_bin(agent_cmd: list[str] | None) -> tuple[list[str], str]:
    """coder-agent's command: `--agent CMD`, else the ``coder-agent`` script beside this Python, else ``-m``."""
    if agent_cmd:
        return agent_cmd, "--agent"
    script = Path(sys.executable).parent / "coder-agent"
    if script.exists():
        return [str(script)], "coder-agent"
    return [sys.executable, "-m", "coder_agent"], "python -m coder_agent"
