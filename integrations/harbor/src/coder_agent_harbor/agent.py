"""`CoderAgent`: coder-agent as a Harbor installed agent (the kind Harbor's Claude Code, Codex and mini-SWE-agent
adapters are).

* `install`: uv (installed if the image lacks it), then `uv tool install` of coder-agent from PyPI (a pinned
  `version`, or the latest) or of a wheel built from a checkout (`wheel`, uploaded first). A failure is an
  `InstallFailed` naming what to check, with the installer's last lines; the whole output is kept in the trial's
  `agent/setup/coder-agent-install.txt`.
* `run`: `coder-agent run --mode full-auto --output-format stream-json --max-turns N -m MODEL` in the task's
  working folder, with the provider keys Harbor resolves for the model (and `--base-url` as
  `CODER_AGENT_API_BASE`). The stream goes to `coder-agent.jsonl` in the agent's log folder, stderr beside it;
  then `coder-agent export SESSION --format atif` writes `trajectory.json` there (the agent declares ATIF).
* `populate_context_post_run`: tokens (input with cached, cached, output) and cost from the run's `result` line,
  also written into the trajectory's `final_metrics`.

The mode: `full-auto` by default, since a task container is disposable and coder-agent's `auto` mode needs a
sandbox (Landlock and seccomp, or Seatbelt) that most container runtimes do not let a process set up: there
`auto` refuses to start, with a clear message. `mode=auto` asks for it anyway (Harbor's `--ak mode=auto`).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal, override

from harbor.agents.agent_auth_resolution import (
    ModelConnectionSpec,
    require_api_key_for_default_endpoint,
    with_canonical_provider_envs,
)
from harbor.agents.capabilities import AgentCapabilities
from harbor.agents.installed.base import BaseInstalledAgent, NonZeroAgentExitCodeError, with_prompt_template
from harbor.agents.options import Cli, InstalledAgentOptions
from harbor.environments.base import BaseEnvironment
from harbor.llms.litellm_config import LITELLM_BASE_URL_OVERRIDES, litellm_model_name, with_litellm_credentials
from harbor.models.agent.context import AgentContext
from pydantic import Field

NAME = "coder-agent"
STREAM = "coder-agent.jsonl"
STDERR = "coder-agent.stderr.txt"
TRAJECTORY = "trajectory.json"
INSTALL_LOG = "coder-agent-install.txt"
PATH_SETUP = 'export PATH="$HOME/.local/bin:$PATH"; '
INSTALL_TAIL_LINES = 15


class InstallFailed(RuntimeError):
    """coder-agent could not be installed into the task's environment."""


class CoderAgentOptions(InstalledAgentOptions):
    """What `--ak` may set (`harbor run --agent-import-path coder_agent_harbor:CoderAgent --ak mode=auto`)."""

    mode: Annotated[Literal["full-auto", "auto"], Cli("--mode")] = Field(
        default="full-auto",
        description="full-auto: every call runs (a disposable container); auto: inside coder-agent's sandbox.",
    )
    max_turns: Annotated[int | None, Cli("--max-turns")] = Field(
        default=200, ge=1, description="The most model requests for the task."
    )
    wheel: str | None = Field(
        default=None, description="A coder-agent wheel on this machine (`uv build --wheel`), installed instead of PyPI."
    )
    python: str = Field(default="3.12", description="The Python uv installs coder-agent with.")


