"""Fixtures of the end-to-end tests: `terminals` closes the pseudo-terminals a test opened; `work` is an empty
project folder for a run (a module may define its own, with files in it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.terminal import Terminal


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    """The terminals a test opens (it appends them), killed and closed when it ends."""
    opened: list[Terminal] = []
    yield opened
    for terminal in opened:
        terminal.close()


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """An empty project folder for a run to work in."""
    folder = tmp_path / "project"
    folder.mkdir()
    return folder
