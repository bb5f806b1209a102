"""Terminal authentication (ACP v1.25's `terminal` auth method) and what `coder-agent login` stored, through the
protocol: the method offered to clients that can run it, `auth_required` naming it, a stored login giving a session
its model and key (never a child's environment, redacted like any key), `logout` removing it. The login itself runs
on a pseudo-terminal in tests/e2e/test_login.py."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from coder_agent.acp import handshake
from coder_agent.agent.config_source import LOGIN_METHOD, ConfigSource
from coder_agent.agent.model_runner import ModelRunner
from coder_agent.config import CliOverrides
from coder_agent.credentials import Login, LoginStore
from coder_agent.model.base import ModelSettings
from coder_agent.model.scripted import Call, Reply, ScriptedModel
from tests.support.acp_client import FakeClient, RpcFailure, in_process_agent
from tests.support.editor import FakeEditor

pytestmark = pytest.mark.anyio

KEY = "sk-from-the-login-0123456789abcdef"
TERMINAL_AUTH = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True, "auth": {"terminal": True}}


@asynccontextmanager
async def agent(
    tmp_path: Path, model: ScriptedModel, environ: dict[str, str] | None = None
) -> AsyncIterator[tuple[FakeClient, FakeEditor, list[ModelSettings]]]:
    """An agent whose config names no model and no key, over `tmp_path/data`'s stored login; yields the client, an
    editor on `tmp_path/work`, and the settings each model was made with."""
    (tmp_path / "work").mkdir(exist_ok=True)
    made: list[ModelSettings] = []

    def factory(settings: ModelSettings) -> ScriptedModel:
        made.append(settings)
        return model

    source = ConfigSource(
        CliOverrides(),
        environ=environ or {},
        user_config_path=tmp_path / "none.toml",
        logins=LoginStore(tmp_path / "data"),
    )
    async with in_process_agent(lambda s: ModelRunner(s, model_factory=factory), None, source) as client:
        editor = FakeEditor(client, root=tmp_path / "work")
        try:
            await client.initialize(TERMINAL_AUTH)
            yield client, editor, made
        finally:
            await editor.aclose()


def new_session(client: FakeClient, tmp_path: Path) -> Any:
    return client.request("session/new", {"cwd": str(tmp_path / "work"), "mcpServers": []})


async def test_the_terminal_method_is_offered_to_clients_that_run_one_and_logout_is_advertised(
    tmp_path: Path,
) -> None:
    assert handshake.LOGIN_AUTH_METHOD["id"] == LOGIN_METHOD
    async with agent(tmp_path, ScriptedModel()) as (client, _, _):
        pass
    offered = client.frames[0]["result"]
    assert offered["authMethods"][0] == {**handshake.LOGIN_AUTH_METHOD, "type": "terminal", "args": ["login"]}
    assert offered["agentCapabilities"]["auth"] == {"logout": {}}
    async with in_process_agent() as plain:
        result = await plain.initialize({"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False})
    assert [m["id"] for m in result["authMethods"]] == ["env-api-key"], "terminal methods only to clients that ask"


async def test_auth_required_names_the_login_method(tmp_path: Path) -> None:
    async with agent(tmp_path, ScriptedModel()) as (client, _, _):
        with pytest.raises(RpcFailure) as refused:
            await new_session(client, tmp_path)
    assert refused.value.code == -32000
    assert "coder-agent login" in refused.value.message and f'"{LOGIN_METHOD}"' in refused.value.message
    assert refused.value.error["data"] == {"authMethodId": LOGIN_METHOD}


async def test_a_stored_login_gives_the_session_its_model_and_key_kept_as_a_key(tmp_path: Path) -> None:
    LoginStore(tmp_path / "data").save(Login("openai", "openai/gpt-4.1", KEY))
    model = ScriptedModel([Reply(calls=[Call("run_command", {"command": "env"})]), Reply(f"The key is {KEY}.")])
    async with agent(tmp_path, model) as (client, editor, made):
        session = (await new_session(client, tmp_path))["sessionId"]
        editor.permission_answers = ["allow_once"]
        assert await client.prompt(session, "show the environment") == "end_turn"
        shown = client.agent_text(session)
    assert made[-1].model == "openai/gpt-4.1" and made[-1].api_key == KEY
    [terminal] = editor.terminals.values()
    assert KEY not in terminal.text() and KEY not in str(terminal.env), "no child gets the stored key"
    assert KEY not in shown and "[redacted stored login]" in shown
    assert KEY not in str(client.frames)


async def test_a_key_in_the_environment_wins_and_another_providers_model_gets_no_stored_key(tmp_path: Path) -> None:
    LoginStore(tmp_path / "data").save(Login("anthropic", "anthropic/claude-sonnet-4-5", KEY))
    async with agent(tmp_path, ScriptedModel(default=Reply("ok")), {"ANTHROPIC_API_KEY": "sk-env-key-99999"}) as (
        client,
        _,
        made,
    ):
        session = (await new_session(client, tmp_path))["sessionId"]
        assert await client.prompt(session, "hi") == "end_turn"
    assert made[-1].api_key is None, "litellm reads the provider's own variable"
    environ = {"CODER_AGENT_MODEL": "openai/gpt-4.1"}
    async with agent(tmp_path, ScriptedModel(), environ) as (client, _, _):
        with pytest.raises(RpcFailure) as refused:
            await new_session(client, tmp_path)
    assert refused.value.code == -32000 and "OPENAI_API_KEY" in refused.value.message


async def test_logout_removes_the_stored_login_and_every_session_needs_one_again(tmp_path: Path) -> None:
    store = LoginStore(tmp_path / "data")
    store.save(Login("openai", "openai/gpt-4.1", KEY))
    async with agent(tmp_path, ScriptedModel(default=Reply("ok"))) as (client, _, _):
        session = (await new_session(client, tmp_path))["sessionId"]
        assert await client.request("logout", {}) == {}
        assert store.load() is None and not store.file.exists()
        with pytest.raises(RpcFailure) as refused:
            await new_session(client, tmp_path)
        assert refused.value.code == -32000
        with pytest.raises(RpcFailure) as stopped:
            await client.prompt(session, "still here?")
        assert stopped.value.code == -32000, "an open session stops using the key too"
        assert await client.request("logout", {}) == {}, "nothing left to remove is no error"
