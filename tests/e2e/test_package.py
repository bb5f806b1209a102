"""The package as users get it: the agent started the way the ACP registry starts it, and the built wheel installed
with `uvx` (which needs uv and, on a cold cache, the package index: that test is marked `packaging`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest

from coder_agent import __version__
from coder_agent.acp import handshake
from tests.support.acp_client import RpcFailure
from tests.support.fake_llm import FakeLLM
from tests.support.spawn import spawned_agent

ROOT = Path(__file__).resolve().parents[2]
MANIFEST: dict[str, Any] = json.loads((ROOT / "acp-registry" / "agent.json").read_text(encoding="utf-8"))
REGISTRY_ARGS: list[str] = MANIFEST["distribution"]["uvx"].get("args", [])
REGISTRY_CAPABILITIES: dict[str, Any] = {
    "terminal": True,
    "fs": {"readTextFile": True, "writeTextFile": True},
    "_meta": {"terminal_output": True, "terminal-auth": True},
}
"""What the registry's auth check sends in `initialize`."""
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": 1, "clientCapabilities": REGISTRY_CAPABILITIES},
}
SUBPROCESS_TIMEOUT = 300  # a cold uv cache downloads hatchling and the locked dependencies


def accepted_by_the_registry(method: dict[str, Any]) -> bool:
    """The registry lists only agents offering an `agent` (the default without a type) or `terminal` method."""
    return method.get("type", "agent") in {"agent", "terminal"}


@pytest.mark.anyio
@pytest.mark.e2e
async def test_started_as_the_registry_starts_it_the_agent_offers_a_working_auth_method(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    """The registry starts `uvx coder-agent==X.Y.Z <args>` with no key in a fresh home and calls `initialize`."""
    (tmp_path / "bare").mkdir()
    (tmp_path / "configured").mkdir()
    async with spawned_agent(tmp_path / "bare", *REGISTRY_ARGS) as agent:
        init = await agent.client.initialize(REGISTRY_CAPABILITIES)
        methods = init["authMethods"]
        assert methods == [handshake.ENV_AUTH_METHOD]
        assert all(accepted_by_the_registry(m) for m in methods)
        assert init["agentInfo"] == {"name": MANIFEST["id"], "title": MANIFEST["name"], "version": MANIFEST["version"]}
        # An `agent` method is one the client may pass to `authenticate`: without a model and key it says what to set.
        with pytest.raises(RpcFailure) as failure:
            await agent.client.request("authenticate", {"methodId": methods[0]["id"]})
        assert failure.value.code == -32000
        assert "CODER_AGENT_MODEL" in failure.value.message
    async with spawned_agent(tmp_path / "configured", *REGISTRY_ARGS, llm=fake_llm) as agent:
        await agent.client.initialize(REGISTRY_CAPABILITIES)
        assert await agent.client.request("authenticate", {"methodId": methods[0]["id"]}) == {}


@pytest.fixture(scope="module")
def uv() -> tuple[str, dict[str, str]]:
    """The uv executable, and an environment that uses the real uv cache.

    Module-scoped so that it runs before the per-test fixture that points XDG_CACHE_HOME (which uv honours) at an
    empty folder: the cache `uv sync` filled is what keeps this test fast.
    """
    executable = os.environ.get("UV") or shutil.which("uv")
    if executable is None:
        pytest.skip("uv is not installed")
    cache = subprocess.run([executable, "cache", "dir"], capture_output=True, text=True, check=True).stdout.strip()
    return executable, {**os.environ, "UV_CACHE_DIR": cache}


def _run(command: list[str], env: dict[str, str], cwd: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, input=stdin, capture_output=True, text=True, env=env, cwd=cwd, timeout=SUBPROCESS_TIMEOUT
    )


@pytest.mark.packaging
def test_the_built_wheel_carries_its_files_and_starts_with_uvx(tmp_path: Path, uv: tuple[str, dict[str, str]]) -> None:
    executable, env = uv
    dist = tmp_path / "dist"
    built = _run([executable, "build", "--out-dir", str(dist), str(ROOT)], env, tmp_path)
    assert built.returncode == 0, built.stderr
    wheel = dist / f"coder_agent-{__version__}-py3-none-any.whl"
    assert wheel.is_file(), sorted(p.name for p in dist.iterdir())

    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        for prompt in (ROOT / "prompts").rglob("*.md"):
            name = f"coder_agent/prompts/{prompt.relative_to(ROOT / 'prompts').as_posix()}"
            assert archive.read(name) == prompt.read_bytes(), name
        assert archive.read("coder_agent/config.example.toml") == (ROOT / "config.example.toml").read_bytes()
        assert f"coder_agent-{__version__}.dist-info/licenses/LICENSE" in names
        assert "coder_agent/py.typed" in names
        metadata = archive.read(f"coder_agent-{__version__}.dist-info/METADATA").decode()
    assert f"\nVersion: {__version__}\n" in metadata
    assert "\nLicense-Expression: Apache-2.0\n" in metadata

    # Install exactly the locked dependencies next to the wheel: `uv sync` already put them in the cache.
    exported = _run(
        [executable, "export", "--frozen", "--no-dev", "--no-hashes", "--no-emit-project", "--directory", str(ROOT)],
        env,
        tmp_path,
    )
    assert exported.returncode == 0, exported.stderr
    constraints = tmp_path / "constraints.txt"
    constraints.write_text(exported.stdout, encoding="utf-8")
    uvx = [executable, "tool", "run", "--isolated", "--constraints", str(constraints), "--from", str(wheel)]

    version = _run([*uvx, "coder-agent", "--version"], env, tmp_path)
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip() == f"coder-agent {__version__}"

    # The installed package reads its prompts from inside itself (cwd is tmp_path, so no checkout is importable).
    code = "from coder_agent.prompts import prompts_dir, load; load('system.md'); print(prompts_dir())"
    found = _run([*uvx, "python", "-c", code], env, tmp_path)
    assert found.returncode == 0, found.stderr
    prompts = Path(found.stdout.strip())
    assert prompts.parts[-3:] == ("site-packages", "coder_agent", "prompts")

    # The registry's check, against the installed command: `initialize` answers with an accepted auth method.
    answered = _run([*uvx, "coder-agent", *REGISTRY_ARGS], env, tmp_path, stdin=json.dumps(INITIALIZE) + "\n")
    assert answered.returncode == 0, answered.stderr
    (line,) = answered.stdout.splitlines()  # stdout carries frames only
    result = json.loads(line)["result"]
    assert result["agentInfo"]["version"] == MANIFEST["version"] == __version__
    assert any(accepted_by_the_registry(m) for m in result["authMethods"])
