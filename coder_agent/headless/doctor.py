"""`coder-agent doctor`: the setup checked in plain words, and the editor settings for this install.

Checks, in order: the config files (which exist, and that together they are valid), the model string (litellm
can route it; its provider), a key (where it comes from; its value is never printed; without a model, not
checked), the model's context window (the config's, litellm's, or a guess, with how to set it), the endpoint (one
tiny completion, timed apart from loading the model library, so the figure is the endpoint's own; `--offline`
skips it), ripgrep, that the data folder (sessions, undo snapshots) is writable, and the sandbox (whether commands
can be walled in here, and the walls a session in this folder would get).
Then the Zed and JetBrains snippets that start this install with this model. Exit status 0 only when every
check passed (a skipped endpoint check counts as passed).
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import anyio
import platformdirs
from rich.console import Console
from rich.text import Text

from coder_agent import __version__, secrets
from coder_agent.agent.config_source import ConfigSource
from coder_agent.agent.model_runner import ModelRunner
from coder_agent.config import (
    CONFIG_ENV_VAR,
    CliOverrides,
    Config,
    api_key_env_names,
    project_config_file,
    user_config_file,
)
from coder_agent.credentials import LoginStore
from coder_agent.errors import RpcError
from coder_agent.headless import snippets
from coder_agent.model import providers
from coder_agent.model.base import ModelError, ModelSettings
from coder_agent.model.litellm_loader import load_litellm, model_info
from coder_agent.model.litellm_model import DEFAULT_CONTEXT_WINDOW
from coder_agent.process import run_sync
from coder_agent.sandbox import probe
from coder_agent.sandbox.command import project_cache
from coder_agent.sandbox.settings import SandboxConfig
from coder_agent.sandbox.walls import Unwallable, agent_paths, build_walls
from coder_agent.store import default_root
from coder_agent.tools.search.ripgrep import find_rg

ENDPOINT_TIMEOUT = 60.0
PROBE = [{"role": "user", "content": "Reply with the single word: ready"}]


@dataclass(frozen=True)
class Check:
    name: str
    passed: bool | None
    """None: skipped."""
    detail: str


def main(config_file: Path | None, model: str | None, *, offline: bool) -> int:
    console = Console(highlight=False, soft_wrap=True)
    source = ConfigSource(CliOverrides(config_file=config_file, model=model), logins=LoginStore())
    checks, config = anyio.run(_checks, source, offline)
    console.print(Text(f"coder-agent {__version__} doctor", style="bold"))
    console.print()
    width = max(len(check.name) for check in checks) + 2
    for check in checks:
        mark, style = {True: ("✓", "green"), False: ("✗", "red"), None: ("-", "dim")}[check.passed]
        name = f"{check.name:<{width}}"
        console.print(Text.assemble((f"{mark} ", style), (name, "bold"), secrets.redact(check.detail)))
    console.print()
    for title, snippet in editor_snippets(config, config_file):
        console.print(Text(title, style="bold"))
        console.print(Text(snippet))
        console.print()
    failed = [check.name for check in checks if check.passed is False]
    if failed:
        console.print(Text(f"{len(failed)} of {len(checks)} checks failed: {', '.join(failed)}.", style="red"))
        return 1
    console.print(Text("Every check passed.", style="green"))
    return 0


async def _checks(source: ConfigSource, offline: bool) -> tuple[list[Check], Config | None]:
    checks: list[Check] = []
    config_check, config = _config(source)
    checks.append(config_check)
    settings: ModelSettings | None = None
    if config is None:
        checks.append(Check("model", False, "not checked: the config has to load first"))
        checks.append(Check("key", False, "not checked: the config has to load first"))
    else:
        model_check = _model(config)
        checks.append(model_check)
        if config.model:
            key_check, settings = _key(source, config)
        else:
            key_check = Check("key", False, "not checked: no model is set (see the line above)")
        checks.append(key_check)
        if not model_check.passed:
            settings = None
        else:
            checks.append(await _context_window(config))
    if offline:
        checks.append(Check("endpoint", None, "skipped (--offline)"))
    elif settings is None:
        checks.append(Check("endpoint", False, "not tried: the model and its key have to be right first"))
    else:
        checks.append(await _endpoint(source, settings))
    checks.append(_ripgrep())
    checks.append(_data_folder())
    checks.append(await anyio.to_thread.run_sync(_sandbox, config))
    return checks, config


def _config(source: ConfigSource) -> tuple[Check, Config | None]:
    cwd = Path.cwd()
    files = [("user file", user_config_file()), ("project file", project_config_file(cwd))]
    named = os.environ.get(CONFIG_ENV_VAR, "").strip()
    if named:
        files.append((CONFIG_ENV_VAR, Path(named).expanduser()))
    if source.cli.config_file is not None:
        files.append(("--config", source.cli.config_file.expanduser()))
    found = [f"{label} {path}" for label, path in files if path.is_file()]
    where = "; ".join(found) if found else f"no config file (the user file would be {user_config_file()})"
    try:
        config, problems = source.load(cwd)
    except RpcError as exc:
        return Check("config", False, exc.message), None
    if problems:
        return Check("config", False, f"the project file was left out: {'; '.join(problems)}"), config
    return Check("config", True, f"valid: {where}"), config


def _model(config: Config) -> Check:
    if not config.model:
        return Check(
            "model",
            False,
            "none is set: set CODER_AGENT_MODEL to a litellm model string (anthropic/claude-sonnet-4-5, "
            "openai/gpt-4.1, or openai/<name> with CODER_AGENT_API_BASE for a self-hosted server)",
        )
    problem = providers.check_model(config.model)
    if problem is not None:
        return Check("model", False, problem)
    provider = providers.provider_of(config.model) or "litellm's own routing"
    origin = config.source_of("model") or "the config"
    base = f", at {config.api_base}" if config.api_base else ""
    return Check("model", True, f"{config.model} (provider {provider}{base}; from {origin})")


async def _context_window(config: Config) -> Check:
    """The model's context window, and where it comes from; a guess says how to set it."""
    if config.context_window:
        return Check("context", True, f"{config.context_window:,} tokens (from {config.source_of('context_window')})")
    try:
        info = model_info(await load_litellm(), config.model or "") or {}
    except ModelError as exc:
        return Check("context", False, str(exc))
    window = info.get("max_input_tokens") or info.get("max_tokens")
    if window:
        return Check("context", True, f"{int(window):,} tokens (litellm's model map)")
    return Check(
        "context",
        True,
        f"{DEFAULT_CONTEXT_WINDOW:,} tokens, a guess: litellm does not know {config.model}'s window. Set "
        "CODER_AGENT_CONTEXT_WINDOW, or context_window in your config, to the model's real window",
    )


