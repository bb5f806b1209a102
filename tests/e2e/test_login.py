"""`coder-agent login` as an editor's terminal runs it (ACP's terminal auth method), recorded on a pseudo-terminal
with a fake provider: the pickers, a key that fails and one that works (neither ever shown), the file it falls back
to where no keyring works (this test forces that), then an editor's agent that starts sessions with it and nothing
else configured, `logout` over ACP, and `coder-agent logout`."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest

from tests.support.fake_llm import FakeLLM, Fault, Reply
from tests.support.spawn import agent_env, spawned_agent
from tests.support.terminal import Terminal

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

AGENT = [sys.executable, "-m", "coder_agent"]
WRONG = "sk-wrong-key-0000000000000000"
GOOD = "sk-good-key-1111111111111111"


def _login_env(tmp_path: Path, fake_llm: FakeLLM) -> dict[str, str]:
    """No model nor key configured; OpenAI's own endpoint is the fake provider (litellm's OPENAI_BASE_URL)."""
    return agent_env(
        tmp_path,
        env={"OPENAI_BASE_URL": fake_llm.base_url, "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"},
    )


def _log_in(tmp_path: Path, fake_llm: FakeLLM, terminals: list[Terminal], env: dict[str, str]) -> Path:
    """The recorded run: a wrong key, then a good one; where the login was stored."""
    fake_llm.script([Fault.status(401, message=f"Incorrect API key provided: {WRONG}"), Reply("ready")])
    terminal = Terminal([*AGENT, "login"], env, cwd=tmp_path)
    terminals.append(terminal)
    terminal.expect("Number [1-8, Enter for 1]: ")
    assert "Which provider?" in terminal.text and "2. OpenAI" in terminal.text
    terminal.type("2\n")
    terminal.expect("Number [1-4, Enter for 1]: ")
    assert "Which OpenAI model?" in terminal.text and "2. openai/gpt-4.1" in terminal.text
    terminal.type("2\n")
    terminal.expect("Paste your OpenAI API key (it is not shown): ")
    terminal.type(WRONG + "\n")
    terminal.expect("Try again, or press Ctrl-C to stop.\nPaste your OpenAI API key (it is not shown): ")
    terminal.type(GOOD + "\n")
    terminal.expect("It works. Stored in")
    assert terminal.wait() == 0
    transcript = terminal.text
    (tmp_path / "login-transcript.txt").write_text(transcript, encoding="utf-8")  # the recorded run
    assert WRONG not in transcript and GOOD not in transcript, "a pasted key is never echoed nor printed"
    assert "That did not work:" in transcript and "[redacted the pasted key]" in transcript
    stored = tmp_path / "xdg-data" / "coder-agent" / "credentials.json"
    assert f"Stored in {stored} (readable by you alone: no OS keyring works here)." in transcript
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600 and stat.S_IMODE(stored.parent.stat().st_mode) == 0o700
    assert [r.bearer for r in fake_llm.recorded] == [WRONG, GOOD]
    assert fake_llm.recorded[1].body["model"] == "gpt-4.1"
    assert list(tmp_path.glob("**/credentials.json")) == [stored], "one copy, in the user's data folder only"
    return stored


async def test_a_login_on_a_terminal_then_an_editor_works_with_it_until_logout(
    tmp_path: Path, fake_llm: FakeLLM, terminals: list[Terminal]
) -> None:
    env = _login_env(tmp_path, fake_llm)
    stored = _log_in(tmp_path, fake_llm, terminals, env)
    fake_llm.script([Reply("Hello from the stored login.")])
    work = tmp_path / "work"
    work.mkdir()
    async with spawned_agent(tmp_path, env=env) as agent:
        client = agent.client
        init = await client.initialize(
            {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False, "auth": {"terminal": True}}
        )
        assert init["authMethods"][0]["id"] == "login" and init["authMethods"][0]["args"] == ["login"]
        session = await client.new_session(str(work))
        assert await client.prompt(session, "hi") == "end_turn"
        assert "Hello from the stored login." in client.agent_text(session)
        assert fake_llm.recorded[-1].bearer == GOOD
        assert await client.request("logout", {}) == {}
        assert not stored.exists()
        with pytest.raises(Exception, match="coder-agent login"):
            await client.new_session(str(work))
    assert GOOD not in agent.stderr_path.read_text(encoding="utf-8"), "the debug log redacts the stored key"


def test_logout_on_the_command_line_removes_the_stored_login(tmp_path: Path, fake_llm: FakeLLM) -> None:
    import subprocess

    stored = tmp_path / "xdg-data" / "coder-agent" / "credentials.json"
    stored.parent.mkdir(parents=True)
    stored.write_text('{"provider": "openai", "model": "openai/gpt-4.1", "key": "sk-x-0000000000"}')
    stored.chmod(0o600)
    env = _login_env(tmp_path, fake_llm)
    done = subprocess.run([*AGENT, "logout"], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and f"removed from {stored}" in done.stdout
    assert not stored.exists()
    again = subprocess.run([*AGENT, "logout"], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert again.returncode == 0 and "No login was stored" in again.stdout


def test_login_without_a_terminal_says_where_to_run_it(tmp_path: Path, fake_llm: FakeLLM) -> None:
    import subprocess

    env = _login_env(tmp_path, fake_llm)
    done = subprocess.run(
        [*AGENT, "login"], env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2 and "in a terminal" in done.stderr
