"""Issue 9 end to end: what needs a real agent process, through a spawned `coder-agent` as an editor runs it.

Containment (absolute, `..`, symlinks) after "always allow edits", broad "always" rules, a long command's
permission request and fetch to 127.0.0.1 with a redirect to it (four sessions of one agent); command bypasses
of a deny rule in full-auto (through the editor's terminal and through local processes); a command in full-auto
that changes files outside; keys in child environments and in the agent's own (`/proc/<pid>/environ`). The user
config is a real file in the spawned agent's config folder. `tests/protocol/test_permissions.py` has the same
families in-process, with more cases each.
"""

from __future__ import annotations

import http.server
import os
import shutil
import sys
import threading
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_client import FakeClient
from tests.support.editor import FakeEditor
from tests.support.fake_llm import Call, FakeLLM, Reply
from tests.support.spawn import spawned_agent
from tests.support.user_config import LANGUAGE_SERVERS_OFF

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]
TURN = 90.0


def calls(*tool_calls: Call) -> list[Reply]:
    return [Reply(calls=[call]) for call in tool_calls] + [Reply("Done.")]


def tool_results(llm: FakeLLM) -> list[str]:
    return [m["content"] for m in llm.last_request["messages"] if m["role"] == "tool"]


@asynccontextmanager
async def agent(
    tmp_path: Path,
    llm: FakeLLM,
    config: str = "",
    env: dict[str, str] | None = None,
    prefix: Sequence[str] = (),
    **caps: bool,
) -> AsyncIterator[tuple[FakeClient, FakeEditor, str, Path]]:
    """A spawned agent with a user config file, a fake editor on `tmp_path/work`, and one session there."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    user_config = tmp_path / "xdg-config" / "coder-agent" / "config.toml"
    user_config.parent.mkdir(parents=True, exist_ok=True)
    user_config.write_text(config + "\n" + LANGUAGE_SERVERS_OFF, encoding="utf-8")
    async with spawned_agent(tmp_path, llm=llm, env=env, prefix=prefix) as spawned:
        editor = FakeEditor(spawned.client, root=work, **caps)
        try:
            await spawned.client.initialize(editor.capabilities())
            session = await spawned.client.new_session(str(work))
            yield spawned.client, editor, session, work
        finally:
            await editor.aclose()


async def test_containment_always_rules_fetch_and_long_commands_in_one_agent(tmp_path: Path, fake_llm: FakeLLM) -> None:
    """Four families, each in its own session of one spawned agent (each also in-process, in more cases)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    local_server, seen = serve_local_pages()
    base = f"http://127.0.0.1:{local_server.server_address[1]}"
    long_command = "echo " + "x" * 150 + " && touch long-pwned"
    fake_llm.script(
        [
            *calls(  # containment after "always allow edits"
                Call("write_file", {"path": "ok.txt", "content": "ok\n"}),
                Call("write_file", {"path": str(outside / "abs.txt"), "content": "pwned"}),
                Call("write_file", {"path": "../outside/dotdot.txt", "content": "pwned"}),
                Call("write_file", {"path": "link/sym.txt", "content": "pwned"}),
            ),
            *calls(  # "always" is no broader than what was shown
                Call("run_command", {"command": "python3 -c 'print(1)'"}),
                Call("run_command", {"command": 'python3 -c \'open("pwned", "w")\''}),
                Call("run_command", {"command": "env FOO=1 true"}),
                Call("run_command", {"command": "env FOO=1 touch pwned"}),
                Call("run_command", {"command": "git diff"}),
                Call("run_command", {"command": "git diff --output=pwned"}),
            ),
            *calls(Call("run_command", {"command": long_command})),  # the whole command is shown
            *calls(Call("fetch", {"url": f"{base}/page"}), Call("fetch", {"url": f"{base}/away"})),
        ]
    )
    try:
        async with agent(tmp_path, fake_llm) as (client, editor, session, work):
            (work / "link").symlink_to(outside)
            editor.permission_answers = ["allow_always"]
            editor.default_permission = "reject_once"
            assert await client.prompt(session, "write", timeout=TURN) == "end_turn"
            assert (work / "ok.txt").exists() and list(outside.iterdir()) == []
            assert len(editor.permission_requests) == 4, "every outside write asked, despite edit:**"
            assert all("rejected" in r for r in tool_results(fake_llm)[1:])

            always = await client.new_session(str(work))
            editor.permission_requests.clear()
            editor.permission_answers = ["allow_always", "reject_once", "allow_always", "reject_once", "allow_always"]
            assert await client.prompt(always, "go", timeout=TURN) == "end_turn"
            assert len(editor.permission_requests) == 6, "each later command asked again"
            assert not (work / "pwned").exists()
            text = client.agent_text(always)
            assert "`execute:=python3 -c 'print(1)'`" in text and "`execute:=env FOO=1 true`" in text
            assert "`execute:git diff`" in text

            long = await client.new_session(str(work))
            editor.permission_requests.clear()
            assert await client.prompt(long, "run", timeout=TURN) == "end_turn"
            request = editor.permission_requests[0]["toolCall"]
            assert request["rawInput"]["command"] == long_command
            shown = [block["content"]["text"] for block in request["content"] if block["type"] == "content"]
            assert any(long_command in text for text in shown)
            assert not (work / "long-pwned").exists()

            fetch = await client.new_session(str(work))
            await client.request("session/set_mode", {"sessionId": fetch, "modeId": "full-auto"})
            editor.permission_requests.clear()
            editor.permission_answers = ["reject_once", "allow_once"]
            assert await client.prompt(fetch, "fetch", timeout=TURN) == "end_turn"
            assert len(editor.permission_requests) == 2, "both fetches of 127.0.0.1 asked in full-auto"
            assert seen == ["/away"], "the rejected one never connected; the redirect to localhost was not followed"
            assert "not followed" in tool_results(fake_llm)[1]
    finally:
        local_server.shutdown()
        local_server.server_close()


