"""The command line: flags and subcommands, help that teaches, the editor snippets for each kind of install, and the
`run` options (where the prompt comes from, the mode when no one can be asked). Bad flags fail at start."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from coder_agent import config
from coder_agent.cli import build_parser, parse_args
from coder_agent.headless import snippets
from coder_agent.headless.run_options import RunOptions, UsageError, run_options
from coder_agent.headless.terminal_permissions import pick
from coder_agent.permissions import Choice, Rule


def test_a_missing_config_file_fails_at_start(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        parse_args(["--config", str(tmp_path / "missing.toml")])
    assert exit_.value.code == 2
    assert "missing.toml: no such file" in capsys.readouterr().err


def test_a_missing_config_file_in_the_environment_fails_at_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CODER_AGENT_CONFIG", str(tmp_path / "gone.toml"))
    with pytest.raises(SystemExit):
        parse_args([])
    assert "CODER_AGENT_CONFIG" in capsys.readouterr().err


def test_an_existing_config_file_is_accepted(tmp_path: Path) -> None:
    config_file = tmp_path / "c.toml"
    config_file.write_text("")
    assert parse_args(["--config", str(config_file)]).config == config_file
    assert parse_args(["run", "--config", str(config_file), "x"]).config == config_file


def test_shared_flags_go_before_or_after_the_subcommand() -> None:
    assert parse_args(["--model", "a/b", "run", "x"]).model == "a/b"
    assert parse_args(["run", "--model", "a/b", "x"]).model == "a/b"
    assert parse_args(["run", "x"]).model is None
    assert parse_args(["doctor", "--offline"]).offline is True


def test_the_log_level_is_warning_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CODER_AGENT_LOG_LEVEL", raising=False)
    assert parse_args([]).log_level == "warning", "acp.el shows every stderr line as an error"
    assert parse_args(["run", "x"]).log_level == "warning"
    assert parse_args(["doctor"]).log_level == "warning"
    monkeypatch.setenv("CODER_AGENT_LOG_LEVEL", "DEBUG")
    assert parse_args(["run", "x"]).log_level == "debug"
    assert parse_args(["run", "--log-level", "error", "x"]).log_level == "error"


# ---- help ----------------------------------------------------------------------------------------


def _section(help_text: str, heading: str) -> str:
    """The indented block under a heading line of the help."""
    lines = help_text.split(heading + "\n", 1)[1].splitlines()
    block = []
    for line in lines:
        if line and not line.startswith(" "):
            break
        block.append(line)
    return textwrap.dedent("\n".join(block)).strip()


def test_help_lists_the_subcommands_variables_config_files_and_editor_examples() -> None:
    text = build_parser().format_help()
    for command in ("run", "doctor", "(none)"):
        assert f"\n  {command} " in text
    for name in [*config.ENV_VARS, config.API_KEY_ENV_VAR, config.CONFIG_ENV_VAR, "CODER_AGENT_LOG_FILE"]:
        assert name in text
    assert str(config.user_config_file()) in text
    assert ".coder-agent/config.toml" in text
    zed = json.loads(_section(text, "Zed, in settings.json:"))["agent_servers"]["Coder Agent"]
    assert zed["type"] == "custom" and zed["env"]["CODER_AGENT_MODEL"]
    jetbrains = _section(text, "JetBrains IDEs, in ~/.jetbrains/acp.json (AI Chat > Configure ACP Agents):")
    assert "type" not in json.loads(jetbrains)["agent_servers"]["Coder Agent"]
    self_hosted = json.loads("{" + _section(text, "A self-hosted server (vLLM, Ollama, llama.cpp; no key needed): "
                                          "the same entry with") + "}")  # fmt: skip
    assert self_hosted["env"]["CODER_AGENT_API_BASE"].startswith("http://localhost")


def test_run_help_says_the_modes_formats_and_exit_codes() -> None:
    parser = build_parser()
    args = parser.parse_args(["run", "x"])
    assert args.command_parser.prog == "coder-agent run"
    text = args.command_parser.format_help()
    for words in (
        "read-only",
        "full-auto",
        "stream-json",
        "3 a permission no one could give",
        "130 Ctrl-C",
        "--continue",
    ):
        assert words in text


def test_the_command_and_its_help_import_nothing_heavy() -> None:
    probe = (
        "import sys; from coder_agent.cli import build_parser; build_parser().format_help(); "
        "print(sorted(m for m in ('rich', 'pydantic', 'litellm', 'mcp') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# ---- editor snippets -----------------------------------------------------------------------------


def test_a_checkout_is_started_with_uv_run(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "uv.lock").write_text("")
    (tmp_path / "coder_agent").mkdir()
    launch = snippets.this_install(tmp_path / "coder_agent", tmp_path / ".venv")
    assert (launch.command, launch.args, launch.kind) == (
        "uv",
        ("run", "--directory", str(tmp_path), "coder-agent"),
        "checkout",
    )


def test_a_uvx_environment_is_started_with_uvx(tmp_path: Path) -> None:
    prefix = tmp_path / "cache" / "uv" / "archive-v0" / "abc123"
    package = prefix / "lib" / "python3.12" / "site-packages" / "coder_agent"
    package.mkdir(parents=True)
    (prefix / "bin").mkdir()
    (prefix / "bin" / "coder-agent").write_text("")
    assert snippets.this_install(package, prefix) == snippets.Launch("uvx", ("coder-agent",), "uvx")


def test_an_installed_command_is_named_by_its_absolute_path(tmp_path: Path) -> None:
    prefix = tmp_path / "tools" / "coder-agent"
    package = prefix / "lib" / "python3.12" / "site-packages" / "coder_agent"
    package.mkdir(parents=True)
    (prefix / "bin").mkdir()
    (prefix / "bin" / "coder-agent").write_text("")
    assert snippets.this_install(package, prefix) == snippets.Launch(
        str(prefix / "bin" / "coder-agent"), (), "installed"
    )
    bare = tmp_path / "bare"
    module = snippets.Launch(sys.executable, ("-P", "-m", "coder_agent"), "module")
    assert snippets.this_install(package, bare) == module


def test_snippets_are_the_editors_json() -> None:
    launch = snippets.Launch("uvx", ("coder-agent",), "uvx")
    env = {"CODER_AGENT_MODEL": "openai/x"}
    assert json.loads(snippets.zed(launch, env)) == {
        "agent_servers": {"Coder Agent": {"type": "custom", "command": "uvx", "args": ["coder-agent"], "env": env}}
    }
    assert json.loads(snippets.jetbrains(launch, env)) == {
        "agent_servers": {"Coder Agent": {"command": "uvx", "args": ["coder-agent"], "env": env}}
    }


# ---- run options ---------------------------------------------------------------------------------


def _options(argv: list[str], stdin: str = "", *, tty: bool = False) -> RunOptions:
    args = parse_args(["run", *argv])
    return run_options(args, io.BytesIO(stdin.encode()), stdin_tty=tty, stderr_tty=tty)


def test_without_a_terminal_the_mode_is_read_only_and_no_one_is_asked(tmp_path: Path) -> None:
    options = _options(["--cwd", str(tmp_path), "hi"])
    assert (options.mode, options.can_ask, options.prompt, options.cwd) == ("read-only", False, "hi", tmp_path)


def test_on_a_terminal_the_configs_mode_holds_and_questions_are_asked() -> None:
    options = _options(["hi"], tty=True)
    assert (options.mode, options.can_ask) == (None, True)
    assert _options(["--mode", "full-auto", "hi"], tty=True).mode == "full-auto"


def test_the_prompt_comes_from_stdin_when_absent_or_a_dash() -> None:
    assert _options([], "from stdin").prompt == "from stdin"
    assert _options(["-"], "dash").prompt == "dash"
    assert _options(["-"], "typed", tty=True).prompt == "typed"
    assert _options(["argument"], "ignored").prompt == "argument"


def test_rules_are_the_configs_rule_strings() -> None:
    options = _options(["--allow", "execute:pytest", "--allow", "edit:src/**", "--deny", "execute:git push", "x"])
    assert options.allow == (Rule("execute", "pytest"), Rule("edit", "src/**"))
    assert options.deny == (Rule("execute", "git push"),)


@pytest.mark.parametrize(
    ("argv", "stdin", "tty", "message"),
    [
        ([], "", True, "no prompt"),
        ([], "  \n", False, "the prompt is empty"),
        (["--allow", "edit", "x"], "", False, "--allow: permission rule 'edit'"),
        (["--deny", "execute:=echo 'x", "x"], "", False, "--deny: permission rule"),
        (["--max-turns", "0", "x"], "", False, "--max-turns"),
    ],
)
def test_usage_errors(argv: list[str], stdin: str, tty: bool, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        _options(argv, stdin, tty=tty)


def test_a_typed_answer_picks_a_choice() -> None:
    choices = [
        Choice("allow_once", "Allow"),
        Choice("allow_always", "Always allow", ("edit:**",)),
        Choice("reject_once", "Reject"),
    ]
    assert [pick(typed, choices) for typed in ("1\n", "2", " 3 ", "\n", "y", "YES", "n", "a")] == [
        "allow_once", "allow_always", "reject_once", "reject_once", "allow_once", "allow_once", "reject_once",
        "allow_always",
    ]  # fmt: skip
    assert [pick(typed, choices) for typed in ("4", "0", "maybe")] == [None, None, None]
    assert pick("a", choices[:1]) is None  # no "always" offered: `a` names nothing


def test_the_mode_flag_offers_every_mode() -> None:
    from typing import get_args

    from coder_agent import cli
    from coder_agent.permissions.modes import ModeName

    assert get_args(ModeName) == cli.MODES


# ---- a prompt means run; short flags ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        ([], None),
        (["--model", "a/b"], None),
        (["--log-level", "debug", "--config", "x.toml"], None),
        (["fix it"], "run"),
        (["-m", "a/b", "fix it"], "run"),
        (["--model", "run"], None),
        (["-c"], "run"),
        (["-p", "fix it"], "run"),
        (["--resume=sess_1"], "run"),
        (["run", "x"], "run"),
        (["sessions"], "sessions"),
        (["doctor"], "doctor"),
    ],
)
def test_a_prompt_or_a_run_flag_means_run_and_editors_still_get_the_agent(argv: list[str], command: str) -> None:
    from coder_agent.cli import with_command

    words = with_command(argv)
    assert (words[0] if words and words[0] in ("run", "sessions", "doctor") else None) == command


def test_the_bare_prompt_and_the_short_flags_parse_as_run() -> None:
    args = parse_args(["-m", "a/b", "-c", "go on"])
    assert (args.command, args.model, args.continue_latest, args.prompt) == ("run", "a/b", True, "go on")
    assert _options(["-p", "from the option"]).prompt == "from the option"
    with pytest.raises(UsageError, match="give the prompt once"):
        _options(["-p", "one", "two"])


def test_continue_or_resume_without_a_prompt_goes_on_where_the_session_stopped() -> None:
    assert _options(["--continue"], tty=True).prompt is None
    assert _options(["--resume", "sess_1"], "").prompt is None  # stdin empty: nothing to say
    assert _options(["--resume", "sess_1"], "a prompt").prompt == "a prompt"


def test_resume_without_an_id_picks_on_a_terminal_only() -> None:
    picked = _options(["--resume"], tty=True)
    assert (picked.resume, picked.prompt) == ("", None)
    worded = _options(["--resume", "fix the flaky test"], tty=True)
    assert (worded.resume, worded.prompt) == ("", "fix the flaky test"), "not an id: the prompt, for a picked session"
    assert _options(["--resume", "sess_12ab", "go"], tty=True).resume == "sess_12ab"
    with pytest.raises(UsageError, match="--resume without an id picks on a terminal"):
        _options(["--resume"], "")


def test_allow_rules_without_a_mode_or_a_terminal_run_only_what_they_allow() -> None:
    assert _options(["--allow", "execute:pytest", "x"]).mode == "default"  # the rest asks, and no one can: it stops
    assert _options(["x"]).mode == "read-only"


# ---- piped input ---------------------------------------------------------------------------------


def test_a_silent_pipe_is_not_waited_on_forever() -> None:
    from coder_agent.headless.piped_input import read_piped

    read_end, write_end = os.pipe()
    try:
        with os.fdopen(read_end, "rb", closefd=False) as stdin:
            piped = read_piped(stdin, wait=0.05, limit=100)
        assert piped.waited_out and piped.empty
        os.write(write_end, b"a" * 30 + b"b" * 200 + b"c" * 30)
        os.close(write_end)
        write_end = -1
        with os.fdopen(read_end, "rb", closefd=False) as stdin:
            piped = read_piped(stdin, wait=5, limit=100)
        assert (piped.size, piped.truncated, piped.waited_out) == (260, True, False)
        assert piped.text.startswith("a" * 30 + "b" * 20) and piped.text.endswith("b" * 20 + "c" * 30)
        assert "[… 160 bytes of the input left out here …]" in piped.text
    finally:
        os.close(read_end)
        if write_end >= 0:
            os.close(write_end)


def test_a_file_on_stdin_is_read_without_waiting(tmp_path: Path) -> None:
    from coder_agent.headless.piped_input import read_piped

    (tmp_path / "in.txt").write_bytes("caf\xe9 \xff".encode("latin-1"))
    with (tmp_path / "in.txt").open("rb") as stdin:
        piped = read_piped(stdin, wait=0, limit=None)
    assert (piped.text, piped.size, piped.truncated) == ("caf\ufffd \ufffd", 6, False)


def test_the_log_file_is_made_readable_by_its_owner_only(tmp_path: Path) -> None:
    """It holds prompts (keys are redacted from it, the work is not): not 0644 under the usual umask."""
    import logging

    from coder_agent.cli import setup_logging

    root = logging.getLogger()
    kept, level = root.handlers[:], root.level
    log_file = tmp_path / "logs" / "agent.log"
    try:
        setup_logging(log_file, "info")
        logging.getLogger("coder_agent.test").info("a line")
    finally:
        for handler in root.handlers:
            handler.close()
        root.handlers[:], root.level = kept, level
    assert log_file.stat().st_mode & 0o777 == 0o600
    assert "a line" in log_file.read_text()
