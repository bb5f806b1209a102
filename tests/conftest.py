"""Shared pytest configuration: async tests run on anyio's asyncio backend (litellm needs asyncio)."""

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
