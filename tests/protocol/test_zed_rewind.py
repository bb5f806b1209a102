"""The frames Zed sends with `integrations/zed/rewind.patch`, replayed: it sees the rewind extension advertised, gives
each prompt its own message id (`_meta.messageId`), and "edit message" / "Restore Checkpoint" rewind the conversation
to before that message (`_session/rewind`, mode `conversation`: Zed restores the files from its own checkpoint)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from coder_agent.model.scripted import Reply, ScriptedModel
from tests.support.scripted_agent import scripted_agent

pytestmark = pytest.mark.anyio

ZED = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True, "_meta": {"terminal_output": True}}


async def test_zeds_edit_message_frames(tmp_path: Path) -> None:
    model = ScriptedModel([Reply("One."), Reply("Two."), Reply("Edited two.")])
    async with scripted_agent(tmp_path, model, capabilities=ZED, editor=True, open_session=False) as (client, _, _e):
        hello = await client.initialize(ZED)
        rewind = hello["agentCapabilities"]["_meta"]["rewind"]
        assert "_session/rewind" in rewind["methods"], "the patch's supports_rewind() holds"
        session = await client.new_session(str(tmp_path / "work"))
        ids = [str(uuid.uuid4()), str(uuid.uuid4())]
        for text, message_id in zip(["first", "second"], ids, strict=True):
            params = {
                "sessionId": session,
                "prompt": [{"type": "text", "text": text}],
                "_meta": {"messageId": message_id},
            }
            answer = await client.request("session/prompt", params)
            assert answer["userMessageId"] == message_id
        truncate = {"sessionId": session, "messageId": ids[1], "mode": "conversation"}
        answer = await client.request("_session/rewind", truncate)
        assert answer["rewound"] is True and "files" not in answer
        params = {"sessionId": session, "prompt": [{"type": "text", "text": "second, edited"}]}
        await client.request("session/prompt", params | {"_meta": {"messageId": str(uuid.uuid4())}})
    said = [(m["role"], m["content"]) for m in model.last_request.messages if m["role"] in ("user", "assistant")]
    said = [s for s in said if not str(s[1]).startswith("[Environment")]
    assert said == [("user", "first"), ("assistant", "One."), ("user", "second, edited")]
