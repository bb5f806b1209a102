"""read_file on an image: the model is given the image when it takes images (litellm knows which), a sentence
otherwise; an image is told by its first bytes, never by its name."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest

from coder_agent.model.scripted import Call, Reply, ScriptedModel
from coder_agent.tools.images import describe, image_mime, pixel_size
from tests.support.fake_llm import FakeLLM
from tests.support.fake_llm import Reply as LlmReply
from tests.support.llm_agent import tool_agent as llm_tool_agent
from tests.support.scripted_agent import tool_agent

pytestmark = pytest.mark.anyio


def png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def test_images_are_told_by_their_bytes() -> None:
    assert image_mime(png(2, 3)) == "image/png"
    assert image_mime(b"\xff\xd8\xff\xe0rest") == "image/jpeg"
    assert image_mime(b"GIF89a\x05\x00\x07\x00") == "image/gif"
    assert image_mime(b"RIFF\x00\x00\x00\x00WEBPVP8 ") == "image/webp"
    assert image_mime(b"%PDF-1.7") is None and image_mime(b"just text") is None
    assert pixel_size(png(2, 3), "image/png") == (2, 3)
    assert pixel_size(b"GIF89a\x05\x00\x07\x00", "image/gif") == (5, 7)
    jpeg = b"\xff\xd8" + b"\xff\xe0\x00\x04ab" + b"\xff\xc0\x00\x11\x08\x00\x20\x00\x40" + b"\x00" * 12
    assert pixel_size(jpeg, "image/jpeg") == (64, 32)
    assert describe(png(2, 3), "image/png").startswith("PNG, 2×3, ")


def results(model: ScriptedModel) -> list[object]:
    return [m["content"] for m in model.last_request.messages if m["role"] == "tool"]


async def test_a_model_that_takes_images_sees_the_screenshot(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            Reply(calls=[Call("read_file", {"path": "shot.png"}), Call("read_file", {"path": "named.txt"})]),
            Reply("Red."),
        ],
        images=True,
    )
    async with tool_agent(tmp_path, model) as (client, editor, session, work):
        (work / "shot.png").write_bytes(png(2, 3))
        (work / "named.txt").write_bytes(png(4, 4))
        assert await client.prompt(session, "what colour is it?") == "end_turn"
    messages = model.last_request.messages
    first, second = results(model)
    assert str(first).startswith(
        f"{work / 'shot.png'} is an image (PNG, 2×3, "
    ) and "[1 image(s) in the next message]" in str(first)
    assert "is an image (PNG, 4×4" in str(second), "the bytes decide, not the name"
    images = messages[-1]["content"]
    assert messages[-1]["role"] == "user" and images[0]["text"] == "Images returned by the tool calls above:"
    assert [part["image_url"]["url"][:22] for part in images[1:]] == ["data:image/png;base64,"] * 2
    shown = [
        c["content"]["text"]
        for u in client.session_updates(session, "tool_call_update")
        for c in u.get("content") or []
        if c["type"] == "content"
    ]
    assert any(text.startswith("PNG, 2×3, ") for text in shown)
    assert editor.reads == [], "the editor serves text only: the image is read from the disk"


@pytest.mark.parametrize(("images", "why"), [(False, "this model does not take images"), (None, "it is not known")])
async def test_a_model_that_cannot_see_gets_a_sentence(tmp_path: Path, images: bool | None, why: str) -> None:
    model = ScriptedModel([Reply(calls=[Call("read_file", {"path": "shot.png"})]), Reply("ok")], images=images)
    async with tool_agent(tmp_path, model) as (client, editor, session, work):
        (work / "shot.png").write_bytes(png(2, 3))
        await client.prompt(session, "look")
    (result,) = results(model)
    assert why in str(result) and "PNG, 2×3" in str(result)
    assert "image_url" not in str(model.last_request.messages)


async def test_an_image_too_big_to_send_names_the_fix(tmp_path: Path) -> None:
    model = ScriptedModel([Reply(calls=[Call("read_file", {"path": "huge.png"})]), Reply("ok")], images=True)
    async with tool_agent(tmp_path, model) as (client, editor, session, work):
        (work / "huge.png").write_bytes(png(2, 2) + b"\x00" * 6_000_000)
        await client.prompt(session, "look")
    (result,) = results(model)
    assert "is an image of 6.0 MB, more than the 5 MB" in str(result) and "-resize 50%" in str(result)


@pytest.mark.parametrize(("model_name", "sent"), [("openai/gpt-4o", True), ("openai/gpt-3.5-turbo", False)])
async def test_litellm_says_which_models_see(tmp_path: Path, fake_llm: FakeLLM, model_name: str, sent: bool) -> None:
    fake_llm.script([LlmReply(calls=[Call("read_file", {"path": "plot.png"})]), LlmReply("A plot.")])
    async with llm_tool_agent(tmp_path, fake_llm, model=model_name) as (client, editor, session, work):
        (work / "plot.png").write_bytes(png(3, 2))
        assert await client.prompt(session, "what is in plot.png?") == "end_turn"
    request = str(fake_llm.last_request["messages"])
    assert ("data:image/png;base64," in request) is sent
    assert ("this model does not take images" in request) is not sent
