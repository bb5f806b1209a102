"""End to end: `coder-agent` spawned over pipes, as an editor runs it."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from tests.support.fake_llm import FakeLLM, Reply
from tests.support.spawn import spawned_agent

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def test_a_session_over_real_pipes_and_a_clean_exit_on_eof(tmp_path: Path, fake_llm: FakeLLM) -> None:
    fake_llm.add(Reply("pong from the model", chunk_size=5))
    async with spawned_agent(tmp_path, llm=fake_llm) as agent:
        client = agent.client
        init = await client.initialize()
        assert init["protocolVersion"] == 1
        await client.send_raw(b"this is not json\n")
        assert (await client.next_stray())["error"]["code"] == -32700
        session_id = await client.new_session(str(tmp_path))
        assert await client.prompt(session_id, "ping", timeout=60) == "end_turn"
        assert client.agent_messages(session_id)[-1] == "pong from the model"
        code = await agent.close_stdin_and_wait()
    assert code == 0
    assert "coder-agent stopped" in agent.stderr
    # Every stdout line was parsed as JSON and schema-checked by the client as it arrived.
    assert client.frames


@pytest.mark.parametrize("level", ["", "info"])
async def test_the_default_log_level_writes_nothing_and_info_lines_are_true(
    tmp_path: Path, fake_llm: FakeLLM, level: str
) -> None:
    """acp.el turns every stderr line into an error event: by default, a good session writes none."""
    fake_llm.add(Reply("pong"))
    async with spawned_agent(tmp_path, llm=fake_llm, env={"CODER_AGENT_LOG_LEVEL": level}) as agent:
        await agent.client.initialize()
        session_id = await agent.client.new_session(str(tmp_path))
        assert await agent.client.prompt(session_id, "ping", timeout=60) == "end_turn"
        assert await agent.close_stdin_and_wait() == 0
    if not level:
        assert agent.stderr == ""
        return
    loaded = next(line for line in agent.stderr.splitlines() if "litellm" in line and "loaded" in line)
    assert re.search(r"litellm \d+\.\d+", loaded), loaded
    assert "warm-up.invalid" not in agent.stderr, "the warm-up's request never left the process"


async def test_sigterm_shuts_down_cleanly(tmp_path: Path, fake_llm: FakeLLM) -> None:
    async with spawned_agent(tmp_path, llm=fake_llm) as agent:
        await agent.client.initialize()
        await agent.client.new_session(str(tmp_path))
        agent.process.send_signal(signal.SIGTERM)
        with anyio.fail_after(10):
            code = await agent.process.wait()
    assert code == 0


def test_stray_output_goes_to_stderr_never_stdout(tmp_path: Path) -> None:
    """After claim_stdio, print(), fd 1 writes and child processes all land on stderr."""
    script = (
        "import os, subprocess, sys\n"
        "from coder_agent.stdio import claim_stdio\n"
        "fds = claim_stdio()\n"
        "print('stray print')\n"
        "os.write(1, b'raw fd write\\n')\n"
        "subprocess.run(['echo', 'child output'], check=True)\n"
        "sys.stdout.write('sys.stdout write\\n')\n"
        "os.set_blocking(fds.write_fd, True)\n"
        'os.write(fds.write_fd, b\'{"jsonrpc": "2.0", "method": "frame"}\\n\')\n'
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, timeout=30, check=True, env=dict(os.environ)
    )
    assert done.stdout == b'{"jsonrpc": "2.0", "method": "frame"}\n'
    for text in (b"stray print", b"raw fd write", b"child output", b"sys.stdout write"):
        assert text in done.stderr