class CoderAgent(BaseInstalledAgent):
    """coder-agent, installed into the task's environment and run headless on the task."""

    capabilities = AgentCapabilities(base_url=True, reasoning_effort=True, atif=True)
    MODEL_CONNECTION = ModelConnectionSpec(base_url_overrides=LITELLM_BASE_URL_OVERRIDES)
    options_model = CoderAgentOptions
    options: CoderAgentOptions

    @staticmethod
    @override
    def name() -> str:
        return NAME

    @classmethod
    @override
    def check_model_credentials(cls, connection, *, kwargs, env, explicit_env=None):  # type: ignore[no-untyped-def]
        require_api_key_for_default_endpoint(connection, cls.name())

    @classmethod
    @override
    def resolve_model_connection_config(cls, model_name, resolve_env, **connection_kwargs):  # type: ignore[no-untyped-def]
        access = super().resolve_model_connection_config(model_name, resolve_env, **connection_kwargs)
        return with_litellm_credentials(access)

    @override
    def get_version_command(self) -> str | None:
        return PATH_SETUP + "coder-agent --version"

    @override
    def parse_version(self, stdout: str) -> str:
        return stdout.strip().removeprefix("coder-agent").strip()

    # ---- install ----------------------------------------------------------------------------------

    @override
    async def install(self, environment: BaseEnvironment) -> None:
        await self.ensure_system_dependencies(environment, ("curl", "git"))
        target = self._install_target()
        if self.options.wheel is not None:
            wheel = _wheel(self.options.wheel)
            made = await environment.exec("mktemp -d -t coder-agent-harbor.XXXXXXXX")  # the container's own temp
            folder = (made.stdout or "").strip()
            if made.return_code != 0 or not folder.startswith("/"):
                raise InstallFailed(f"coder-agent's wheel has nowhere to go in the task's environment: {made.stderr}")
            remote = str(PurePosixPath(folder) / wheel.name)
            await environment.upload_file(wheel, remote)
            target = remote
        command = self.install_command(target)
        try:
            result = await self.exec_as_agent(environment, command=command)
        except NonZeroAgentExitCodeError as failure:
            self._keep_install_log(str(failure))
            raise InstallFailed(_install_problem(target, str(failure))) from None
        self._keep_install_log(f"$ {command}\n{result.stdout or ''}\n{result.stderr or ''}")

    def _install_target(self) -> str:
        return f"coder-agent=={self._version}" if self._version else "coder-agent"

    def install_command(self, target: str) -> str:
        """The shell command that installs coder-agent from `target` (a requirement or a wheel's path)."""
        python = shlex.quote(self.options.python)
        return (
            "set -eu; " + PATH_SETUP + "if ! command -v uv >/dev/null 2>&1; then "
            "curl -LsSf https://astral.sh/uv/install.sh | sh || python3 -m pip install --user uv; fi; "
            f"uv tool install --force --python {python} {shlex.quote(target)}; "
            "coder-agent --version"
        )

    def _keep_install_log(self, text: str) -> None:
        folder = self.logs_dir / "setup"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / INSTALL_LOG).write_text(text, encoding="utf-8")

    # ---- run ---------------------------------------------------------------------------------------

    @override
    @with_prompt_template
    async def run(self, instruction: str, environment: BaseEnvironment, context: AgentContext) -> None:
        if not self.model_name:
            raise ValueError("coder-agent needs a model: harbor run -m provider/model (a litellm model string)")
        model = litellm_model_name(
            self.model_name, model_api_format=self._model_api_format, skip_model_parsing=self.skip_model_parsing
        )
        logs = self.environment_logs_dir
        env = self.run_environment(instruction)
        await self.exec_as_agent(environment, command=self.run_command(model, logs), env=env)
        session = await self._session_id(environment, logs)
        if session is not None:
            await environment.exec(
                PATH_SETUP
                + f"coder-agent export {shlex.quote(session)} --format atif -o {shlex.quote(str(logs / TRAJECTORY))}",
                env=env,
            )

    def run_environment(self, instruction: str) -> dict[str, str]:
        """The variables the run gets: the provider's key(s) as Harbor resolved them, the endpoint, the task."""
        access = self.model_connection
        env = {**with_canonical_provider_envs(access).env, **access.env}
        if access.execution_base_url is not None:
            env["CODER_AGENT_API_BASE"] = access.execution_base_url
        if access.api_key is not None and (self._model_api_key_name is not None or access.provider is None):
            env["CODER_AGENT_API_KEY"] = access.api_key
        if self.options.reasoning_effort:
            env["CODER_AGENT_REASONING_EFFORT"] = self.options.reasoning_effort
        env["CODER_AGENT_HARBOR_TASK"] = instruction
        return env

    def run_command(self, model: str, logs: PurePosixPath) -> str:
        """`coder-agent run` on the task (read from the environment: no quoting of the instruction to get wrong)."""
        flags = self.build_cli_flags()
        stream, stderr = shlex.quote(str(logs / STREAM)), shlex.quote(str(logs / STDERR))
        return (
            PATH_SETUP
            + f"mkdir -p {shlex.quote(str(logs))}; "
            + f"coder-agent run {flags} --output-format stream-json -m {shlex.quote(model)} "
            + f'-p "$CODER_AGENT_HARBOR_TASK" </dev/null >{stream} 2>{stderr}'
        )

    async def _session_id(self, environment: BaseEnvironment, logs: PurePosixPath) -> str | None:
        first = await environment.exec(f"head -n 1 {shlex.quote(str(logs / STREAM))}")
        try:
            event = json.loads(first.stdout or "")
        except ValueError:
            self.logger.warning("coder-agent wrote no session line; no trajectory for this trial")
            return None
        session = event.get("session_id") if isinstance(event, dict) else None
        return session if isinstance(session, str) else None

    # ---- what the trial reads back -----------------------------------------------------------------

    @override
    def populate_context_post_run(self, context: AgentContext) -> None:
        result = read_result(self.logs_dir / STREAM)
        if result is None:
            return
        usage = result.get("usage") or {}
        context.n_input_tokens = int(usage.get("input_tokens") or 0)
        context.n_cache_tokens = int(usage.get("cached_input_tokens") or 0)
        context.n_output_tokens = int(usage.get("output_tokens") or 0)
        context.cost_usd = result.get("cost")
        context.metadata = {
            "session_id": result.get("session_id"),
            "stop_reason": result.get("stop_reason"),
            "exit_code": result.get("exit_code"),
            "model_requests": usage.get("model_requests"),
            "files_changed": result.get("files_changed"),
            "error": result.get("error"),
        }
        trajectory = self.logs_dir / TRAJECTORY
        if trajectory.is_file():
            add_token_totals(trajectory, context)