def _key(source: ConfigSource, config: Config) -> tuple[Check, ModelSettings | None]:
    try:
        settings = source.model_settings(config)
    except RpcError as exc:
        return Check("key", False, exc.message), None
    environ = source.environ if source.environ is not None else os.environ
    model = config.model or ""
    for name in [*api_key_env_names(config), *providers.key_variables(model)]:
        if environ.get(name, "").strip():
            return Check("key", True, f"{name} is set (its value is not shown)"), settings
    if config.api_base is not None:
        return Check("key", True, f"none set, none needed: a self-hosted server at {config.api_base}"), settings
    if settings.api_key:
        return Check("key", True, "the one `coder-agent login` stored (its value is not shown)"), settings
    return Check("key", True, "no key variable to check: the provider's own credentials are used"), settings


async def _endpoint(source: ConfigSource, settings: ModelSettings) -> Check:
    probe = dataclasses.replace(
        settings,
        retries=0,
        request_timeout=ENDPOINT_TIMEOUT,
        max_tokens=settings.max_tokens if settings.reasoning_effort else 16,
    )
    model = ModelRunner(source).make_model(probe)
    where = settings.api_base or "the provider's own endpoint"
    loading = time.monotonic()
    try:
        await load_litellm()  # timed apart: loading the library is paid once per start, not per request
    except ModelError as exc:
        return Check("endpoint", False, str(exc))
    loaded = time.monotonic() - loading
    started = time.monotonic()
    try:
        with anyio.fail_after(ENDPOINT_TIMEOUT + 5):
            await model.complete(PROBE)
    except ModelError as exc:
        message = str(exc)
        return Check("endpoint", False, message if where in message else f"{where}: {message}")
    except TimeoutError:
        return Check("endpoint", False, f"{where} did not answer within {ENDPOINT_TIMEOUT:g} s")
    answered = time.monotonic() - started
    return Check(
        "endpoint",
        True,
        f"{where} answered a one-word request in {answered:.2f} s (loading the model library took {loaded:.1f} s, "
        "once per start)",
    )


