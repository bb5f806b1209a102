"""What a person at a terminal meets: `coder-agent` alone explains itself instead of waiting, and `coder-agent run`
asks its permission questions there (a pseudo-terminal stands in for the person's)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support.fake_llm import FakeLLM, Reply
from tests.support.spawn import agent_env
from tests.support.terminal import Terminal

pytestmark = pytest.mark.e2e

WRITE = Reply.tool("write_file", {"path": "notes.txt", "content": "remember\n"})
AGENT = [sys.executable, "-m", "coder_agent"]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def test_the_bare_command_on_a_terminal_explains_itself(tmp_path: Path, terminals: list[Terminal]) -> None:
    terminal = Terminal(AGENT, agent_env(tmp_path))
    terminals.append(terminal)
    assert terminal.wait() == 0
    said = " ".join(terminal.text.split())
    assert "coder-agent is an ACP agent: an editor" in said
    assert 'coder-agent "your request"' in said
    assert "coder-agent doctor" in said


def test_a_question_on_the_terminal_lets_the_edit_through(
    tmp_path: Path, work: Path, fake_llm: FakeLLM, terminals: list[Terminal]
) -> None:
    fake_llm.script([WRITE, Reply("Written it down.")])
    terminal = Terminal([*AGENT, "run", "--cwd", str(work), "Note it"], agent_env(tmp_path, fake_llm))
    terminals.append(terminal)
    terminal.expect("Answer 1-4 (Enter: Reject):")
    assert "? Write notes.txt  (edit)" in terminal.text
    assert "+ remember" in terminal.text
    assert "[2] Always allow edits in the workspace" in terminal.text
    terminal.type("1\n")
    assert terminal.wait() == 0
    assert (work / "notes.txt").read_text() == "remember\n"
    assert "Written it down." in terminal.text
    assert terminal.text.count("+ remember") == 1  # the question showed the diff; it is not repeated
    assert "\x1b[" in terminal.raw.decode()  # a terminal gets colours


def test_keys_typed_before_the_question_do_not_answer_it(
    tmp_path: Path, work: Path, fake_llm: FakeLLM, terminals: list[Terminal]
) -> None:
    fake_llm.script([WRITE, Reply("Left it.")])
    terminal = Terminal([*AGENT, "run", "--cwd", str(work), "Note it"], agent_env(tmp_path, fake_llm))
    terminals.append(terminal)
    terminal.type("1\n")  # typed ahead, before any question exists
    terminal.expect("Answer 1-4 (Enter: Reject):")
    terminal.type("\n")
    assert terminal.wait() == 0
    assert not (work / "notes.txt").exists()
    assert "Left it." in terminal.text
    assert "The user rejected this call" in str(fake_llm.last_request["messages"][-1]["content"])


def test_the_model_asks_a_question_on_the_terminal_and_reads_the_answer(
    tmp_path: Path, work: Path, fake_llm: FakeLLM, terminals: list[Terminal]
) -> None:
    ask = Reply.tool("ask_user", {"question": "Which colour?", "options": ["red", "blue"], "free_text": True})
    fake_llm.script([ask, Reply("Blue it is.")])
    terminal = Terminal([*AGENT, "run", "--cwd", str(work), "Paint it"], agent_env(tmp_path, fake_llm))
    terminals.append(terminal)
    terminal.expect("Choose one (a number, Enter to skip):")
    assert "? Which colour?" in terminal.text
    assert "[1] red  [2] blue" in terminal.text
    terminal.type("2\n")
    terminal.expect("Or write your answer (text, Enter to skip):")
    terminal.type("\n")
    assert terminal.wait() == 0
    assert "Blue it is." in terminal.text
    assert "Chose: blue." in str(fake_llm.last_request["messages"][-1]["content"])


def test_without_a_terminal_the_question_ends_the_run_as_the_agents_message(
    tmp_path: Path, work: Path, fake_llm: FakeLLM
) -> None:
    import subprocess

    fake_llm.script([Reply.tool("ask_user", {"question": "Which colour?", "options": ["red", "blue"]})])
    result = subprocess.run(
        [*AGENT, "run", "--cwd", str(work), "Paint it"],
        env=agent_env(tmp_path, fake_llm),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr
    assert "Which colour?" in result.stdout
    assert len(fake_llm.requests) == 1, "the run ends with the question: the next prompt is the answer"


def test_a_projects_hooks_are_asked_about_on_the_terminal_naming_each_command(
    tmp_path: Path, work: Path, fake_llm: FakeLLM, terminals: list[Terminal]
) -> None:
    (work / ".coder-agent").mkdir()
    (work / ".coder-agent" / "config.toml").write_text('[[hooks.turn_end]]\ncommand = "touch hook-ran"\n')
    fake_llm.script([Reply("Hello."), Reply("Hello again.")])
    terminal = Terminal([*AGENT, "run", "--cwd", str(work), "say hello"], agent_env(tmp_path, fake_llm))
    terminals.append(terminal)
    terminal.expect("Answer 1-2 (Enter: Reject):")
    assert "- turn_end: `touch hook-ran`" in terminal.text
    assert "[1] Trust them (remembered here until they change)" in terminal.text
    terminal.type("1\n")
    assert terminal.wait() == 0
    assert (work / "hook-ran").exists()

    (work / "hook-ran").unlink()
    again = Terminal([*AGENT, "run", "--cwd", str(work), "say it again"], agent_env(tmp_path, fake_llm))
    terminals.append(again)
    assert again.wait() == 0, again.text
    assert "Trust them" not in again.text, "trusted: not asked again"
    assert (work / "hook-ran").exists()