def read_result(stream: Path) -> dict[str, Any] | None:
    """The `result` event of a stream-json run (its last line), or None if the run did not get that far."""
    if not stream.is_file():
        return None
    for line in reversed(stream.read_text(encoding="utf-8", errors="replace").splitlines()):
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("type") == "result":
            return event
    return None


def add_token_totals(trajectory: Path, context: AgentContext) -> None:
    """The run's token totals in the trajectory's `final_metrics` (the session store keeps the cost alone)."""
    data = json.loads(trajectory.read_text(encoding="utf-8"))
    metrics = data.setdefault("final_metrics", {})
    metrics["total_prompt_tokens"] = context.n_input_tokens
    metrics["total_completion_tokens"] = context.n_output_tokens
    if context.n_cache_tokens:
        metrics["total_cached_tokens"] = context.n_cache_tokens
    trajectory.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")


def _wheel(given: str) -> Path:
    wheel = Path(given).expanduser()
    if not wheel.is_file() or wheel.suffix != ".whl":
        raise InstallFailed(f"wheel={given}: no such wheel file on this machine")
    return wheel


def _install_problem(target: str, failure: str) -> str:
    tail = "\n".join(failure.strip().splitlines()[-INSTALL_TAIL_LINES:])
    return (
        f"coder-agent could not be installed in the task's environment from {target}: check that the image can "
        "reach PyPI (or that the wheel was built for this platform) and that it has curl or pip for uv. "
        f"The installer's last lines:\n{tail}"
    )
