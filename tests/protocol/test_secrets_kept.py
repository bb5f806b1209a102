"""Held-out attacks on "secrets never leave the process that needs them", run for real: each test names a path
by which a key or token could reach a file, a child or the model, and shows it closed."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest

from coder_agent import secrets
from coder_agent.agent.config_source import ConfigSource
from coder_agent.credentials import Login, LoginStore
from coder_agent.model.scripted import Call, Reply, ScriptedModel
from coder_agent.store import SessionStore
from tests.support.mcp_servers.basic_http import serve_http
from tests.support.scripted_agent import editor_agent, scripted_runner, scripted_source, tool_agent

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
GH_TOKEN = "ghp_editorGaveThisToTheServer0123456789"
BEARER = "Bearer mcp-http-token-0123456789abcdef"


async def test_an_mcp_servers_token_from_the_editor_is_not_stored(tmp_path: Path) -> None:
    """The editor hands a server its token (`env`, an `Authorization` header); the agent does not hold it in its
    own environment, so value-based redaction cannot know it: the session store (and `export --format json`)
    must still not carry it, as it does not carry a model key."""
    store = SessionStore(tmp_path / "store")
    model = ScriptedModel([Reply("Hello.")])
    with serve_http("http", name="web") as url:
        async with tool_agent(tmp_path, model, open_session=False, store=store) as (client, _, _, work):
            servers = [
                {
                    "name": "gh",
                    "command": sys.executable,
                    "args": ["-m", "tests.support.mcp_servers.basic"],
                    "env": [
                        {"name": "PYTHONPATH", "value": str(ROOT)},
                        {"name": "GITHUB_PERSONAL_ACCESS_TOKEN", "value": GH_TOKEN},
                    ],
                },
                {
                    "type": "http",
                    "name": "web",
                    "url": url,
                    "headers": [{"name": "Authorization", "value": BEARER}, {"name": "X-Trace", "value": "on"}],
                },
            ]
            made = await client.request("session/new", {"cwd": str(work), "mcpServers": servers}, timeout=60)
            session = made["sessionId"]
            assert await client.prompt(session, "hi", timeout=60) == "end_turn"
    record = store.load(session)
    stored = json.dumps(record.mcp_servers)
    assert GH_TOKEN not in stored and "mcp-http-token" not in stored
    assert [e["name"] for e in record.mcp_servers[0]["env"]] == ["PYTHONPATH"]
    assert [h["name"] for h in record.mcp_servers[1]["headers"]] == ["X-Trace"]
    from coder_agent.headless.export import render

    assert GH_TOKEN not in render(record, "json")


UNNAMED = {
    "GITHUB_PAT": "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "DEPLOY_PAT": "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789",
    "DB_PASS": "hunter2-but-longer-0123",
    "SLACK_BOT": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "OPENAI": "sk-proj-" + "abcdefghijklmnopqrstuvwxyz012345",
    "GITLAB": "glpat-" + "abcdefghij0123456789",
    "AWS_ID_COPY": "AKIAIOSFODNN7EXAMPLE",
}
"""Secrets whose variable's name does not say so: their value (a well-known token format) or a `PASS`/`PAT` word."""


async def test_a_token_in_a_variable_whose_name_hides_it_never_reaches_a_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in UNNAMED.items():
        monkeypatch.setenv(name, value)
    printer = f"{sys.executable} -c 'import os; print(sorted(os.environ.items()))'"
    model = ScriptedModel([Reply(calls=[Call("run_command", {"command": printer})]), Reply("Done.")])
    async with tool_agent(tmp_path, model, terminal=False, mode="full-auto") as (client, _, session, _):
        assert await client.prompt(session, "print the environment", timeout=60) == "end_turn"
    (result,) = [m["content"] for m in model.last_request.messages if m["role"] == "tool"]
    assert "PATH" in result
    for name, value in UNNAMED.items():
        assert name not in result and value not in result, name


STORED = "sk-stored-login-key-0123456789abcdef"


async def test_a_stored_login_the_session_does_not_use_is_still_redacted_from_what_the_model_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user logged in once (the key is in `credentials.json`: no keyring works here) and now configures a model
    otherwise, so the session never loads the login. A read the user allows of that file (it lies outside the
    workspace, so it asks) must not hand the model the key: it is redacted as every key the agent holds."""
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    logins = LoginStore(tmp_path / "data")
    logins.save(Login("openai", "openai/gpt-5", STORED))
    secrets._held.clear()  # a fresh agent process: it has not read the login yet
    read = Call("read_file", {"path": str(logins.file)})
    model = ScriptedModel([Reply(calls=[read]), Reply("Done.")])

    def source(**fields: object) -> ConfigSource:
        plain = scripted_source(tmp_path, **fields)  # its model's key comes from the environment
        return dataclasses.replace(plain, logins=logins, environ={"CODER_AGENT_API_KEY": "sk-env-key-0123456789"})

    async with editor_agent(tmp_path, scripted_runner(model), source) as (client, editor, session, _):
        editor.permission_answers = ["allow_once"]
        assert await client.prompt(session, "read my login", timeout=60) == "end_turn"
    (result,) = [m["content"] for m in model.last_request.messages if m["role"] == "tool"]
    assert "openai/gpt-5" in result, "the file was read"
    assert STORED not in result
