"""Fixtures of the sandbox's tests that open sessions' sandboxes: a workspace folder, and a task group for the
proxy and the fork server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import anyio.abc
import pytest


@pytest.fixture
async def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


@pytest.fixture
async def tasks() -> AsyncIterator[anyio.abc.TaskGroup]:
    async with anyio.create_task_group() as group:
        yield group
        group.cancel_scope.cancel()
