"""`coder-agent serve` as a person starts it: it prints where it listens and a token once, an editor's session
over the WebSocket works with the fake model, the token is never in a command's environment, SIGTERM ends it
cleanly, and a taken port or a bad flag is an error that says so."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from anyio.abc import Process

from tests.support.acp_client import WAIT
from tests.support.editor import FakeEditor
from tests.support.fake_llm import Call, FakeLLM, Reply
from tests.support.spawn import agent_env
from tests.support.websocket import websocket_client

pytestmark = pytest.mark.anyio

READY = re.compile(r"ws://127\.0\.0\.1:(\d+)/acp")
TOKEN_LINE = re.compile(r"token \(shown once; set CODER_AGENT_SERVE_TOKEN to choose it\): (\S+)")


async def started(process: Process) -> tuple[int, str]:
    """The port and the token the server printed."""
    assert process.stderr is not None
    text = ""
    with anyio.fail_after(WAIT):
        async for chunk in process.stderr:
            text += chunk.decode()
            if READY.search(text) and "Ctrl-C stops" in text:
                break
    port, token = READY.search(text), TOKEN_LINE.search(text)
    assert port is not None and token is not None, text
    return int(port.group(1)), token.group(1)


async def test_an_editor_session_over_the_served_websocket(tmp_path: Path, fake_llm: FakeLLM) -> None:
    work = tmp_path / "work"
    work.mkdir()
    fake_llm.script(
        [
            Reply(calls=[Call("run_command", {"command": "env > seen-env.txt"})]),
            Reply("Looked around."),
        ]
    )
    env = agent_env(tmp_path, fake_llm, {"CODER_AGENT_LOG_LEVEL": "info"})
    process = await anyio.open_process(
        [sys.executable, "-m", "coder_agent", "serve", "--port", "0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        port, token = await started(process)
        async with websocket_client(f"ws://127.0.0.1:{port}/acp", token) as (client, _):
            editor = FakeEditor(client, root=work, terminal=False)
            editor.permission_answers = ["allow_once"]
            await client.initialize(editor.capabilities())
            session = await client.new_session(str(work))
            assert await client.prompt(session, "look around") == "end_turn"
            assert "Looked around." in client.agent_text(session)
            await editor.aclose()
        seen = (work / "seen-env.txt").read_text()
        assert token not in seen and "CODER_AGENT_SERVE_TOKEN" not in seen
        process.send_signal(signal.SIGTERM)
        with anyio.fail_after(WAIT):
            assert await process.wait() == 0
    finally:
        if process.returncode is None:
            process.kill()
        await process.aclose()  # also closes the stderr pipe, which nothing else would


async def test_a_taken_port_and_a_short_token_are_errors_that_say_so(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = agent_env(tmp_path, env={"CODER_AGENT_SERVE_TOKEN": "a-long-enough-token-here"})
        ran = await anyio.run_process(
            [sys.executable, "-m", "coder_agent", "serve", "--port", str(port)], env=env, check=False
        )
    assert ran.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in ran.stderr.decode()

    short = agent_env(tmp_path, env={"CODER_AGENT_SERVE_TOKEN": "short"})
    ran = await anyio.run_process([sys.executable, "-m", "coder_agent", "serve"], env=short, check=False)
    assert ran.returncode == 2
    assert "CODER_AGENT_SERVE_TOKEN must be at least 16 characters" in ran.stderr.decode()
