"""The client's system prompt (ACP `systemPrompt`, unstable; checked against the unstable schema): appended to the
agent's instructions or in place of them, advertised, stored with the session, and the prompt stays cache-stable.
Also in the shapes other clients send: the RFD's plain string (added to the agent's own), and `_meta.systemPrompt`
as Claude's adapter reads it (acpx's `--append-system-prompt` sends `{"append": …}`; a string replaces)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from coder_agent.model.scripted import Reply, ScriptedModel
from coder_agent.store import SessionStore
from tests.support.acp_client import RpcFailure
from tests.support.scripted_agent import scripted_agent

pytestmark = pytest.mark.anyio

DEFAULT_START = "You are coder-agent"


def system_prompt(mode: str, *texts: str) -> dict[str, Any]:
    return {"mode": mode, "content": [{"type": "text", "text": text} for text in texts]}


def setup(work: Path, **fields: Any) -> dict[str, Any]:
    return {"cwd": str(work), "mcpServers": [], **fields}


def system_of(model: ScriptedModel, request: int = -1) -> str:
    return str(model.requests[request].messages[0]["content"])


async def test_it_is_advertised_with_override(tmp_path: Path) -> None:
    async with scripted_agent(tmp_path, ScriptedModel(), open_session=False) as (client, _, _):
        capabilities = (await client.initialize())["agentCapabilities"]["sessionCapabilities"]
    assert capabilities["systemPrompt"] == {"mode": {"override": {}}}


async def test_appended_instructions_follow_the_agents_own_and_last_the_session(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "store")
    work = tmp_path / "work"
    model = ScriptedModel(default=Reply("ok"))
    async with scripted_agent(tmp_path, model, store=store, open_session=False) as (client, _, _):
        params = setup(work, systemPrompt=system_prompt("append", "Answer in French.", "Be brief."))
        session = (await client.request("session/new", params))["sessionId"]
        await client.prompt(session, "one")
        await client.prompt(session, "two")
    first = system_of(model, 0)
    assert first.startswith(DEFAULT_START)
    assert first.index("# Environment") < first.index("Answer in French.\n\nBe brief.")
    assert system_of(model, 1) == first, "the same bytes on every request: the prompt cache holds"
    async with scripted_agent(tmp_path, model, store=store, open_session=False) as (client, _, _):
        await client.request("session/resume", {"sessionId": session, "cwd": str(work)})
        await client.prompt(session, "three")
    assert system_of(model) == first, "stored with the session: a reopened one starts with the same bytes"
    assert store.load(session).system_prompt == {"text": "Answer in French.\n\nBe brief.", "mode": "append"}


async def test_override_replaces_how_to_work_and_keeps_the_environment(tmp_path: Path) -> None:
    model = ScriptedModel([Reply("ok")])
    work = tmp_path / "work"
    async with scripted_agent(tmp_path, model, open_session=False) as (client, _, _):
        params = setup(work, systemPrompt=system_prompt("override", "You review code. Never edit files."))
        session = (await client.request("session/new", params))["sessionId"]
        await client.prompt(session, "hi")
    prompt = system_of(model)
    assert prompt.startswith("You review code. Never edit files.")
    assert DEFAULT_START not in prompt and "# How to work" not in prompt
    assert f"Working directory: {work}" in prompt


async def test_reopening_with_other_instructions_rebuilds_the_prompt_and_without_keeps_them(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "store")
    work = tmp_path / "work"
    model = ScriptedModel(default=Reply("ok"))
    async with scripted_agent(tmp_path, model, store=store, open_session=False) as (client, _, _):
        session = (await client.request("session/new", setup(work, systemPrompt=system_prompt("append", "Old."))))[
            "sessionId"
        ]
        await client.prompt(session, "one")
        await client.request("session/close", {"sessionId": session})
        await client.request(
            "session/resume", {"sessionId": session, "cwd": str(work), "systemPrompt": system_prompt("append", "New.")}
        )
        await client.prompt(session, "two")
        renewed = system_of(model)
        await client.request("session/close", {"sessionId": session})
        await client.request("session/resume", {"sessionId": session, "cwd": str(work)})
        await client.prompt(session, "three")
    assert "New." in renewed and "Old." not in renewed
    assert system_of(model) == renewed


@pytest.mark.parametrize(
    ("given", "field"),
    [
        (system_prompt("_custom", "x"), "systemPrompt.mode"),
        (system_prompt("append"), "systemPrompt.content"),
        (system_prompt("append", "   "), "systemPrompt.content"),
        ({"mode": "append", "content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]}, "content.0"),
    ],
)
async def test_what_cannot_be_applied_is_refused_and_no_session_is_made(
    tmp_path: Path, given: dict[str, Any], field: str
) -> None:
    store = SessionStore(tmp_path / "store")
    async with scripted_agent(tmp_path, ScriptedModel(), store=store, open_session=False) as (client, _, _):
        with pytest.raises(RpcFailure) as refused:
            await client.request("session/new", setup(tmp_path / "work", systemPrompt=given))
    assert refused.value.code == -32602
    assert field in refused.value.message
    assert not list((tmp_path / "store").glob("*.json"))


@pytest.mark.parametrize(
    ("fields", "replaces"),
    [
        ({"_meta": {"systemPrompt": {"append": "Answer in French."}}}, False),
        ({"_meta": {"systemPrompt": "Answer in French."}}, True),
        ({"systemPrompt": "Answer in French."}, False),
    ],
    ids=["acpx-meta-append", "claude-meta-string", "rfd-plain-string"],
)
async def test_the_shapes_other_clients_send_are_taken(tmp_path: Path, fields: dict[str, Any], replaces: bool) -> None:
    store = SessionStore(tmp_path / "store")
    model = ScriptedModel([Reply("ok")])
    async with scripted_agent(tmp_path, model, store=store, open_session=False) as (client, _, _):
        # the plain string follows the RFD's text, not the SDK's draft schema (an object): not checked against it
        strict = "systemPrompt" not in fields
        session = (await client.request("session/new", setup(tmp_path / "work", **fields), strict=strict))["sessionId"]
        await client.prompt(session, "hi")
    prompt = system_of(model)
    assert "Answer in French." in prompt
    assert prompt.startswith(DEFAULT_START) is not replaces
    assert store.load(session).system_prompt == {
        "text": "Answer in French.",
        "mode": "override" if replaces else "append",
    }


async def test_the_standard_field_wins_over_meta(tmp_path: Path) -> None:
    model = ScriptedModel([Reply("ok")])
    async with scripted_agent(tmp_path, model, open_session=False) as (client, _, _):
        params = setup(
            tmp_path / "work",
            systemPrompt=system_prompt("append", "From the field."),
            _meta={"systemPrompt": {"append": "From _meta."}},
        )
        session = (await client.request("session/new", params))["sessionId"]
        await client.prompt(session, "hi")
    assert "From the field." in system_of(model) and "From _meta." not in system_of(model)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"_meta": {"systemPrompt": {"prepend": "x"}}}, "_meta.systemPrompt"),
        ({"_meta": {"systemPrompt": {"append": " "}}}, "_meta.systemPrompt.append"),
        ({"systemPrompt": ""}, "systemPrompt"),
    ],
)
async def test_a_shape_that_cannot_be_read_is_refused_naming_it(
    tmp_path: Path, fields: dict[str, Any], field: str
) -> None:
    async with scripted_agent(tmp_path, ScriptedModel(), open_session=False) as (client, _, _):
        with pytest.raises(RpcFailure) as refused:
            await client.request("session/new", setup(tmp_path / "work", **fields), strict=False)
    assert refused.value.code == -32602
    assert f"{field}:" in refused.value.message