def serve_local_pages() -> tuple[http.server.ThreadingHTTPServer, list[str]]:
    """A page server on 127.0.0.1 whose `/away` redirects to localhost; the paths it was asked for."""
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            port = self.server.server_address[1]
            if self.path == "/away":
                self.send_response(302)
                self.send_header("Location", f"http://localhost:{port}/secret")
                self.end_headers()
                return
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"local page")

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server, seen


async def test_a_deny_rule_cannot_be_bypassed_in_full_auto(tmp_path: Path, fake_llm: FakeLLM) -> None:
    disguises = ["true && rm f1", "/bin/rm f2", "\\rm f3", "command rm f4", "X=1 rm f5", "ls f6 | xargs rm",
                 "find . -name f7 -delete", "(rm f8)", "bash -c 'rm f9'", "env rm f10", "echo $(rm f11)"]  # fmt: skip
    fake_llm.script(calls(*(Call("run_command", {"command": c}) for c in disguises)))
    config = 'default_mode = "full-auto"\n[permissions]\ndeny = ["execute:rm"]\n'
    async with agent(tmp_path, fake_llm, config) as (client, editor, session, work):
        for i in range(1, 12):
            (work / f"f{i}").write_text("keep\n")
        assert await client.prompt(session, "clean up", timeout=TURN) == "end_turn"
    assert all((work / f"f{i}").exists() for i in range(1, 12))
    assert all("denied by the rule `execute:rm`" in r for r in tool_results(fake_llm))
    assert editor.terminals == {}


async def test_full_auto_asks_before_a_command_changes_files_outside(tmp_path: Path, fake_llm: FakeLLM) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim").write_text("keep\n")
    commands = ["cd .. && echo pwned > outside/new.txt", "rm -rf ../outside/victim", "cp /etc/hostname ../outside/",
                "mv ../outside/victim here", "touch inside.txt && rm inside.txt"]  # fmt: skip
    fake_llm.script(calls(*(Call("run_command", {"command": c}) for c in commands)))
    async with agent(tmp_path, fake_llm, 'default_mode = "full-auto"\n', terminal=False) as (
        client,
        editor,
        session,
        work,
    ):
        editor.default_permission = "reject_once"
        assert await client.prompt(session, "tidy up", timeout=TURN) == "end_turn"
    assert sorted(p.name for p in outside.iterdir()) == ["victim"]
    assert len(editor.permission_requests) == 4, "each outside change asked; the inside one did not"
    assert tool_results(fake_llm)[4].startswith("Exit code: 0")


