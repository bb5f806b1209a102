"""ACP content: prompt/message blocks, tool-call content and locations, plan entries."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from coder_agent.protocol.base import AcpModel


class TextContent(AcpModel):
    type: Literal["text"] = "text"
    text: str
    annotations: dict[str, Any] | None = None


class ImageContent(AcpModel):
    type: Literal["image"] = "image"
    data: str
    mime_type: str
    uri: str | None = None
    annotations: dict[str, Any] | None = None


class AudioContent(AcpModel):
    type: Literal["audio"] = "audio"
    data: str
    mime_type: str
    annotations: dict[str, Any] | None = None


class ResourceLink(AcpModel):
    type: Literal["resource_link"] = "resource_link"
    uri: str
    name: str
    mime_type: str | None = None
    title: str | None = None
    description: str | None = None
    size: int | None = None
    annotations: dict[str, Any] | None = None


class TextResourceContents(AcpModel):
    uri: str
    text: str
    mime_type: str | None = None


class BlobResourceContents(AcpModel):
    uri: str
    blob: str
    mime_type: str | None = None


class EmbeddedResource(AcpModel):
    type: Literal["resource"] = "resource"
    resource: TextResourceContents | BlobResourceContents
    annotations: dict[str, Any] | None = None


ContentBlock = Annotated[
    TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource,
    Field(discriminator="type"),
]

ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"]
ToolCallStatus = Literal["pending", "in_progress", "completed", "failed"]


class ContentToolCallContent(AcpModel):
    type: Literal["content"] = "content"
    content: ContentBlock


class DiffContent(AcpModel):
    """An edit as a diff; `old_text` None (omitted on the wire) means a new file."""

    type: Literal["diff"] = "diff"
    path: str
    old_text: str | None = None
    new_text: str


class TerminalContent(AcpModel):
    type: Literal["terminal"] = "terminal"
    terminal_id: str


ToolCallContent = Annotated[
    ContentToolCallContent | DiffContent | TerminalContent,
    Field(discriminator="type"),
]


class ToolCallLocation(AcpModel):
    path: str
    line: int | None = None


class PlanEntry(AcpModel):
    content: str
    priority: Literal["high", "medium", "low"] = "medium"
    status: Literal["pending", "in_progress", "completed"] = "pending"
