"""The command line: a bad flag fails at start, before any editor waits on it."""

from __future__ import annotations

from pathlib import Path

import pytest

from coder_agent.cli import parse_args


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
    config = tmp_path / "c.toml"
    config.write_text("")
    assert parse_args(["--config", str(config)]).config == config
