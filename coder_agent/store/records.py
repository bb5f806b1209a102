"""What the store keeps about a session, and its schema: `SessionRecord`, `SessionSummary`, versions and parsing.

* `SessionRecord`: everything needed to resume a session (history, replayable events, settings, cost, remembered
  permissions, undo checkpoints); `SessionSummary`: what `session/list` shows, kept in a small sidecar file
  (`summary_bytes`) so that listing never parses the big records;
* `SCHEMA_VERSION`: the on-disk format this code writes and reads; a newer file is refused with a clear error, a
  corrupt one names its file and the fields at fault (`parse_record`, `parse_summary`), and affects only its session;
* session ids (`check_id`: only `[A-Za-z0-9_-]`, so no path can be smuggled in) and timestamps (`utc_now`).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError, field_validator

from coder_agent.errors import field_problems
from coder_agent.store.errors import InvalidSessionId, StoreError

__all__ = [
    "ID_PATTERN",
    "SCHEMA_VERSION",
    "SessionRecord",
    "SessionSummary",
    "check_id",
    "parse_record",
    "parse_summary",
    "parse_time",
    "summary_bytes",
    "utc_now",
]

SCHEMA_VERSION = 1
"""The version of the on-disk format this code writes and reads; a newer file is refused with a clear error."""

ID_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,200}")
"""A valid session id: safe as a file name, whatever the platform."""


def utc_now() -> str:
    """The current time as the store's timestamps are written: ISO 8601 UTC, e.g. `2026-11-30T08:00:00.123Z`."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_time(value: str) -> datetime:
    """An ISO 8601 timestamp as an aware datetime (a naive one is taken as UTC); ValueError if it is not one."""
    parsed = datetime.fromisoformat(value)
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _check_time(value: str) -> str:
    try:
        parse_time(value)
    except ValueError:
        raise ValueError(f"not an ISO 8601 timestamp: {value!r}") from None
    return value


def check_id(session_id: str) -> str:
    """`session_id` itself, or InvalidSessionId if it is not made of `[A-Za-z0-9_-]` (1-200 characters)."""
    if not isinstance(session_id, str) or not ID_PATTERN.fullmatch(session_id):
        raise InvalidSessionId(f"invalid session id {session_id!r}: only letters, digits, '_' and '-' are allowed")
    return session_id


class SessionRecord(BaseModel):
    """Everything stored about one session."""

    schema_version: int = SCHEMA_VERSION
    session_id: str
    cwd: str
    additional_directories: list[str] = Field(default_factory=list)
    title: str | None = None
    created_at: str
    """ISO 8601 UTC, e.g. `2026-11-30T08:00:00.123Z` (see `utc_now`)."""
    updated_at: str
    mode: str = "default"
    model: str | None = None
    reasoning_effort: str | None = None
    messages: list[dict[str, Any]] = Field(default_factory=list)
    """The model's history: OpenAI-style chat messages."""
    events: list[dict[str, Any]] = Field(default_factory=list)
    """What the editor was shown, as ACP `session/update` `update` objects, replayed on `session/load`."""
    cost: float = 0.0
    tokens: dict[str, int] = Field(default_factory=dict)
    """The session's model calls added up (`input`, `cached`, `cache_write`, `output`, `requests`); opaque to the
    store. Empty in a session stored before it was kept."""
    context_tokens: int = 0
    allow_rules: list[str] = Field(default_factory=list)
    deny_rules: list[str] = Field(default_factory=list)
    """Permissions remembered for this session."""
    checkpoints: list[dict[str, Any]] = Field(default_factory=list)
    """Undo data, opaque to the store."""
    mcp_servers: list[dict[str, Any]] = Field(default_factory=list)
    """The MCP servers the session was last opened with, in ACP's `McpServer` shape (an env or header entry whose
    value holds a model key left out), so a run that continues an editor's session starts them too."""
    system_prompt: dict[str, Any] | None = None
    """The session's own instructions for its system prompt (`text`, `mode`: append or override); opaque to the
    store."""
    auto_compact: bool = True
    """Whether the session compacts near the context window (a config option)."""
    marks: dict[str, list[Any]] = Field(default_factory=dict)
    """Where each message shown ends in `messages` (message id -> [end, turn id]), for `session/fork`; opaque to
    the store."""
    cursors: dict[str, list[Any]] = Field(default_factory=dict)
    """The session's cursors (cursor id -> where it stands), for `session/fork` and `_session/rewind`; opaque to the
    store."""
    stash: dict[str, Any] | None = None
    """The session as it was before its last rewind (so the rewind can be undone); opaque to the store."""
    auto_continue: bool | None = None
    """Whether the session starts a turn itself when a background job ends (a config option; None: the config's)."""

    @field_validator("created_at", "updated_at")
    @classmethod
    def _iso_8601(cls, value: str) -> str:
        return _check_time(value)


