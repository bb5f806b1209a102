"""`coder-agent run` with MCP servers and more folders from the command line: `--mcp-config FILE` starts a real
MCP server whose tools the model calls, `--continue` of an editor's session starts that session's servers again
(their key values never stored), and `--add-dir DIR` is a folder the tools work in without asking."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.support.fake_llm import Call, FakeLLM, Reply
from tests.support.headless import run_here
from tests.support.spawn import spawned_agent, stored_session

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]
SERVER = {
    "command": sys.executable,
    "args": ["-m", "tests.support.mcp_servers.basic"],
    "env": {"PYTHONPATH": str(ROOT)},
}


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def tool_names(llm: FakeLLM) -> list[str]:
    return [tool["function"]["name"] for tool in llm.last_request.get("tools", [])]


def tool_results(llm: FakeLLM) -> list[str]:
    return [str(m["content"]) for m in llm.last_request["messages"] if m["role"] == "tool"]


async def test_mcp_config_starts_the_files_servers(tmp_path: Path, work: Path, fake_llm: FakeLLM) -> None:
    config = tmp_path / ".mcp.json"
    config.write_text(json.dumps({"mcpServers": {"tools": SERVER, "off": {"command": "never", "disabled": True}}}))
    fake_llm.script([Reply(calls=[Call("mcp__tools__peek", {})]), Reply("All quiet there.")])
    ran = await run_here(tmp_path, "--cwd", str(work), "--mcp-config", str(config), "peek", llm=fake_llm)
    assert ran.code == 0, ran.stderr
    assert "mcp__tools__peek" in tool_names(fake_llm)
    assert tool_results(fake_llm) == ["all quiet"]
    assert ran.stdout == "All quiet there.\n"


async def test_a_bad_mcp_config_is_a_usage_error(tmp_path: Path, work: Path, fake_llm: FakeLLM) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"gh": {"command": "x", "env": {"T": "${NOT_SET_ANYWHERE}"}}}}))
    from coder_agent.cli import parse_args
    from coder_agent.headless.run_options import UsageError, run_options

    args = parse_args(["run", "--mcp-config", str(config), "hi"])
    with pytest.raises(UsageError, match=r"--mcp-config .*mcp.json: server 'gh': env.T: \$\{NOT_SET_ANYWHERE\}"):
        run_options(args, __import__("io").BytesIO(), stdin_tty=True, stderr_tty=True)


async def test_continuing_an_editors_session_starts_its_mcp_servers(
    tmp_path: Path, work: Path, fake_llm: FakeLLM
) -> None:
    key = "sk-run-mcp-0123456789abcdef"  # the model's key: given to a server too, it is never stored
    env = {"CODER_AGENT_API_KEY": key}
    server = {
        "name": "tools",
        "command": sys.executable,
        "args": SERVER["args"],
        "env": [{"name": "PYTHONPATH", "value": str(ROOT)}, {"name": "LEAKED", "value": key}],
    }
    fake_llm.script([Reply("Hello from the editor.")])
    async with spawned_agent(tmp_path, llm=fake_llm, env=env) as agent:
        await agent.client.initialize()
        made = await agent.client.request("session/new", {"cwd": str(work), "mcpServers": [server]}, timeout=60)
        session = made["sessionId"]
        assert await agent.client.prompt(session, "hi", timeout=60) == "end_turn"
    stored = json.loads(stored_session(tmp_path, session))["mcp_servers"]
    assert [s["name"] for s in stored] == ["tools"]
    assert key not in json.dumps(stored) and [e["name"] for e in stored[0]["env"]] == ["PYTHONPATH"]

    fake_llm.script([Reply(calls=[Call("mcp__tools__peek", {})]), Reply("Still quiet.")])
    ran = await run_here(tmp_path, "--cwd", str(work), "--continue", "peek again", llm=fake_llm, env=env)
    assert ran.code == 0, ran.stderr
    assert "mcp__tools__peek" in tool_names(fake_llm)
    assert tool_results(fake_llm) == ["all quiet"]


async def test_add_dir_is_a_folder_the_tools_work_in(tmp_path: Path, work: Path, fake_llm: FakeLLM) -> None:
    other = tmp_path / "library"
    other.mkdir()
    (other / "notes.md").write_text("shared notes\n")
    read = Reply.tool("read_file", {"path": str(other / "notes.md")})
    fake_llm.script([read, Reply("Read it.")])
    ran = await run_here(
        tmp_path, "--cwd", str(work), "--add-dir", str(other), "--output-format", "json", "read", llm=fake_llm
    )
    assert ran.code == 0, ran.stderr
    assert "shared notes" in tool_results(fake_llm)[0]

    fake_llm.script([read])  # without it the folder is outside the workspace: the read asks, and no one can answer
    outside = await run_here(tmp_path, "--cwd", str(work), "--mode", "default", "read", llm=fake_llm)
    assert outside.code == 3

    fake_llm.script([read, Reply("Again.")])
    session = ran.json()["session_id"]
    again = await run_here(tmp_path, "--resume", session, "again", llm=fake_llm)  # the session keeps the folder
    assert again.code == 0, again.stderr
    assert "shared notes" in tool_results(fake_llm)[-1]


async def test_add_dir_must_be_a_folder(tmp_path: Path, work: Path) -> None:
    from coder_agent.cli import parse_args
    from coder_agent.headless.run_options import UsageError, run_options

    args = parse_args(["run", "--add-dir", str(tmp_path / "nowhere"), "hi"])
    with pytest.raises(UsageError, match=r"--add-dir .*nowhere: no such folder"):
        run_options(args, __import__("io").BytesIO(), stdin_tty=True, stderr_tty=True)