def _ripgrep() -> Check:
    rg = find_rg()
    if rg is None:
        return Check("ripgrep", False, "not found: grep and glob use a slower search in Python; install ripgrep (rg)")
    try:
        version = run_sync([rg, "--version"], timeout=10).stdout.decode(errors="replace").split("\n")[0]
    except (OSError, subprocess.SubprocessError) as exc:
        return Check("ripgrep", False, f"{rg} does not run: {exc}")
    return Check("ripgrep", True, f"{rg} ({version.strip() or 'version unknown'})")


def _data_folder() -> Check:
    sessions = default_root()
    try:
        sessions.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=sessions, prefix=".doctor-", delete=True) as probe:
            probe.write(b"ok")
            probe.flush()
    except OSError as exc:
        why = exc.strerror or str(exc)
        return Check("data folder", False, f"{sessions} is not writable ({why}): sessions cannot be saved")
    return Check("data folder", True, f"{sessions.parent} is writable")


def _sandbox(config: Config | None) -> Check:
    if config is not None and not config.sandbox.enabled:
        return Check("sandbox", None, "off (sandbox.enabled = false): commands run with your account's rights")
    support = probe.check()
    if not support.available:
        return Check(
            "sandbox",
            False,
            f"not available: {support.reason}. Commands would run with your account's rights and the auto mode is "
            "not offered; set sandbox.enabled = false to accept that",
        )
    settings = config.sandbox if config is not None else SandboxConfig()
    temp = platformdirs.user_cache_path("coder-agent") / "sessions" / "session-…"
    try:
        walls = build_walls(
            (Path.cwd(),),
            settings,
            temp=temp,
            cache=project_cache((Path.cwd(),)),
            proxy_socket=None,
            agent_paths=agent_paths(default_root()),
        )
    except Unwallable as exc:
        return Check("sandbox", False, f"not for this folder: {exc}")
    lines = "; ".join([*support.facts(), *walls.describe()])
    return Check("sandbox", True, f"commands here run inside walls: {lines}")


def editor_snippets(config: Config | None, config_file: Path | None) -> list[tuple[str, str]]:
    """The Zed and JetBrains entries that start this install with this config's model."""
    launch = snippets.this_install()
    if config_file is not None:
        launch = dataclasses.replace(launch, args=(*launch.args, "--config", str(config_file.expanduser().resolve())))
    env: dict[str, str] = {}
    if config is not None and config.model:
        if config.source_of("model") in ("env CODER_AGENT_MODEL", "--model"):
            env["CODER_AGENT_MODEL"] = config.model
        if config.api_base and config.source_of("api_base") == "env CODER_AGENT_API_BASE":
            env["CODER_AGENT_API_BASE"] = config.api_base
        key = _key_variable(config)
        if key is not None:
            env[key] = "..."
    else:
        env = dict(snippets.HOSTED_ENV)
    named = os.environ.get(CONFIG_ENV_VAR, "").strip()
    if named:
        env[CONFIG_ENV_VAR] = str(Path(named).expanduser().resolve())
    note = ""
    if "..." in env.values():
        note = "  (put your key where the ... is, or leave it out if the editor's environment has it)"
    return [
        (f"Zed, in settings.json:{note}", snippets.zed(launch, env)),
        (f"JetBrains IDEs, in ~/.jetbrains/acp.json:{note}", snippets.jetbrains(launch, env)),
    ]


def _key_variable(config: Config) -> str | None:
    """The variable the key is read from here (or the provider's usual one), to name in the snippet."""
    model = config.model or ""
    candidates = [*api_key_env_names(config), *providers.key_variables(model)]
    for name in candidates:
        if os.environ.get(name, "").strip():
            return name
    if providers.needs_key(model, config.api_base):
        return providers.key_variables(model)[0]
    return None
