"""coder-agent driven by acpx, the headless ACP client from npm (`acpx --agent 'python -m coder_agent' exec ...`),
with the fake OpenAI-compatible server as the model. Every frame acpx prints (`--format json`) is checked against
the ACP schema, both ways (`acpx.Transcript`). Covered: a one-shot answer, a read and an approved edit changing the
file on disk (`--approve-all`), `--append-system-prompt` reaching the model's system message, a refused edit
(`--deny-all`), and Ctrl-C (acpx sends `session/cancel`)."""

from __future__ import annotations

import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest

from tests.interop.acpx import Transcript, acpx_args
from tests.support.fake_llm import Call, FakeLLM, Reply
from tests.support.spawn import agent_env

pytestmark = pytest.mark.anyio

DENIED = 5  # acpx's exit status when a permission was denied
RUN_WAIT = 120.0  # bounds only: a loaded machine's first agent start imports litellm


def workspace(tmp_path: Path) -> Path:
    work = tmp_path / "project"
    work.mkdir()
    (work / "greet.py").write_text("print('hello')\n", encoding="utf-8")
    return work


def read_then_edit(answer: str) -> list[Reply]:
    """The model reads greet.py, asks to change its greeting, then says `answer`."""
    edit = {"path": "greet.py", "old_string": "hello", "new_string": "bye"}
    read = Call("read_file", {"path": "greet.py"})
    return [Reply(calls=[read]), Reply(calls=[Call("edit_file", edit)]), Reply(answer)]


async def run_acpx(tmp_path: Path, llm: FakeLLM, work: Path, *options: str, status: int = 0) -> Transcript:
    """Run acpx to its end; its exit status must be `status` and its output only frames."""
    env = agent_env(tmp_path, llm)
    with anyio.fail_after(RUN_WAIT):
        done = await anyio.run_process(acpx_args(work, *options), env=env, check=False)
    output = done.stdout.decode()
    assert done.returncode == status, f"acpx exited with {done.returncode}: {done.stderr.decode()[-2000:]}"
    transcript = Transcript.of(output)
    assert transcript.others == []
    return transcript


async def test_a_one_shot_answer(tmp_path: Path, fake_llm: FakeLLM) -> None:
    work = workspace(tmp_path)
    fake_llm.script([Reply("Hello from the fake model.", chunk_size=5)])
    transcript = await run_acpx(tmp_path, fake_llm, work, "exec", "Say hello")
    assert transcript.agent_text().endswith("Hello from the fake model.")
    assert transcript.answer_to("session/prompt")["result"]["stopReason"] == "end_turn"


async def test_an_approved_edit_changes_the_file(tmp_path: Path, fake_llm: FakeLLM) -> None:
    work = workspace(tmp_path)
    fake_llm.script(read_then_edit("Changed the greeting."))
    transcript = await run_acpx(
        tmp_path, fake_llm, work, "--approve-all", "--append-system-prompt", "Answer like a pirate.", "exec", "Say bye"
    )
    assert (work / "greet.py").read_text(encoding="utf-8") == "print('bye')\n"
    assert [call["params"]["path"] for call in transcript.calls("fs/write_text_file")] == [str(work / "greet.py")]
    [asked] = transcript.calls("session/request_permission")
    assert asked["params"]["toolCall"]["content"][0]["type"] == "diff"
    kinds = [u["kind"] for u in transcript.updates("tool_call")]
    assert kinds == ["read", "edit"]
    assert transcript.agent_text().endswith("Changed the greeting.")
    # acpx sends the text as `_meta.systemPrompt.append`: it ends the system message of every model request
    [new] = [f for f in transcript.from_client if f.get("method") == "session/new"]
    assert new["params"]["_meta"]["systemPrompt"]["append"] == "Answer like a pirate."
    for request in fake_llm.requests:
        system = request["messages"][0]
        assert system["role"] == "system" and _text(system).rstrip().endswith("Answer like a pirate.")


async def test_a_denied_edit_leaves_the_file(tmp_path: Path, fake_llm: FakeLLM) -> None:
    work = workspace(tmp_path)
    fake_llm.script(read_then_edit("Left it alone."))
    transcript = await run_acpx(tmp_path, fake_llm, work, "--deny-all", "exec", "Say bye", status=DENIED)
    assert (work / "greet.py").read_text(encoding="utf-8") == "print('hello')\n"
    assert transcript.calls("fs/write_text_file") == []
    [edit] = [u for u in transcript.updates("tool_call") if u["kind"] == "edit"]
    updates = transcript.updates("tool_call_update")
    assert [u.get("status") for u in updates if u["toolCallId"] == edit["toolCallId"]][-1] == "failed"


async def test_ctrl_c_cancels_the_turn(tmp_path: Path, fake_llm: FakeLLM) -> None:
    work = workspace(tmp_path)
    asked, held = threading.Event(), threading.Event()

    def answer(request: dict[str, Any]) -> Reply:
        asked.set()  # the turn is running: the model has been asked
        return Reply("Thinking about it for a long while", chunk_size=4, gate=held, stall_after=3)

    fake_llm.script([answer])
    output = bytearray()

    async def read(stream: anyio.abc.ByteReceiveStream) -> None:
        async for chunk in stream:
            output.extend(chunk)

    try:
        with anyio.fail_after(RUN_WAIT):
            async with (
                await anyio.open_process(
                    acpx_args(work, "exec", "Think"), stderr=subprocess.DEVNULL, env=agent_env(tmp_path, fake_llm)
                ) as process,
                anyio.create_task_group() as task_group,
            ):
                assert process.stdout is not None
                task_group.start_soon(read, process.stdout)
                assert await anyio.to_thread.run_sync(asked.wait, RUN_WAIT)
                process.send_signal(signal.SIGINT)
                await process.wait()
    finally:
        held.set()
    transcript = Transcript.of(output.decode())
    [cancel] = [f for f in transcript.from_client if f.get("method") == "session/cancel"]
    assert transcript.answer_to("session/prompt")["result"]["stopReason"] == "cancelled"
    assert cancel["params"]["sessionId"] == transcript.answer_to("session/new")["result"]["sessionId"]


def _text(message: dict[str, Any]) -> str:
    content = message["content"]
    return content if isinstance(content, str) else "".join(part.get("text", "") for part in content)
