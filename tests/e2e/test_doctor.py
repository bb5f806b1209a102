"""`coder-agent doctor`: every check in plain words, the key never printed, one tiny completion against
the fake model server, the editor settings for this install, and exit status 0 only when everything passed.
One spawned `coder-agent doctor` goes all the way; the failing checks run its `main` in this process."""

from __future__ import annotations

import contextlib
import io
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest

from tests.support.fake_llm import FakeLLM, Reply
from tests.support.headless import environment_of
from tests.support.spawn import agent_env

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

SECRET = "sk-doctor-secret-4f1e9a"
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Ran:
    code: int
    out: str


async def doctor(tmp_path: Path, *args: str, llm: FakeLLM | None = None, env: dict[str, str] | None = None) -> Ran:
    with anyio.fail_after(120):
        done = await anyio.run_process(
            [sys.executable, "-m", "coder_agent", "doctor", *args],
            env=agent_env(tmp_path, llm, env),
            cwd=tmp_path,
            check=False,
        )
    return Ran(done.returncode, done.stdout.decode() + done.stderr.decode())


async def doctor_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str, env: dict[str, str] | None = None
) -> Ran:
    """`coder-agent doctor ARGS` in this process, with the environment and folder a spawned one would have."""
    from coder_agent.cli import parse_args
    from coder_agent.headless.doctor import main

    parsed = parse_args(["doctor", *args])
    out = io.StringIO()
    monkeypatch.chdir(tmp_path)
    with environment_of(agent_env(tmp_path, None, env)), contextlib.redirect_stdout(out), anyio.fail_after(120):
        code = await anyio.to_thread.run_sync(lambda: main(parsed.config, parsed.model, offline=parsed.offline))
    return Ran(code, out.getvalue())


def line(out: str, name: str) -> str:
    return next(text for text in out.splitlines() if text[2:].startswith(name))


def zed_entry(out: str) -> dict[str, object]:
    block = out.split("Zed, in settings.json:", 1)[1].split("\n", 1)[1].split("\n\n", 1)[0]
    entry: dict[str, object] = json.loads(block)["agent_servers"]["Coder Agent"]
    return entry


async def test_everything_passes_against_a_model_that_answers(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.script([Reply("ready")])
    ran = await doctor(tmp_path, llm=fake_llm, env={"CODER_AGENT_API_KEY": SECRET})
    assert ran.code == 0, ran.out
    assert line(ran.out, "config").startswith("✓")
    assert line(ran.out, "model").startswith("✓ model        openai/fake-model (provider openai, at http://127.0.0.1")
    assert line(ran.out, "key") == "✓ key          CODER_AGENT_API_KEY is set (its value is not shown)"
    assert line(ran.out, "context") == (
        "✓ context      32,768 tokens, a guess: litellm does not know openai/fake-model's window. Set "
        "CODER_AGENT_CONTEXT_WINDOW, or context_window in your config, to the model's real window"
    )
    endpoint = line(ran.out, "endpoint")
    # the endpoint's own time, apart from loading the model library (seconds, once per start)
    assert re.search(r"answered a one-word request in \d+\.\d\d s \(loading the model library took \d+\.\d s", endpoint)
    assert line(ran.out, "ripgrep").startswith("✓")
    assert line(ran.out, "data folder") == f"✓ data folder  {tmp_path / 'xdg-data' / 'coder-agent'} is writable"
    assert "Every check passed." in ran.out
    assert SECRET not in ran.out
    assert fake_llm.last_request["max_tokens"] == 16
    entry = zed_entry(ran.out)
    assert entry["command"] == "uv" and entry["args"] == ["run", "--directory", str(ROOT), "coder-agent"]
    assert entry["env"] == {
        "CODER_AGENT_MODEL": "openai/fake-model",
        "CODER_AGENT_API_BASE": fake_llm.base_url,
        "CODER_AGENT_API_KEY": "...",
    }


async def test_no_model_fails_and_says_what_to_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ran = await doctor_here(tmp_path, monkeypatch, "--offline")
    assert ran.code == 1
    assert line(ran.out, "model").startswith("✗ model        none is set: set CODER_AGENT_MODEL")
    assert line(ran.out, "key") == "✗ key          not checked: no model is set (see the line above)"
    assert line(ran.out, "endpoint").startswith("- endpoint     skipped (--offline)")
    assert "checks failed: model, key." in ran.out


async def test_offline_skips_the_endpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"CODER_AGENT_MODEL": "anthropic/claude-sonnet-4-5", "ANTHROPIC_API_KEY": SECRET}
    ran = await doctor_here(tmp_path, monkeypatch, "--offline", env=env)
    assert ran.code == 0, ran.out
    assert line(ran.out, "key") == "✓ key          ANTHROPIC_API_KEY is set (its value is not shown)"
    assert re.fullmatch(r"✓ context      [\d,]+ tokens \(litellm's model map\)", line(ran.out, "context"))
    assert SECRET not in ran.out
    ran = await doctor_here(tmp_path, monkeypatch, "--offline", env={**env, "CODER_AGENT_CONTEXT_WINDOW": "100000"})
    assert line(ran.out, "context") == "✓ context      100,000 tokens (from env CODER_AGENT_CONTEXT_WINDOW)"
    assert zed_entry(ran.out)["env"] == {"CODER_AGENT_MODEL": "anthropic/claude-sonnet-4-5", "ANTHROPIC_API_KEY": "..."}


async def test_a_missing_key_an_unknown_provider_and_an_unreachable_server_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran = await doctor_here(tmp_path, monkeypatch, env={"CODER_AGENT_MODEL": "anthropic/claude-sonnet-4-5"})
    assert ran.code == 1
    assert line(ran.out, "key").startswith(
        "✗ key          No API key for anthropic/claude-sonnet-4-5: set ANTHROPIC_API_KEY"
    )
    assert line(ran.out, "endpoint").startswith("✗ endpoint     not tried")

    ran = await doctor_here(tmp_path, monkeypatch, "--offline", env={"CODER_AGENT_MODEL": "nosuchprovider/x"})
    assert ran.code == 1
    assert "which litellm does not know" in line(ran.out, "model")

    ran = await doctor_here(
        tmp_path, monkeypatch, env={"CODER_AGENT_MODEL": "openai/x", "CODER_AGENT_API_BASE": "http://127.0.0.1:9/v1"}
    )
    assert ran.code == 1
    assert line(ran.out, "endpoint").startswith(
        "✗ endpoint     The model server at http://127.0.0.1:9/v1 is not reachable"
    )


async def test_a_broken_config_file_and_an_unwritable_data_folder_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user_file = tmp_path / "xdg-config" / "coder-agent" / "config.toml"
    user_file.parent.mkdir(parents=True)
    user_file.write_text("temperature = 'hot'\n")
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    ran = await doctor_here(tmp_path, monkeypatch, "--offline", env={"XDG_DATA_HOME": str(blocked)})
    assert ran.code == 1
    assert line(ran.out, "config").startswith(f"✗ config       Invalid config in {user_file}: field 'temperature'")
    assert line(ran.out, "data folder").startswith(
        f"✗ data folder  {blocked / 'coder-agent' / 'sessions'} is not writable"
    )