async def test_the_adversarial_passs_bypasses_of_a_deny_rule_do_not_run(tmp_path: Path, fake_llm: FakeLLM) -> None:
    disguises = ["r\\\nm f1", "trap -- 'rm f2' EXIT", "printf 'a\\n' > list; mapfile -C 'rm f3' -c 1 < list",
                 "strace rm f4", "git -c alias.x='!rm f5' x", "cat <<EOF\n`rm f6`\nEOF",
                 "source /dev/stdin <<< 'rm f7'", "echo f8 | xargs env rm"]  # fmt: skip
    fake_llm.script(calls(*(Call("run_command", {"command": c}) for c in disguises)))
    config = 'default_mode = "full-auto"\n[permissions]\ndeny = ["execute:rm"]\n'
    async with agent(tmp_path, fake_llm, config, terminal=False) as (client, editor, session, work):
        for i in range(1, 9):
            (work / f"f{i}").write_text("keep\n")
        editor.default_permission = "reject_once"
        assert await client.prompt(session, "clean up", timeout=TURN) == "end_turn"
    assert all((work / f"f{i}").exists() for i in range(1, 9))
    results = tool_results(fake_llm)
    assert all("denied by the rule" in r or "rejected" in r for r in results), results


async def test_child_processes_never_see_a_provider_key(tmp_path: Path, fake_llm: FakeLLM) -> None:
    keys = {"OPENAI_API_KEY": "sk-e2e-openai-0001", "AZURE_API_KEY": "e2e-azure-0002", "COHERE_API_KEY":
            "e2e-cohere-0003", "HF_TOKEN": "hf_e2e_0004", "AWS_SECRET_ACCESS_KEY": "e2e-aws-0005"}  # fmt: skip
    fake_llm.script(calls(Call("run_command", {"command": "env; echo CHILD_DONE"})))
    async with agent(tmp_path, fake_llm, 'default_mode = "full-auto"\n', env=keys, terminal=False) as (
        client,
        editor,
        session,
        work,
    ):
        assert await client.prompt(session, "env", timeout=TURN) == "end_turn"
    output = tool_results(fake_llm)[0]
    assert "CHILD_DONE" in output
    for name, value in keys.items():
        assert f"{name}=" not in output
        assert value not in output
    assert "sk-test" not in output, "the agent's own CODER_AGENT_API_KEY is not passed on"


WITHOUT_CAPABILITIES = ["setpriv", "--inh-caps=-all", "--bounding-set=-all"]
"""As root, the agent and its commands run without capabilities (a user's processes have none), so the kernel's
ptrace rules apply to them as they would to anyone's."""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and PR_SET_DUMPABLE are Linux's")
async def test_a_command_cannot_read_the_keys_from_the_agents_own_environment(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    prefix = WITHOUT_CAPABILITIES if os.geteuid() == 0 else []
    if prefix and shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv to drop capabilities")
    key = "sk-e2e-proc-environ-0123456789"
    # The agent's pid is the first part of the mark it gives every process it starts (its parent may be a supervisor).
    command = "tr '\\0' '\\n' < /proc/${CODER_AGENT_OWNER%%.*}/environ | rev; echo STATUS=${PIPESTATUS[0]}"
    fake_llm.script(calls(Call("run_command", {"command": command})))
    config = 'default_mode = "full-auto"\n'
    async with agent(tmp_path, fake_llm, config, env={"OPENAI_API_KEY": key}, prefix=prefix, terminal=False) as (
        client,
        editor,
        session,
        work,
    ):
        assert await client.prompt(session, "read the agent's environment", timeout=TURN) == "end_turn"
    output = tool_results(fake_llm)[0]
    assert "STATUS=" in output and "STATUS=0" not in output, output
    assert key[::-1] not in output
