"""The interop helpers (`tests/interop/`) catch what they are there to catch: acpx's printed frames are split back
into the two senders (both number requests from 0) and schema-checked, and the SDK editor flags an agent frame
the SDK's models reject even though the SDK itself only logs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from acp.connection import StreamDirection, StreamEvent

from tests.interop.acpx import Transcript
from tests.interop.sdk_client import SdkEditor

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
INIT_ANSWER = {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1}}
NEW = {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/w", "mcpServers": []}}
NEW_ANSWER = {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s"}}
PROMPT = {"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": "s", "prompt": []}}
PERMISSION = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "session/request_permission",
    "params": {
        "sessionId": "s",
        "toolCall": {"toolCallId": "c"},
        "options": [{"optionId": "a", "name": "Allow", "kind": "allow_once"}],
    },
}
PERMISSION_ANSWER = {"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "selected", "optionId": "a"}}}
PROMPT_ANSWER = {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}


def lines(*frames: object) -> str:
    return "\n".join(json.dumps(frame) for frame in frames)


def test_a_transcript_gives_each_answer_to_the_side_that_was_asked() -> None:
    frames = (INIT, INIT_ANSWER, NEW, NEW_ANSWER, PROMPT, PERMISSION, PERMISSION_ANSWER, PROMPT_ANSWER)
    transcript = Transcript.of(lines(*frames) + "\nnot a frame")
    assert transcript.from_client == [INIT, NEW, PROMPT, PERMISSION_ANSWER]
    assert transcript.from_agent == [INIT_ANSWER, NEW_ANSWER, PERMISSION, PROMPT_ANSWER]
    assert transcript.answer_to("session/prompt") == PROMPT_ANSWER
    assert transcript.others == ["not a frame"]


def test_a_transcript_rejects_an_agent_frame_off_the_schema() -> None:
    bad_answer = {"jsonrpc": "2.0", "id": 1, "result": {"session": "s"}}  # no sessionId
    with pytest.raises(AssertionError):
        Transcript.of(lines(INIT, INIT_ANSWER, NEW, bad_answer))


def test_the_sdk_editor_flags_an_update_the_sdk_cannot_parse(tmp_path: Path) -> None:
    editor = SdkEditor(tmp_path)
    for frame in (INIT, NEW):
        editor.observe(StreamEvent(StreamDirection.OUTGOING, frame))
    for frame in (INIT_ANSWER, NEW_ANSWER):
        editor.observe(StreamEvent(StreamDirection.INCOMING, frame))
    assert editor.problems == []
    update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text"}}  # no text
    bad = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": update}}
    editor.observe(StreamEvent(StreamDirection.INCOMING, bad))
    assert len(editor.problems) == 1 and "incoming frame rejected" in editor.problems[0]
