"""The recogniser of commands that check a change (`agent.finish_check.checks`): a row per kind of command."""

from __future__ import annotations

import pytest

from coder_agent.agent.finish_check import checks


@pytest.mark.parametrize(
    "command",
    [
        "pytest -q",
        "uv run pytest tests/unit -x",
        ".venv/bin/pytest",
        "python3.12 -m pytest",
        "cd backend && python -m unittest discover",
        "timeout 600 npm test",
        "env CI=1 cargo test --all",
        "go test ./... 2>&1 | tail -20",
        "make",
        "make -j4 check",
        "./gradlew test",
        "npx tsc --noEmit",
        "ruff check . && mypy src",
        "cargo clippy -- -D warnings",
        "pre-commit run --all-files",
    ],
)
def test_a_command_that_checks_is_recognised(command: str) -> None:
    assert checks(command)


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        "cat pytest.ini",
        "git diff",
        "make clean",
        "make install",
        "npm install",
        "pip install pytest",
        "echo pytest",
        "ruff format .",
        "",
        "this is ( not a command",
    ],
)
def test_a_command_that_checks_nothing_is_not(command: str) -> None:
    assert not checks(command)
