"""ACP prompt content blocks → the user message for the model (OpenAI-style content parts).

Text and resource links are one run of prose: editors split "look at @foo.rs please" into three blocks (text,
link, text), which join without separators, while two text blocks in a row are two paragraphs (a blank line
between them). Attached file contents and images are parts of their own. `shown_blocks` is the prompt as it is
shown back (the replay, a steering message): text blocks in a row joined as the model reads them, since a client
runs the chunks of one message together.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from coder_agent.protocol.content import (
    AudioContent,
    BlobResourceContents,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
)

TEXT, LINK = "text", "link"
PARAGRAPH = "\n\n"


@dataclass
class UserMessage:
    """The model-facing message, and notes for the user about what could not be passed on."""

    message: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def to_user_message(blocks: Sequence[ContentBlock], *, images: bool | None) -> UserMessage:
    """Convert prompt blocks; `images` False drops images with a note, None/True passes them on."""
    parts: list[dict[str, Any]] = []
    notes: list[str] = []
    for block in blocks:
        if isinstance(block, TextContent):
            _inline(parts, block.text, TEXT)
        elif isinstance(block, ResourceLink):
            _inline(parts, f"[{block.title or block.name}]({block.uri})", LINK)
        elif isinstance(block, EmbeddedResource):
            resource = block.resource
            if isinstance(resource, BlobResourceContents):
                mime = resource.mime_type or ""
                if mime.startswith("image/"):
                    _image(parts, notes, resource.blob, mime, images)
                else:
                    parts.append(_text(f"[Attached binary file {resource.uri} ({mime or 'unknown type'}), not shown]"))
            else:
                parts.append(_text(f'<attached_file uri="{resource.uri}">\n{resource.text}\n</attached_file>'))
        elif isinstance(block, ImageContent):
            _image(parts, notes, block.data, block.mime_type, images)
        elif isinstance(block, AudioContent):
            notes.append("Audio is not supported; the audio attachment was left out.")
    for part in parts:
        part.pop("inline", None)
    if all(part["type"] == "text" for part in parts):
        content: Any = "\n\n".join(part["text"] for part in parts)
    else:
        content = parts
    return UserMessage({"role": "user", "content": content}, notes)


def shown_blocks(blocks: Sequence[ContentBlock]) -> list[ContentBlock]:
    """The prompt's blocks, with text blocks in a row made one (a blank line between two that are not empty)."""
    shown: list[ContentBlock] = []
    for block in blocks:
        last = shown[-1] if shown else None
        if isinstance(block, TextContent) and isinstance(last, TextContent):
            separator = PARAGRAPH if last.text and block.text else ""
            shown[-1] = last.model_copy(update={"text": last.text + separator + block.text})
        else:
            shown.append(block)
    return shown


def _inline(parts: list[dict[str, Any]], text: str, kind: str) -> None:
    """Continue the run of prose the last part started (a text after a text as a new paragraph), or start one."""
    last = parts[-1] if parts else None
    if last is not None and last.get("inline"):
        separator = PARAGRAPH if kind == TEXT == last["inline"] and last["text"] and text else ""
        last["text"] += separator + text
        last["inline"] = kind
    else:
        parts.append({**_text(text), "inline": kind})


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _image(parts: list[dict[str, Any]], notes: list[str], data: str, mime: str, images: bool | None) -> None:
    if images is False:
        notes.append("This model does not accept images; the image was left out of the request.")
        return
    parts.append({"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}})
