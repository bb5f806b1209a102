"""The sandbox tests: real commands under the real walls. Everything here is skipped, with the probe's reason, where
this machine cannot put the walls up; every test is marked `sandbox` (`pytest -m sandbox` runs just these).

`make_world(owner=None, project_config=True)` gives a fresh fake user (`walled.make_layout`, copied from one laid
out once per test process) in a new folder that every user may traverse (the tests that run as `nobody` need
that), with HOME and the XDG folders pointed into its home; it is removed afterwards, with anything the test's
commands left in /dev/shm (named with the test's `token`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from coder_agent.sandbox import probe
from tests.sandbox.walled import Layout, copy_layout, make_layout

MakeLayout = Callable[..., Layout]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "sandbox: runs real commands inside the OS sandbox (tests/sandbox/)")


@pytest.fixture(scope="session")
def sandbox_support() -> probe.Support:
    support = probe.check()
    if not support.available:
        pytest.skip(f"commands cannot be sandboxed on this machine: {support.reason}")
    if support.kind != "landlock":
        pytest.skip(f"these tests drive the Linux launcher; this machine's sandbox is {support.kind}")
    return support


@pytest.fixture(autouse=True)
def _needs_the_sandbox(sandbox_support: probe.Support) -> None:
    """Skip every test here where the walls cannot be put up."""


@pytest.fixture
def token() -> str:
    return uuid.uuid4().hex[:12]


@pytest.fixture(scope="session")
def layout_templates() -> Iterator[dict[tuple[object, ...], Layout]]:
    """Worlds laid out once per test process, copied for each test (`make_world`)."""
    templates: dict[tuple[object, ...], Layout] = {}
    yield templates
    for layout in templates.values():
        shutil.rmtree(layout.base.parent, ignore_errors=True)


@pytest.fixture
def make_world(
    monkeypatch: pytest.MonkeyPatch, token: str, layout_templates: dict[tuple[object, ...], Layout]
) -> Iterator[MakeLayout]:
    """A fresh world for each call (see the module docstring)."""
    made: list[Path] = []

    def make(owner: int | None = None, project_config: bool = True) -> Layout:
        key = (project_config,)
        if key not in layout_templates:
            layout_templates[key] = make_layout(
                _fresh_folder() / "w", token=uuid.uuid4().hex[:12], project_config=project_config
            )
        folder = _fresh_folder()
        made.append(folder)
        layout = copy_layout(layout_templates[key], folder / "w", owner=owner)
        monkeypatch.setenv("HOME", str(layout.home))
        monkeypatch.setenv("XDG_CONFIG_HOME", str(layout.home / ".config"))
        monkeypatch.setenv("XDG_DATA_HOME", str(layout.home / ".local" / "share"))
        monkeypatch.setenv("XDG_CACHE_HOME", str(layout.home / ".cache"))
        monkeypatch.setenv("XDG_STATE_HOME", str(layout.home / ".local" / "state"))
        return layout

    yield make
    for folder in made:
        shutil.rmtree(folder, ignore_errors=True)
    for name in os.listdir("/dev/shm"):
        if token in name:
            os.unlink(os.path.join("/dev/shm", name))


def _fresh_folder() -> Path:
    """A new folder that every user may traverse (tests that run as `nobody` need to reach into it)."""
    folder = Path(tempfile.mkdtemp(prefix="coder-agent-sandbox-test-"))
    folder.chmod(0o755)
    return folder
