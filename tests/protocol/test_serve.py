"""`coder-agent serve`: ACP over a real WebSocket (the `websockets` client library against the server in this
process), with the scripted model and the fake editor: a whole session, a reconnect that loads it, twenty
connections at once, and the bad inputs — no token or a wrong one, another path, no upgrade, too many
connections, an oversized message, and clients that vanish or stop reading."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from websockets.exceptions import InvalidStatus

from coder_agent.cli import parse_args
from coder_agent.model.scripted import Call, Reply, ScriptedModel
from coder_agent.serve import CONNECTION_ID_HEADER, TOKEN_ENV, UsageError, listening, settings_from
from tests.support.acp_client import WAIT
from tests.support.editor import FakeEditor
from tests.support.websocket import TOKEN, acp_server, stop_reading, websocket_client

pytestmark = pytest.mark.anyio


def load_params(session: str, work: Path) -> dict[str, Any]:
    return {"sessionId": session, "cwd": str(work), "mcpServers": []}


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


async def test_a_session_over_websocket_survives_a_reconnect(tmp_path: Path, work: Path) -> None:
    model = ScriptedModel(
        [
            Reply("Writing it.", calls=[Call("write_file", {"path": "notes.txt", "content": "remote\n"})]),
            Reply("Done."),
            Reply("Still here."),
        ]
    )
    async with acp_server(tmp_path, model) as served:
        async with websocket_client(served.url) as (client, socket):
            assert socket.response is not None
            assert socket.response.headers[CONNECTION_ID_HEADER]
            editor = FakeEditor(client, root=work)
            editor.permission_answers = ["allow_once"]
            await client.initialize(editor.capabilities())
            session = await client.new_session(str(work))
            assert await client.prompt(session, "write the notes") == "end_turn"
            assert [r["toolCall"]["title"] for r in editor.permission_requests] == ["Write notes.txt"]
            assert "Done." in client.agent_text(session)
            await editor.aclose()
        assert (work / "notes.txt").read_text() == "remote\n"

        async with websocket_client(served.url) as (client, _):
            await client.initialize()
            await client.request("session/load", load_params(session, work))
            await client.wait_for(lambda: "Done." in client.agent_text(session))
            replayed = client.session_updates(session)
            assert [u["content"]["text"] for u in replayed if u["sessionUpdate"] == "user_message_chunk"] == [
                "write the notes"
            ]
            assert any(u["sessionUpdate"] == "tool_call" and u["status"] == "completed" for u in replayed)
            assert await client.prompt(session, "anything else?") == "end_turn"
            assert "Still here." in client.agent_text(session)
        told = [m["content"] for m in model.last_request.messages if m["role"] == "user"]
        assert told == ["write the notes", "anything else?"]


async def test_twenty_connections_at_once_each_keep_to_their_own_session(tmp_path: Path, work: Path) -> None:
    model = ScriptedModel([], default=lambda request: Reply(f"echo: {request.messages[-1]['content']}"))
    seen: dict[int, tuple[str, str, list[str]]] = {}

    async def one(served_url: str, number: int) -> None:
        async with websocket_client(served_url) as (client, _):
            await client.initialize()
            session = await client.new_session(str(work))
            assert await client.prompt(session, f"prompt {number}") == "end_turn"
            sessions = sorted({u["sessionId"] for u in client.updates})
            seen[number] = (session, client.agent_text(session), sessions)

    async with acp_server(tmp_path, model) as served:
        async with anyio.create_task_group() as tasks:
            for number in range(20):
                tasks.start_soon(one, served.url, number)
        with anyio.fail_after(WAIT):
            await served.server.idle()
    assert len({session for session, _, _ in seen.values()}) == 20
    for number, (session, text, sessions) in seen.items():
        assert text.endswith(f"echo: prompt {number}")  # after the notes on files and terminals, for this client
        assert sessions == [session]


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong-token-0123456789"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": f"Bearer {TOKEN}x"},
        {"Authorization": "Bearer"},
    ],
    ids=["none", "wrong", "not-bearer", "longer", "empty"],
)
async def test_without_the_token_nothing_is_answered_but_401(tmp_path: Path, headers: dict[str, str]) -> None:
    model = ScriptedModel([])
    async with acp_server(tmp_path, model) as served:
        for url in (served.url, served.url.replace("/acp", "/other"), f"{served.url}?token={TOKEN}"):
            with pytest.raises(InvalidStatus) as refused:
                async with websocket_client(url, token=None, additional_headers=headers):
                    pass
            response = refused.value.response
            assert response.status_code == 401
            assert response.headers["WWW-Authenticate"].startswith("Bearer")
            assert CONNECTION_ID_HEADER not in response.headers
            assert bytes(response.body) == b"A bearer token is required.\n"
        http_url = served.url.replace("ws://", "http://")
        async with httpx.AsyncClient() as http:
            plain = await http.get(http_url, headers=headers)
        assert plain.status_code == 401
        assert not served.server.admitted
    assert model.requests == []
    assert not (tmp_path / "store").exists()


async def test_the_token_opens_acp_only_at_its_path_and_over_websocket(tmp_path: Path) -> None:
    async with acp_server(tmp_path, ScriptedModel([])) as served:
        with pytest.raises(InvalidStatus) as elsewhere:
            async with websocket_client(served.url.replace("/acp", "/")):
                pass
        assert elsewhere.value.response.status_code == 404
        async with httpx.AsyncClient() as http:
            plain = await http.get(served.url.replace("ws://", "http://"), headers={"Authorization": f"Bearer {TOKEN}"})
        assert plain.status_code == 426
        assert "WebSocket" in plain.text
        assert plain.headers["Upgrade"] == "websocket"
        assert not served.server.admitted


async def test_past_the_connection_limit_a_client_is_told_to_come_back(tmp_path: Path) -> None:
    async with acp_server(tmp_path, ScriptedModel([]), max_connections=2) as served:
        async with websocket_client(served.url) as (first, _), websocket_client(served.url) as (second, _):
            await first.initialize()
            await second.initialize()
            with pytest.raises(InvalidStatus) as refused:
                async with websocket_client(served.url):
                    pass
            assert refused.value.response.status_code == 503
            assert refused.value.response.headers["Retry-After"]
        with anyio.fail_after(WAIT):
            await served.server.idle()
        async with websocket_client(served.url) as (again, _):
            await again.initialize()


async def test_an_oversized_message_closes_its_connection_and_loses_no_session(tmp_path: Path, work: Path) -> None:
    model = ScriptedModel([Reply("First answer.")])
    async with acp_server(tmp_path, model, max_frame_bytes=64 * 1024) as served:
        async with websocket_client(served.url) as (client, socket):
            await client.initialize()
            session = await client.new_session(str(work))
            assert await client.prompt(session, "a small prompt") == "end_turn"
            big = "x" * (100 * 1024)
            prompt = {"sessionId": session, "prompt": [{"type": "text", "text": big}]}
            await socket.send(json.dumps({"jsonrpc": "2.0", "id": 99, "method": "session/prompt", "params": prompt}))
            with anyio.fail_after(WAIT):
                await socket.wait_closed()
            assert socket.close_code == 1009
            assert "exceeds limit of 65536 bytes" in socket.close_reason
        with anyio.fail_after(WAIT):
            await served.server.idle()
        async with websocket_client(served.url) as (client, _):
            await client.initialize()
            await client.request("session/load", load_params(session, work))
            await client.wait_for(lambda: "First answer." in client.agent_text(session))
    assert len(model.requests) == 1


async def test_a_vanished_client_is_dropped_its_turn_cancelled_and_its_session_saved(
    tmp_path: Path, work: Path
) -> None:
    held = anyio.Event()
    model = ScriptedModel([Reply("Thinking about it", chunk_size=8, hold=held), Reply("Back.")])
    async with acp_server(tmp_path, model, client_timeout=1.0) as served:
        async with websocket_client(served.url) as (client, socket):
            await client.initialize()
            session = await client.new_session(str(work))
            await client.send_message(
                {
                    "jsonrpc": "2.0",
                    "id": 7,
                    "method": "session/prompt",
                    "params": {"sessionId": session, "prompt": [{"type": "text", "text": "a long question"}]},
                }
            )
            await client.wait_for(lambda: "Thinking" in client.agent_text(session))  # the model's, not a notice
            stop_reading(socket)  # gone silent: no pong comes back
            with anyio.fail_after(WAIT):
                await served.server.idle()
            socket.transport.abort()  # the server has gone already; a close handshake would wait for no one
        assert not held.is_set()
        record = served.store.load(session)
        assert any(m.get("role") == "user" and "a long question" in str(m.get("content")) for m in record.messages)

        async with websocket_client(served.url) as (client, _):
            await client.initialize()
            await client.request("session/load", load_params(session, work))
            assert await client.prompt(session, "are you there?") == "end_turn"
            assert "Back." in client.agent_text(session)


async def test_a_client_that_stops_reading_is_dropped_and_its_session_saved(
    tmp_path: Path, work: Path, caplog: pytest.LogCaptureFixture
) -> None:
    flood = "y" * (12 * 1024 * 1024)
    model = ScriptedModel([Reply(flood, chunk_size=256 * 1024)])
    async with acp_server(tmp_path, model, client_timeout=1.0) as served:
        async with websocket_client(served.url, max_queue=1, receive_buffer=16 * 1024, compression=None) as (
            client,
            socket,
        ):
            await client.initialize()
            session = await client.new_session(str(work))
            stop_reading(socket)
            await client.send_message(
                {
                    "jsonrpc": "2.0",
                    "id": 8,
                    "method": "session/prompt",
                    "params": {"sessionId": session, "prompt": [{"type": "text", "text": "say a lot"}]},
                }
            )
            with anyio.fail_after(WAIT):
                await served.server.idle()
            socket.transport.abort()
        record = served.store.load(session)
        assert any(m.get("role") == "user" and m.get("content") == "say a lot" for m in record.messages)
    assert "it read nothing for 1 s" in caplog.text


async def test_loading_a_session_open_elsewhere_takes_it_over(tmp_path: Path, work: Path) -> None:
    held = anyio.Event()
    model = ScriptedModel([Reply("Working on it", chunk_size=7, hold=held), Reply("Taken over.")])
    async with acp_server(tmp_path, model) as served, websocket_client(served.url) as (old, _):
        await old.initialize()
        session = await old.new_session(str(work))
        await old.send_message(
            {
                "jsonrpc": "2.0",
                "id": 5,
                "method": "session/prompt",
                "params": {"sessionId": session, "prompt": [{"type": "text", "text": "first"}]},
            }
        )
        # The model's first chunk, not just any agent text: a client without fs or terminals is told so in an agent
        # message before the model is asked, and a takeover then would leave the held reply to the new prompt.
        await old.wait_for(lambda: "Working" in old.agent_text(session))
        async with websocket_client(served.url) as (new, _):
            await new.initialize()
            await new.request("session/load", load_params(session, work))
            await old.wait_for(lambda: any(f.get("id") == 5 for f in old.stray))
            assert next(f for f in old.stray if f.get("id") == 5)["result"]["stopReason"] == "cancelled"
            assert await new.prompt(session, "second") == "end_turn"
            assert "Taken over." in new.agent_text(session)
        failure = await old.request_raw("session/prompt", {"sessionId": session, "prompt": []})
        assert failure["error"]["code"] == -32002


def test_the_settings_come_from_the_flags_and_a_token_is_made_when_none_is_given() -> None:
    args = parse_args(["serve", "--port", "0", "--max-connections", "3", "--max-frame-mb", "0.5"])
    environ: dict[str, str] = {}
    settings, generated = settings_from(args, environ)
    assert generated
    assert environ[TOKEN_ENV] == settings.token and len(settings.token) >= 32
    assert (settings.host, settings.port, settings.max_connections) == ("127.0.0.1", 0, 3)
    assert settings.max_frame_bytes == 512 * 1024
    assert settings.client_timeout == 30.0
    shown = listening(settings, 4321, generated=True)
    assert "ws://127.0.0.1:4321/acp" in shown and settings.token in shown
    assert settings.token not in listening(settings, 4321, generated=False)

    given, generated = settings_from(args, {TOKEN_ENV: "  a-token-of-my-own-choosing "})
    assert (given.token, generated) == ("a-token-of-my-own-choosing", False)
    v6, _ = settings_from(parse_args(["serve", "--host", "::1"]), {TOKEN_ENV: "a-token-of-my-own-choosing"})
    assert "ws://[::1]:8765/acp" in listening(v6, 8765, generated=False)


@pytest.mark.parametrize(
    ("flags", "environ", "problem"),
    [
        (["--port", "70000"], {}, "--port must be between 0 and 65535"),
        (["--max-connections", "0"], {}, "--max-connections must be at least 1"),
        (["--max-frame-mb", "0"], {}, "--max-frame-mb must be more than 0"),
        (["--client-timeout", "-1"], {}, "--client-timeout must be more than 0"),
        ([], {TOKEN_ENV: "too-short"}, "CODER_AGENT_SERVE_TOKEN must be at least 16 characters"),
    ],
)
def test_unusable_settings_name_the_fix(flags: list[str], environ: dict[str, str], problem: str) -> None:
    with pytest.raises(UsageError, match=re.escape(problem)):
        settings_from(parse_args(["serve", *flags]), dict(environ))
