"""Fixtures of the end-to-end tests (every test here is marked `e2e` by the root conftest)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """An empty project folder for a run to work in (a module may define its own, with files in it)."""
    folder = tmp_path / "project"
    folder.mkdir()
    return folder
