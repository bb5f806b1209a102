"""A session that cannot be saved tells the user once: a notice where the editor shows them, else a short message."""

from __future__ import annotations

from pathlib import Path

import pytest

from coder_agent.model.scripted import Reply, ScriptedModel
from coder_agent.store import SessionStore
from tests.support.scripted_agent import scripted_agent

pytestmark = pytest.mark.anyio

NO_FS = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}


@pytest.mark.parametrize("notices", [True, False])
async def test_a_session_that_cannot_be_saved_is_an_error_notice(tmp_path: Path, notices: bool) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the store's folder should be")
    capabilities = {**NO_FS, "session": {"notices": {}}} if notices else NO_FS
    model = ScriptedModel(default=Reply("ok"))
    async with scripted_agent(tmp_path, model, capabilities=capabilities, store=SessionStore(blocked)) as (
        client,
        session,
        _,
    ):
        await client.prompt(session, "one")
        await client.prompt(session, "two")
        title = "This session could not be saved"
        if notices:
            await client.wait_for(lambda: bool(client.session_updates(session, "notice")))
            [notice] = client.session_updates(session, "notice")
            assert notice["severity"] == "error" and notice["title"] == title
            assert "writable" in notice["description"]
        else:
            await client.wait_for(lambda: title in client.agent_text(session))
            assert client.agent_text(session).count(title) == 1, "told once"
