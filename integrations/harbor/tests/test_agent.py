"""The Harbor agent against Harbor's interfaces: it installs coder-agent (a wheel built from this checkout) into an
environment whose commands run on this machine, runs it on a task with a model served by the fake
OpenAI-compatible server, and fills Harbor's context and an ATIF trajectory that Harbor's own pydantic models
accept. The commands it sends are checked, and so is an install that fails."""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath

import pytest
from coder_agent_harbor import CoderAgent, InstallFailed
from coder_agent_harbor.agent import INSTALL_LOG, STREAM, TRAJECTORY, read_result
from harbor.models.agent.context import AgentContext
from harbor.models.trajectories import Trajectory
from local_environment import LocalEnvironment

from coder_agent import prompts
from tests.support.fake_llm import Call, FakeLLM, Reply

pytestmark = pytest.mark.anyio

KEY = "sk-harbor-test-0123456789"


def make_agent(tmp_path: Path, **kwargs: object) -> CoderAgent:
    logs = tmp_path / "trial" / "agent"
    logs.mkdir(parents=True, exist_ok=True)
    return CoderAgent(
        logs_dir=logs,
        model_name="openai/fake-model",
        environment_logs_dir=PurePosixPath(str(logs)),  # what a Docker mount of the trial's agent folder gives
        extra_env={"OPENAI_API_KEY": KEY},
        **kwargs,
    )


async def test_installs_the_wheel_runs_the_task_and_reports_tokens_and_a_trajectory(
    tmp_path: Path, wheel: Path
) -> None:
    environment = LocalEnvironment(tmp_path / "env")
    with FakeLLM() as llm:
        llm.script(
            [
                Reply("Writing it.", calls=[Call("write_file", {"path": "hello.txt", "content": "hello harbor\n"})]),
                Reply("Done: hello.txt says hello."),
                Reply("Checked: hello.txt holds the line asked for; there are no tests to run."),
            ]
        )
        agent = make_agent(tmp_path, wheel=str(wheel), python="3.11", base_url=llm.base_url, max_turns=7)
        await agent.install(environment)
        context = AgentContext()
        await agent.run("Create hello.txt saying hello harbor.", environment, context)
        agent.populate_context_post_run(context)
        told = json.dumps(llm.requests)

    assert (environment.workdir / "hello.txt").read_text() == "hello harbor\n"

    install, *_ = [e for e in environment.executed if "uv tool install" in e.command]
    [made] = [e for e in environment.executed if e.command.startswith("mktemp -d")]
    folder = (made.result.stdout or "").strip()  # the environment's own temp folder, not a path we name
    assert "coder-agent-harbor." in folder
    assert f"uv tool install --force --python 3.11 {folder}/" in install.command
    assert install.command.endswith(f"/{wheel.name}; coder-agent --version")
    assert "coder-agent" in install.result.stdout

    (run,) = [e for e in environment.executed if "coder-agent run" in e.command]
    assert "coder-agent run --mode full-auto --max-turns 7 --output-format stream-json -m openai/fake-model" in (
        run.command
    )
    assert '-p "$CODER_AGENT_HARBOR_TASK"' in run.command and "hello harbor" not in run.command
    assert run.env["CODER_AGENT_HARBOR_TASK"] == "Create hello.txt saying hello harbor."
    assert run.env["OPENAI_API_KEY"] == KEY
    assert run.env["CODER_AGENT_API_BASE"] == llm.base_url
    assert KEY not in run.command
    assert "Create hello.txt" in told

    result = read_result(agent.logs_dir / STREAM)
    assert result is not None and result["exit_code"] == 0 and result["stop_reason"] == "end_turn"
    assert context.n_input_tokens and context.n_input_tokens > 0
    assert context.n_output_tokens and context.n_output_tokens > 0
    assert context.n_cache_tokens == 0
    assert context.metadata is not None and context.metadata["files_changed"] == ["hello.txt"]

    trajectory = Trajectory.model_validate_json((agent.logs_dir / TRAJECTORY).read_text())
    assert trajectory.agent.name == "coder-agent"
    assert trajectory.session_id == context.metadata["session_id"]
    sources = [step.source for step in trajectory.steps]
    # the edit was not checked by a command, so the run asks once before it finishes (`agent.finish_check`)
    assert sources == ["system", "user", "agent", "agent", "user", "agent"]
    assert trajectory.steps[4].message == prompts.load("check_before_finishing.md")
    write = trajectory.steps[2]
    assert write.tool_calls is not None and write.tool_calls[0].function_name == "write_file"
    assert write.observation is not None
    assert write.observation.results[0].source_call_id == write.tool_calls[0].tool_call_id
    assert trajectory.final_metrics is not None
    assert trajectory.final_metrics.total_prompt_tokens == context.n_input_tokens
    assert trajectory.final_metrics.total_completion_tokens == context.n_output_tokens
    assert KEY not in (agent.logs_dir / TRAJECTORY).read_text()
    assert agent.capabilities.atif


async def test_a_failed_install_is_a_clear_error_with_the_installers_words(tmp_path: Path) -> None:
    broken = tmp_path / "coder_agent-9.9.9-py3-none-any.whl"
    broken.write_bytes(b"not a zip file")
    environment = LocalEnvironment(tmp_path / "env")
    agent = make_agent(tmp_path, wheel=str(broken), python="3.11")
    with pytest.raises(InstallFailed) as failed:
        await agent.install(environment)
    message = str(failed.value)
    assert message.startswith("coder-agent could not be installed in the task's environment from /")
    assert "coder-agent-harbor." in message
    assert "reach PyPI" in message
    assert "The installer's last lines:" in message
    kept = (agent.logs_dir / "setup" / INSTALL_LOG).read_text()
    assert "uv tool install" in kept


async def test_a_missing_wheel_is_refused_before_anything_runs(tmp_path: Path) -> None:
    environment = LocalEnvironment(tmp_path / "env")
    agent = make_agent(tmp_path, wheel=str(tmp_path / "nowhere.whl"))
    with pytest.raises(InstallFailed, match="no such wheel file"):
        await agent.install(environment)
    assert not any("uv tool install" in command for command in environment.commands())


def test_the_default_mode_is_full_auto_and_the_options_are_harbors(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    assert agent.build_cli_flags() == "--mode full-auto --max-turns 200"
    assert make_agent(tmp_path, mode="auto", max_turns=3).build_cli_flags() == "--mode auto --max-turns 3"
    with pytest.raises(ValueError, match="mode"):
        make_agent(tmp_path, mode="read-only")
    assert agent.install_command("coder-agent==0.1.0").count("uv tool install --force --python 3.12 coder-agent==0.1.0")
    pinned = make_agent(tmp_path, version="0.1.0")
    assert pinned._install_target() == "coder-agent==0.1.0"
    assert agent.parse_version("coder-agent 0.1.0\n") == "0.1.0"


def test_a_run_that_never_reached_its_result_leaves_the_context_empty(tmp_path: Path) -> None:
    agent = make_agent(tmp_path)
    context = AgentContext()
    agent.populate_context_post_run(context)
    assert context.is_empty()
    (agent.logs_dir / STREAM).write_text('{"type": "session", "session_id": "s"}\nnot json\n')
    agent.populate_context_post_run(context)
    assert context.is_empty()