class SessionSummary(BaseModel):
    """What listing shows about a session, read from its small sidecar file."""

    session_id: str
    cwd: str
    title: str | None = None
    updated_at: str
    additional_directories: list[str] = Field(default_factory=list)
    model: str | None = None
    """The session's model (None in sidecars written before it was kept there)."""
    prompted: bool = True
    """False for a session that was opened and never prompted (nothing to show): listing leaves it out. Sidecars
    written before this field existed say nothing, and count as prompted."""

    @field_validator("updated_at")
    @classmethod
    def _iso_8601(cls, value: str) -> str:
        return _check_time(value)

    @classmethod
    def of(cls, record: SessionRecord) -> SessionSummary:
        return cls(
            session_id=record.session_id,
            cwd=record.cwd,
            title=record.title,
            updated_at=record.updated_at,
            additional_directories=list(record.additional_directories),
            model=record.model,
            prompted=bool(record.messages or record.events or record.title),
        )


class _SummaryFile(SessionSummary):
    """The sidecar's on-disk shape."""

    schema_version: int = SCHEMA_VERSION


def _load_json_object(path: Path, data: bytes) -> dict[str, Any]:
    try:
        value = json.loads(data)
    except (ValueError, UnicodeDecodeError) as error:
        raise StoreError(f"session file {path} is corrupt: not valid JSON ({error})") from None
    if not isinstance(value, dict):
        raise StoreError(f"session file {path} is corrupt: expected a JSON object, found {type(value).__name__}")
    return value


def _check_schema(path: Path, value: dict[str, Any]) -> None:
    version = value.get("schema_version", SCHEMA_VERSION)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise StoreError(f"session file {path} is corrupt: bad schema_version {version!r}")
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"session file {path} was written by a newer coder-agent "
            f"(schema {version}; this one reads {SCHEMA_VERSION}); upgrade coder-agent to open it"
        )


def _shape_error(path: Path, what: str, error: ValidationError) -> StoreError:
    details = "; ".join(f"{p.field or '(top)'}: {p.message}" for p in field_problems(error)[:3])
    more = f" (and {error.error_count() - 3} more)" if error.error_count() > 3 else ""
    return StoreError(f"session file {path} is corrupt: not a valid {what}: {details}{more}")


def parse_record(path: Path, session_id: str, data: bytes) -> SessionRecord:
    """The record in `data` (read from `path`); StoreError naming the file if it is corrupt, too new or another's."""
    value = _load_json_object(path, data)
    _check_schema(path, value)
    try:
        record = SessionRecord.model_validate(value)
    except ValidationError as error:
        raise _shape_error(path, "session record", error) from None
    if record.session_id != session_id:
        raise StoreError(f"session file {path} is corrupt: it holds session {record.session_id!r}")
    return record


def parse_summary(path: Path, session_id: str, data: bytes) -> SessionSummary:
    """The summary in `data` (read from the sidecar `path`); StoreError naming the file if it is unusable."""
    try:
        summary = _SummaryFile.model_validate_json(data)
    except ValidationError as error:
        raise _shape_error(path, "session summary", error) from None
    if summary.session_id != session_id:
        raise StoreError(f"summary file {path} is corrupt: it holds session {summary.session_id!r}")
    return SessionSummary(
        session_id=summary.session_id,
        cwd=summary.cwd,
        title=summary.title,
        updated_at=summary.updated_at,
        additional_directories=summary.additional_directories,
        model=summary.model,
        prompted=summary.prompted,
    )


def summary_bytes(summary: SessionSummary) -> bytes:
    """The sidecar file's content for `summary`."""
    return _SummaryFile(schema_version=SCHEMA_VERSION, **summary.model_dump()).model_dump_json().encode()
