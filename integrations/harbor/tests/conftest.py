"""The Harbor agent's tests: Harbor's own interfaces and models, coder-agent built from this checkout, and the
fake OpenAI-compatible server of coder-agent's tests (imported from the repository's `tests/support`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPOSITORY))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # Harbor imports litellm: no fetch at import


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A coder-agent wheel built from this checkout, as `wheel=` takes it."""
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        ["uv", "build", "--wheel", "--out-dir", str(out), str(REPOSITORY)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (built,) = out.glob("coder_agent-*.whl")
    return built
