"""The `[lsp]` section of the config: which language servers check the files the agent edits, and how long to wait.

A project file may not set any of it (`config.PROJECT_FILE_IGNORES`): a server is a program the agent starts by
itself after an edit, so a cloned repository must not name one.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

_EXTENSION = r"^[A-Za-z0-9_+-]+$"


class ServerConfig(BaseModel):
    """One language server: the command that starts it on stdio, and the files it checks."""

    model_config = ConfigDict(extra="forbid")

    command: list[str] = Field(min_length=1)
    """The program and its arguments, e.g. ["basedpyright-langserver", "--stdio"]; the program is looked up on PATH."""

    extensions: list[str] = Field(default_factory=list)
    """The file extensions it checks, without the dot (["py", "pyi"]); empty keeps those of the language it replaces."""

    language_id: str | None = Field(default=None, min_length=1)
    """The LSP language id of its files ("python"); None: taken from the extension."""

    initialization_options: dict[str, object] = Field(default_factory=dict)
    """Sent as `initializationOptions` in `initialize`."""

    settings: dict[str, object] = Field(default_factory=dict)
    """Answered to the server's `workspace/configuration` requests (by section, e.g. {"python": {...}})."""

    @field_validator("extensions")
    @classmethod
    def _plain_extensions(cls, value: list[str]) -> list[str]:
        for extension in value:
            if not re.fullmatch(_EXTENSION, extension):
                raise ValueError(f"{extension!r} is not an extension (write it without the dot: 'py')")
        return value

    @field_validator("command")
    @classmethod
    def _no_blank_words(cls, value: list[str]) -> list[str]:
        if not value[0].strip():
            raise ValueError("the command's program is empty")
        return value


class LspConfig(BaseModel):
    """Language servers after edits: new errors and warnings the edit caused go to the model."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    """Start the project's language servers (found on PATH) when a file of their language is first edited."""

    servers: dict[str, ServerConfig] = Field(default_factory=dict)
    """Servers by name, added to the known ones or replacing one of the same name ("python", "typescript", "go",
    "rust", "c"): e.g. [lsp.servers.python] command = ["pyright-langserver", "--stdio"]."""

    wait: float = Field(default=1.5, gt=0, le=60)
    """After an edit, how many seconds to wait for a warm server's diagnostics before going on without them."""

    start_timeout: float = Field(default=20.0, gt=0, le=300)
    """How many seconds a server may take to start and analyse its first file."""

    max_reported: int = Field(default=20, ge=1, le=500)
    """The most new diagnostics reported per edit (the rest are counted)."""

    without_sandbox: bool = False
    """Start servers even where the session's commands cannot be sandboxed. Off by default: servers load the
    project's own code and settings (a `node_modules` TypeScript, a virtualenv's interpreter), which must then run
    inside the walls."""

    prefer_editor: bool = True
    """Ask the editor's own servers when the client offers them (ACP's draft `lsp` capability)."""
