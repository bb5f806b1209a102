"""Shared pytest configuration: async tests run on anyio's asyncio backend (litellm needs asyncio)."""

import pytest

pytest_plugins = ["tests.support.fake_llm"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
