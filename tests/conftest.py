"""Shared pytest configuration: async tests run on anyio's asyncio backend (litellm needs asyncio), no test
touches the real user's config or data folders or keyring, every test under `tests/e2e/` and `tests/interop/` is
marked `e2e` (so the fast loop is `pytest -m "not e2e"`), and `-n auto` starts one worker more than there are
cores."""

import os
from pathlib import Path

import pytest

from tests.support.user_config import LANGUAGE_SERVERS_OFF

pytest_plugins = ["tests.support.fake_llm"]


E2E = Path(__file__).parent / "e2e"
INTEROP = Path(__file__).parent / "interop"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that spawn the agent live in `tests/e2e/` and `tests/interop/`: mark them all `e2e`, whatever their
    module says; those driven by others' clients are also `interop`."""
    for item in items:
        if item.path.is_relative_to(E2E):
            item.add_marker(pytest.mark.e2e)
        elif item.path.is_relative_to(INTEROP):
            item.add_marker(pytest.mark.e2e)
            item.add_marker(pytest.mark.interop)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """A core per worker, and one worker more: the end-to-end tests spend much of their time waiting on the
    processes they spawn (2 cores: 107 s with 3 workers, 135 s with 2, 117 s with 4)."""
    return (os.cpu_count() or 1) + 1


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def private_user_folders(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent's user config, session store, undo blobs, commands and skills live under a temporary home."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))  # ~/.claude/commands and ~/.claude/skills are read too
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / "state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "cache"))
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")  # never the user's keyring
    user_config = home / "config" / "coder-agent" / "config.toml"
    user_config.parent.mkdir(parents=True)
    user_config.write_text(LANGUAGE_SERVERS_OFF, encoding="utf-8")
    for name in ("CODER_AGENT_MODEL", "CODER_AGENT_API_BASE", "CODER_AGENT_API_KEY", "CODER_AGENT_CONFIG", "CI"):
        monkeypatch.delenv(name, raising=False)  # CI: `coder-agent run` picks its mode by it; tests say theirs
