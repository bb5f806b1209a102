"""Fixtures of the end-to-end tests: `terminals` closes the pseudo-terminals a test opened."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.terminal import Terminal


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    """The terminals a test opens (it appends them), killed and closed when it ends."""
    opened: list[Terminal] = []
    yield opened
    for terminal in opened:
        terminal.close()
