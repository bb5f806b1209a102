"""A small editor written on the official Python ACP SDK (`agent-client-protocol`, imported as `acp`): it spawns
`coder-agent` with the SDK's own `spawn_agent_process`, answers permission requests, serves `fs/read_text_file`
and `fs/write_text_file` from the disk, and keeps every `session/update` as the SDK's pydantic models parsed it.

The SDK logs and drops a notification it cannot parse, and answers a request it cannot parse with an error to the
agent: neither would fail a test by itself. So every frame is also seen raw (the SDK's stream observer): an agent
frame the SDK's models reject, an error the SDK sent back, and any frame the ACP schema rejects
(`tests/support/conformance.py`, both directions) are collected in `problems`, which the tests assert empty.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import (
    PROTOCOL_VERSION,
    ReadTextFileResponse,
    RequestPermissionResponse,
    SessionNotification,
    WriteTextFileResponse,
    spawn_agent_process,
)
from acp.connection import StreamDirection, StreamEvent
from acp.schema import (
    AgentMessageChunk,
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    PermissionOption,
    TextContentBlock,
    ToolCallUpdate,
)
from pydantic import ValidationError

from tests.support.conformance import Conformance

EVENT_WAIT = 60.0


@dataclass
class SdkEditor:
    """The client side: what the agent asked and sent, and how to answer permission requests."""

    root: Path
    allow: bool = True
    updates: list[tuple[str, Any]] = field(default_factory=list)
    permissions: list[tuple[ToolCallUpdate, list[PermissionOption]]] = field(default_factory=list)
    writes: list[tuple[str, str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    conformance: Conformance = field(default_factory=Conformance)
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    # --- the SDK's Client interface -------------------------------------------------------------------------
    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        async with self._changed:
            self._changed.notify_all()

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **kwargs: Any
    ) -> RequestPermissionResponse:
        self.permissions.append((tool_call, options))
        kinds = ("allow_once", "allow_always") if self.allow else ("reject_once", "reject_always")
        chosen = next((option for option in options if option.kind in kinds), None)
        if chosen is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=chosen.option_id))

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **kwargs: Any
    ) -> ReadTextFileResponse:
        text = self._inside(path).read_text(encoding="utf-8")
        if line is not None or limit is not None:
            lines = text.splitlines(keepends=True)
            start = (line or 1) - 1
            text = "".join(lines[start : None if limit is None else start + limit])
        return ReadTextFileResponse(content=text)

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> WriteTextFileResponse:
        self._inside(path).write_text(content, encoding="utf-8")
        self.writes.append((path, content))
        return WriteTextFileResponse()

    def _inside(self, path: str) -> Path:
        resolved = Path(path).resolve()
        if not resolved.is_relative_to(self.root.resolve()):
            raise PermissionError(f"{path} is outside the editor's project")
        return resolved

    # --- what the tests read ----------------------------------------------------------------------------------
    def session_updates(self, session_id: str, kind: type[Any] | None = None) -> list[Any]:
        return [u for s, u in self.updates if s == session_id and (kind is None or isinstance(u, kind))]

    def agent_text(self, session_id: str) -> str:
        chunks = self.session_updates(session_id, AgentMessageChunk)
        return "".join(c.content.text for c in chunks if isinstance(c.content, TextContentBlock))

    async def wait_for(self, predicate: Callable[[], bool]) -> None:
        """Wait (bounded) until a session update makes `predicate` true."""
        async with asyncio.timeout(EVENT_WAIT), self._changed:
            await self._changed.wait_for(predicate)

    def observe(self, event: StreamEvent) -> None:
        """Every raw frame, both ways: checked against the schema, and the agent's against the SDK's models."""
        message = event.message
        try:
            if event.direction is StreamDirection.INCOMING:
                self.conformance.check_agent_to_client(message)
                if message.get("method") == "session/update":
                    SessionNotification.model_validate(message["params"])
            else:
                self.conformance.check_client_to_agent(message)
                if "error" in message:
                    self.problems.append(f"the SDK answered the agent with an error: {message}")
        except (AssertionError, ValidationError) as error:
            self.problems.append(f"{event.direction.value} frame rejected: {error}")


@asynccontextmanager
async def sdk_agent(tmp_path: Path, editor: SdkEditor, env: dict[str, str]) -> AsyncIterator[tuple[Any, SdkEditor]]:
    """`coder-agent` spawned by the SDK, initialized with file-system capabilities; yields the SDK's
    `ClientSideConnection` and the editor. The agent's stderr goes to a file under `tmp_path`."""
    with (tmp_path / "agent-stderr.log").open("ab") as stderr:
        async with spawn_agent_process(
            editor,
            sys.executable,
            "-m",
            "coder_agent",
            env=env,
            transport_kwargs={"stderr": stderr},
            observers=[editor.observe],
        ) as (connection, _process):
            await connection.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(
                    fs=FileSystemCapabilities(read_text_file=True, write_text_file=True)
                ),
            )
            yield connection, editor
