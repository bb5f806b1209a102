"""Spawn `coder-agent` as an editor does (pipes on stdin/stdout) and talk to it with the FakeClient."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from subprocess import PIPE

import anyio
from anyio.abc import Process

from tests.support.acp_client import FakeClient
from tests.support.fake_llm import FakeLLM
from tests.support.user_config import LANGUAGE_SERVERS_OFF

EXIT_WAIT = 10.0


@dataclass
class SpawnedAgent:
    client: FakeClient
    process: Process
    stderr_path: Path

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    async def close_stdin_and_wait(self) -> int:
        """Close the agent's stdin (the editor going away) and wait for it to exit; return its code."""
        assert self.process.stdin is not None
        await self.process.stdin.aclose()
        with anyio.fail_after(EXIT_WAIT):
            return await self.process.wait()


async def poll_until(predicate: Callable[[], bool], timeout: float = 30.0, every: float = 0.02) -> None:
    """Wait, bounded, for a state outside the protocol (a file written, a process gone): there is no event for it."""
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(every)


def stored_session(tmp_path: Path, session_id: str) -> str:
    """The stored file of a spawned agent's session, as text ("" until it exists)."""
    path = tmp_path / "xdg-data" / "coder-agent" / "sessions" / f"{session_id}.json"
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return ""


def agent_env(tmp_path: Path, llm: FakeLLM | None = None, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of an agent spawned in a test: the user's folders under `tmp_path` (agents spawned with
    the same `tmp_path` share their stored sessions, like one user's editors would), none of the user's
    CODER_AGENT_* variables nor colour settings, and with `llm` the fake server as the model. The user config
    there starts with the language servers off (`tests/conftest.py`), unless the test wrote one first."""
    user_config = tmp_path / "xdg-config" / "coder-agent" / "config.toml"
    if not user_config.exists():
        user_config.parent.mkdir(parents=True, exist_ok=True)
        user_config.write_text(LANGUAGE_SERVERS_OFF, encoding="utf-8")
    full_env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CODER_AGENT_")},
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
        "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
    }
    for name in ("FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        full_env.pop(name, None)
    if llm is not None:
        full_env |= {
            "CODER_AGENT_MODEL": "openai/fake-model",
            "CODER_AGENT_API_BASE": llm.base_url,
            "CODER_AGENT_API_KEY": "sk-test",
        }
    return full_env | dict(env or {})


async def _lines(process: Process) -> AsyncIterator[bytes]:
    assert process.stdout is not None
    buffer = b""
    async for chunk in process.stdout:
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            yield line
    assert not buffer.strip(), f"the agent left a partial line on stdout: {buffer[:200]!r}"


@asynccontextmanager
async def spawned_agent(
    tmp_path: Path,
    *args: str,
    llm: FakeLLM | None = None,
    env: Mapping[str, str] | None = None,
    prefix: Sequence[str] = (),
) -> AsyncIterator[SpawnedAgent]:
    """Run `python -m coder_agent` with pipes; on exit, close stdin and make sure the process is gone.

    With `llm`, the agent's model is the fake server (see `agent_env`); `prefix` runs it through a wrapper
    (`setpriv …`).
    """
    stderr_path = tmp_path / "agent-stderr.log"
    full_env = agent_env(tmp_path, llm, {"CODER_AGENT_LOG_LEVEL": "debug", **(env or {})})
    with stderr_path.open("wb") as stderr:
        process = await anyio.open_process(
            [*prefix, sys.executable, "-m", "coder_agent", *args], stdin=PIPE, stdout=PIPE, stderr=stderr, env=full_env
        )
    assert process.stdin is not None
    client = FakeClient(process.stdin.send)
    agent = SpawnedAgent(client, process, stderr_path)
    try:
        async with anyio.create_task_group() as task_group:
            client._task_group = task_group
            task_group.start_soon(client.read_lines, _lines(process))
            try:
                yield agent
            finally:
                if process.returncode is None:
                    await agent.close_stdin_and_wait()
                task_group.cancel_scope.cancel()
    finally:
        if process.returncode is None:
            process.kill()
        await process.aclose()
