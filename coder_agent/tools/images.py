"""Image files as a model sees them: what kind a file is by its first bytes (PNG, JPEG, GIF, WebP; never by its
name), its size in pixels when the header says, and the content parts a tool result carries it in."""

from __future__ import annotations

import base64
import struct
from typing import Any

__all__ = ["MAX_IMAGE_BYTES", "SNIFF", "describe", "image_mime", "image_parts", "pixel_size"]

MAX_IMAGE_BYTES = 5_000_000
"""The largest image sent to a model (providers take 5 MB or more per image)."""
SNIFF = 16
"""Bytes enough to tell an image by."""


def image_mime(head: bytes) -> str | None:
    """The image type of a file from its first bytes; None when it is no image a model takes."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def pixel_size(data: bytes, mime: str) -> tuple[int, int] | None:
    """Width and height from the image's header, when it is there to read."""
    try:
        if mime == "image/png" and data[12:16] == b"IHDR":
            width, height = struct.unpack(">II", data[16:24])
            return int(width), int(height)
        if mime == "image/gif":
            width, height = struct.unpack("<HH", data[6:10])
            return int(width), int(height)
        if mime == "image/jpeg":
            return _jpeg_size(data)
    except struct.error:
        return None
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    at = 2
    while at + 9 < len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        length = struct.unpack(">H", data[at + 2 : at + 4])[0]
        if marker in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF):
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return int(width), int(height)
        at += 2 + length
    return None


def describe(data: bytes, mime: str) -> str:
    """The image in a few words: "PNG, 800×600, 45 KB"."""
    kind = mime.removeprefix("image/").upper()
    size = pixel_size(data, mime)
    pixels = f", {size[0]}×{size[1]}" if size else ""
    return f"{kind}{pixels}, {max(1, round(len(data) / 1000)):,} KB"


def image_parts(text: str, data: bytes, mime: str) -> list[dict[str, Any]]:
    """A tool result of a text and the image (OpenAI-style content parts; the turn passes the image on)."""
    url = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
    return [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": url}}]
