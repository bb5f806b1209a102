"""Issue 9's reproductions through the fake editor: each one was seen to succeed before, and must not now.

The agent runs in-process with the real tools; the scripted model asks for the calls an adversarial model would
make; the fake editor answers permission requests as scripted and serves files and terminals for real.
"""

from __future__ import annotations

import base64
import http.server
import subprocess
import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coder_agent.model.scripted import Call, Reply, ScriptedModel
from coder_agent.store import SessionStore
from coder_agent.visible import visible
from tests.support import llm_agent
from tests.support.acp_client import RpcFailure
from tests.support.fake_llm import FakeLLM, Fault
from tests.support.scripted_agent import tool_agent

pytestmark = pytest.mark.anyio


def calls(*tool_calls: Call) -> list[Reply]:
    return [Reply(calls=[call]) for call in tool_calls] + [Reply("Done.")]


def tool_results(model: ScriptedModel) -> list[str]:
    return [m["content"] for m in model.last_request.messages if m["role"] == "tool"]


def option_kinds(request: dict[str, Any]) -> list[str]:
    return [option["kind"] for option in request["options"]]


async def test_always_allow_edits_in_the_workspace_never_writes_outside(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    model = ScriptedModel(
        calls(
            Call("write_file", {"path": "notes.txt", "content": "ok\n"}),
            Call("write_file", {"path": str(outside / "abs.txt"), "content": "pwned"}),
            Call("write_file", {"path": "../outside/dotdot.txt", "content": "pwned"}),
            Call("write_file", {"path": "link/through-link.txt", "content": "pwned"}),
            Call("write_file", {"path": "src/link/under-src.txt", "content": "pwned"}),
        )
    )
    async with tool_agent(tmp_path, model) as (client, editor, session, work):
        (work / "link").symlink_to(outside)
        (work / "src").mkdir()
        (work / "src" / "link").symlink_to(outside)
        editor.permission_answers = ["allow_always", "reject_once", "reject_once", "reject_once", "reject_once"]
        await client.prompt(session, "write everywhere")
        assert "Remembered for this session: allow `edit:**`" in client.agent_text(session)
    assert (work / "notes.txt").read_text() == "ok\n"
    assert list(outside.iterdir()) == [], "nothing was written outside"
    asked = editor.permission_requests[1:]
    assert len(asked) == 4, "every outside write asked, despite edit:**"
    for request in asked:
        assert "allow_always" not in option_kinds(request), "no 'always allow' for an outside path"
        assert "outside the workspace" in str(request["toolCall"]["content"])
    assert [r["toolCall"]["locations"][0]["path"] for r in asked] == [
        str(outside / name) for name in ("abs.txt", "dotdot.txt", "through-link.txt", "under-src.txt")
    ], "the request names the real place, not the symlink"


async def test_a_symlink_swapped_in_after_the_check_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    model = ScriptedModel(calls(Call("write_file", {"path": "sub/new.txt", "content": "x"})))
    async with tool_agent(tmp_path, model, fs=False) as (client, editor, session, work):
        (work / "sub").mkdir()
        editor.hold_permissions = True

        async def swap_then_allow() -> None:
            pending = await editor.wait_for_permission_request()
            (work / "sub").rmdir()
            (work / "sub").symlink_to(outside)
            pending.resolve("allow_once")

        import anyio

        async with anyio.create_task_group() as group:
            group.start_soon(swap_then_allow)
            await client.prompt(session, "write")
    assert list(outside.iterdir()) == []
    assert "changed since it was checked" in tool_results(model)[0]


async def test_accept_edits_cannot_rewrite_what_an_allowed_git_command_runs(tmp_path: Path) -> None:
    """`.git/config` (core.fsmonitor, aliases, pagers) and hooks decide what `git status` runs: in accept-edits
    mode, with `git status` allowed, an edit there would be a command nobody approved."""
    config = "[core]\n\tfsmonitor = touch pwned\n"
    model = ScriptedModel(
        calls(
            Call("read_file", {"path": ".git/config"}),
            Call("write_file", {"path": ".git/config", "content": config}),
            Call("write_file", {"path": ".git/hooks/post-checkout", "content": "#!/bin/sh\ntouch pwned\n"}),
            Call("run_command", {"command": "git status"}),
        )
    )
    allowed = {"allow": ["execute:git status"]}
    async with tool_agent(tmp_path, model, mode="accept-edits", terminal=False, permissions=allowed) as (
        client,
        editor,
        session,
        work,
    ):
        subprocess.run(["git", "init", "-q", str(work)], check=True)
        before = (work / ".git" / "config").read_text()
        editor.default_permission = "reject_once"
        await client.prompt(session, "speed up git")
    assert len(editor.permission_requests) == 2, "both edits asked; git status ran without asking"
    for request in editor.permission_requests:
        assert "allow_always" not in option_kinds(request)
        assert "whose files decide what git or the agent runs" in str(request["toolCall"]["content"])
    assert (work / ".git" / "config").read_text() == before
    assert not (work / "pwned").exists()
    assert tool_results(model)[3].startswith("Exit code: 0")


async def test_a_path_with_a_nul_byte_is_a_failed_call_not_a_crash(tmp_path: Path) -> None:
    bad = "notes\x00.txt"
    model = ScriptedModel(
        calls(
            Call("write_file", {"path": bad, "content": "x"}),
            Call("read_file", {"path": bad}),
            Call("edit_file", {"path": bad, "old_string": "a", "new_string": "b"}),
            Call("grep", {"pattern": "x", "path": bad}),
            Call("glob", {"pattern": "*", "path": bad}),
        )
    )
    async with tool_agent(tmp_path, model, mode="full-auto") as (client, editor, session, work):
        assert await client.prompt(session, "go") == "end_turn"
    results = tool_results(model)
    assert len(results) == 5 and all("NUL" in r for r in results), results


async def test_deny_rules_hold_against_every_disguise_in_full_auto(tmp_path: Path) -> None:
    disguises = ["true && rm f1", "echo; rm f2", "/bin/rm f3", "\\rm f4", "'rm' f5", "command rm f6",
                 "X=1 rm f7", "ls f8 | xargs rm", "find . -name f9 -delete", "(rm f10)", "bash -c 'rm f11'",
                 "sh -c \"rm f12\""]  # fmt: skip
    model = ScriptedModel(calls(*(Call("run_command", {"command": c}) for c in disguises)))
    async with tool_agent(tmp_path, model, mode="full-auto", permissions={"deny": ["execute:rm"]}) as (
        client,
        editor,
        session,
        work,
    ):
        for i in range(1, 13):
            (work / f"f{i}").write_text("keep\n")
        await client.prompt(session, "delete them")
    results = tool_results(model)
    assert all("denied by the rule `execute:rm`" in r for r in results), results
    assert all((work / f"f{i}").exists() for i in range(1, 13))
    assert editor.terminals == {} and editor.permission_requests == []


async def test_always_for_an_interpreter_or_a_write_flag_is_the_exact_command(tmp_path: Path) -> None:
    model = ScriptedModel(
        calls(
            Call("run_command", {"command": "bash -c 'true'"}),
            Call("run_command", {"command": "bash -c 'rm victim'"}),
            Call("run_command", {"command": "python3 -c 'print(1)'"}),
            Call("run_command", {"command": "python3 -c 'import os; os.remove(\"victim\")'"}),
            Call("run_command", {"command": "env FOO=1 true"}),
            Call("run_command", {"command": "env FOO=1 touch pwned"}),
            Call("run_command", {"command": "git diff"}),
            Call("run_command", {"command": "git diff --output=written.txt"}),
        )
    )
    async with tool_agent(tmp_path, model, terminal=False) as (client, editor, session, work):
        (work / "victim").write_text("keep\n")
        always, once = "allow_always", "reject_once"
        editor.permission_answers = [always, once, always, once, always, once, always]
        editor.default_permission = "reject_once"
        await client.prompt(session, "go")
    labels = [[o["name"] for o in r["options"]] for r in editor.permission_requests]
    assert "Always allow `true …` commands" in labels[0]
    assert "Always allow exactly `python3 -c 'print(1)'`" in labels[2]
    assert "Always allow exactly `env FOO=1 true`" in labels[4]
    assert "Always allow `git diff …` commands" in labels[6]
    assert len(editor.permission_requests) == 8, "each different command asked again"
    assert (work / "victim").exists() and not (work / "written.txt").exists() and not (work / "pwned").exists()


async def test_a_long_command_is_shown_whole_in_the_permission_request(tmp_path: Path) -> None:
    command = "echo " + " ".join(f"step{i}" for i in range(40)) + " && touch pwned"
    model = ScriptedModel(calls(Call("run_command", {"command": command})))
    async with tool_agent(tmp_path, model) as (client, editor, session, work):
        editor.default_permission = "reject_once"
        await client.prompt(session, "run")
    request = editor.permission_requests[0]["toolCall"]
    assert len(request["title"]) <= 120
    assert request["rawInput"]["command"] == command
    shown = "".join(block["content"]["text"] for block in request["content"] if block["type"] == "content")
    assert command in shown and "&& touch pwned" in shown
    assert not (work / "pwned").exists()


@pytest.mark.parametrize("hiding", ["\x1b[2K\x1b[G", "\u202e", "\r"])
async def test_a_request_shows_characters_that_could_hide_part_of_the_command(tmp_path: Path, hiding: str) -> None:
    command = f"touch pwned; {hiding}echo safe"
    model = ScriptedModel(calls(Call("run_command", {"command": command})))
    async with tool_agent(tmp_path, model) as (client, editor, session, work):
        editor.default_permission = "reject_once"
        await client.prompt(session, "run")
    request = editor.permission_requests[0]["toolCall"]
    assert request["rawInput"]["command"] == command
    shown = "".join(block["content"]["text"] for block in request["content"] if block["type"] == "content")
    assert hiding not in shown and hiding not in request["title"]
    assert visible(hiding) in shown and "touch pwned" in shown
    assert "control or invisible characters" in shown
    assert not (work / "pwned").exists()


async def test_what_cannot_be_parsed_gets_no_always(tmp_path: Path) -> None:
    model = ScriptedModel(calls(Call("run_command", {"command": "$CMD f"})))
    async with tool_agent(tmp_path, model) as (client, editor, session, work):
        editor.default_permission = "reject_once"
        await client.prompt(session, "run")
    assert option_kinds(editor.permission_requests[0]) == ["allow_once", "reject_once"]


async def test_no_key_reaches_a_child_a_result_a_request_or_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = {
        "OPENAI_API_KEY": "sk-openai-leak-000001",
        "AZURE_API_KEY": "azure-leak-000002",
        "COHERE_API_KEY": "cohere-leak-000003",
        "HF_TOKEN": "hf_leak_000004",
        "AWS_SECRET_ACCESS_KEY": "aws-leak-000005",
        "CODER_AGENT_API_KEY": "sk-agent-leak-000006",
    }
    for name, value in keys.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HARMLESS_SETTING", "visible")
    store = SessionStore(tmp_path / "store")
    model = ScriptedModel(
        calls(
            Call("run_command", {"command": "env"}),
            Call("read_file", {"path": ".env"}),
            Call("write_file", {"path": "copy.env", "content": "OPENAI_API_KEY=sk-openai-leak-000001\n"}),
        )
    )
    async with tool_agent(tmp_path, model, terminal=False, store=store) as (client, editor, session, work):
        (work / ".env").write_text("AWS_SECRET_ACCESS_KEY=aws-leak-000005\n")
        await client.prompt(session, "look")
        frames = str(client.session_updates(session)) + str(editor.permission_requests)
    results = "\n".join(tool_results(model))
    assert "HARMLESS_SETTING=visible" in results
    stored = "".join(p.read_text() for p in (tmp_path / "store").rglob("*") if p.is_file())
    for value in keys.values():
        assert value not in results, value
        assert value not in frames, value
        assert value not in stored, value
    assert "[redacted AWS_SECRET_ACCESS_KEY]" in results
    assert "[redacted OPENAI_API_KEY]" in str(editor.permission_requests[-1])


# On the fake LLM: the key comes back in a provider's HTTP error bodies, through litellm's retries and errors.
async def test_a_provider_message_that_echoes_a_key_reaches_the_editor_redacted(
    tmp_path: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-ant-echoed-by-provider-0123456789"
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    fake_llm.script(
        [
            Fault.status(500, message=f"upstream saw {key}", retry_after=0),
            Fault.status(401, message=f"Incorrect API key provided: {key}"),
        ]
    )
    async with llm_agent.tool_agent(tmp_path, fake_llm, retries=1) as (client, editor, session, work):
        with pytest.raises(RpcFailure) as failed:
            await client.prompt(session, "hi")
    assert "Incorrect API key provided" in str(failed.value)
    assert key not in str(client.frames)
    assert "[redacted ANTHROPIC_API_KEY]" in str(client.frames)


@pytest.mark.parametrize("encoding", ["url", "base64-basic-auth", "hex"])
async def test_a_provider_message_that_echoes_an_encoded_key_reaches_the_editor_redacted(
    tmp_path: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch, encoding: str
) -> None:
    key = "sk-ant-echoed/encoded+by=provider-0123456789"
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    echoed = {
        "url": urllib.parse.quote(key, safe=""),
        "base64-basic-auth": base64.b64encode(f"me:{key}".encode()).decode(),
        "hex": key.encode().hex(),
    }[encoding]
    fake_llm.script([Fault.status(401, message=f"Rejected credentials in request: {echoed}")])
    async with llm_agent.tool_agent(tmp_path, fake_llm, retries=0) as (client, editor, session, work):
        with pytest.raises(RpcFailure) as failed:
            await client.prompt(session, "hi")
    assert "Rejected credentials" in str(failed.value)
    assert echoed not in str(client.frames) and echoed not in str(failed.value)
    assert "[redacted ANTHROPIC_API_KEY]" in str(client.frames)


async def test_editor_terminals_get_the_keys_blanked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-terminal-leak-01")
    model = ScriptedModel(calls(Call("run_command", {"command": 'echo "[$ANTHROPIC_API_KEY]"'})))
    async with tool_agent(tmp_path, model, mode="full-auto") as (client, editor, session, work):
        await client.prompt(session, "env")
    terminal = next(iter(editor.terminals.values()))
    assert terminal.env["ANTHROPIC_API_KEY"] == ""
    assert terminal.text().strip() == "[]"


@pytest.fixture
def local_server() -> Iterator[tuple[str, list[str]]]:
    """An HTTP server on 127.0.0.1: `/page` answers, `/hop` redirects within the host, `/away` to localhost."""
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            port = self.server.server_address[1]
            target = {
                "/hop": "/page",
                "/away": f"http://localhost:{port}/secret",
                "/port": "http://127.0.0.1:9/secret",
            }.get(self.path)
            if target:
                self.send_response(302)
                self.send_header("Location", target)
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.wfile.write(f"page {self.path} for {self.headers['Host']}".encode())

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


async def test_fetch_of_a_local_address_asks_even_in_full_auto(
    tmp_path: Path, local_server: tuple[str, list[str]]
) -> None:
    base, seen = local_server
    model = ScriptedModel(calls(Call("fetch", {"url": f"{base}/page"})))
    async with tool_agent(tmp_path, model, mode="full-auto") as (client, editor, session, work):
        editor.default_permission = "reject_once"
        await client.prompt(session, "fetch")
    request = editor.permission_requests[0]
    assert "loopback" in str(request["toolCall"]["content"])
    assert "allow_always" not in option_kinds(request)
    assert seen == [], "nothing reached the local server"


async def test_fetch_redirects_are_judged_hop_by_hop(tmp_path: Path, local_server: tuple[str, list[str]]) -> None:
    base, seen = local_server
    model = ScriptedModel(calls(Call("fetch", {"url": f"{base}/hop"}), Call("fetch", {"url": f"{base}/away"})))
    async with tool_agent(tmp_path, model, mode="full-auto", permissions={"allow": ["fetch:127.0.0.1"]}) as (
        client,
        editor,
        session,
        work,
    ):
        await client.prompt(session, "fetch")
    hop, away = tool_results(model)
    assert "page /page for 127.0.0.1:" in hop, "a redirect within the approved host is followed"
    assert "localhost" in away and "not followed" in away
    assert "/secret" not in seen
    assert editor.permission_requests == []


async def test_a_local_page_allowed_once_cannot_redirect_to_another_port(
    tmp_path: Path, local_server: tuple[str, list[str]]
) -> None:
    """Allowing one local page (a dev server) is not allowing every service on that machine."""
    base, seen = local_server
    model = ScriptedModel(calls(Call("fetch", {"url": f"{base}/port"}), Call("fetch", {"url": f"{base}/hop"})))
    async with tool_agent(tmp_path, model, mode="full-auto") as (client, editor, session, work):
        editor.default_permission = "allow_once"
        await client.prompt(session, "fetch")
    other_port, same_port = tool_results(model)
    assert "127.0.0.1:9/secret" in other_port and "not followed" in other_port, other_port
    assert "page /page for 127.0.0.1:" in same_port, "a redirect to the same host and port is followed"


async def test_fetch_connects_to_the_address_it_judged_not_a_second_lookup(
    local_server: tuple[str, list[str]],
) -> None:
    """DNS rebinding: the name is never looked up again after the check (this one does not even resolve)."""
    from coder_agent.permissions.network import judge
    from coder_agent.tools.webpage import fetch

    base, seen = local_server
    port = base.rsplit(":", 1)[1]
    target = judge(f"http://rebind.invalid:{port}/page", ("127.0.0.1",))
    assert target.local is not None

    async def never(hop: object) -> str | None:
        return "no hops in this test"

    page = await fetch(target, never)
    assert page.text == f"page /page for rebind.invalid:{port}"
    assert seen == ["/page"]
