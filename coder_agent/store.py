"""Persistence of ACP sessions: one JSON file per session, schema-versioned, written atomically.

This module owns:

* `SessionRecord` (everything needed to resume a session: history, replayable events, settings, cost, remembered
  permissions, undo checkpoints) and `SessionSummary` (what `session/list` shows);
* `SessionStore`, which saves, loads, deletes and lists them under one directory (by default
  `platformdirs.user_data_path("coder-agent") / "sessions"`, created on the first write);
* the errors: `StoreError` and its subclasses `SessionNotFound`, `InvalidCursor`, `InvalidSessionId`.

On disk, for a session id `ID` (only `[A-Za-z0-9_-]`, so no path can be smuggled in):

    <root>/ID.json            the full `SessionRecord`
    <root>/ID.summary.json    a small `SessionSummary` sidecar (plus `schema_version`), so listing never parses the
                              big files
    <root>/.ID.*.tmp          a write in progress (or left by a killed one); ignored, removed once it is stale

Every file is written to a temp file in the same directory, flushed, fsynced and `os.replace`d over the old one
(then the directory is fsynced), so a crash or `kill -9` at any moment leaves the old file or the new one, never a
partial one. The record is written before its sidecar and deleted before it, so after a crash the sidecar can only be
missing, older than the record, or orphaned; `list` notices (by modification times), rebuilds the sidecar from the
record or drops it, and logs what it did. A corrupt or future-schema record affects only that session.

Everything is synchronous (callers use `anyio.to_thread.run_sync`). Within one process, writes of one session are
serialised by a per-session lock; separate processes writing *different* sessions never touch the same file.
Nothing here writes to stdout.
"""

from __future__ import annotations

import base64
import binascii
import builtins
import contextlib
import json
import logging
import os
import re
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import platformdirs
from pydantic import BaseModel, Field, ValidationError, field_validator

from coder_agent.atomic import write_atomic

__all__ = [
    "SCHEMA_VERSION",
    "InvalidCursor",
    "InvalidSessionId",
    "SessionNotFound",
    "SessionRecord",
    "SessionStore",
    "SessionSummary",
    "StoreError",
    "default_root",
    "utc_now",
]

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
"""The version of the on-disk format this code writes and reads; a newer file is refused with a clear error."""

_ID_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,200}")
_RECORD_SUFFIX = ".json"
_SUMMARY_SUFFIX = ".summary.json"
_TEMP_SUFFIX = ".tmp"
_STALE_TEMP_SECONDS = 15 * 60
"""A temp file older than this belongs to a write that died; younger ones may be another process's write."""

_CURSOR_VERSION = 1


# ---- errors -------------------------------------------------------------------------------------------------------


class StoreError(Exception):
    """A session could not be saved, loaded, deleted or listed; the message names the file at fault."""


class SessionNotFound(StoreError):
    """No session with this id is stored (or it was deleted)."""


class InvalidCursor(StoreError):
    """A `list` cursor that this store did not hand out (or one handed out for another `cwd`)."""


class InvalidSessionId(StoreError):
    """A session id with characters outside `[A-Za-z0-9_-]` (or empty, or too long)."""


# ---- data ---------------------------------------------------------------------------------------------------------


def utc_now() -> str:
    """The current time as the store's timestamps are written: ISO 8601 UTC, e.g. `2026-11-30T08:00:00.123Z`."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _parse_time(value: str) -> datetime:
    """An ISO 8601 timestamp as an aware datetime (a naive one is taken as UTC); ValueError if it is not one."""
    parsed = datetime.fromisoformat(value)
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _check_time(value: str) -> str:
    try:
        _parse_time(value)
    except ValueError:
        raise ValueError(f"not an ISO 8601 timestamp: {value!r}") from None
    return value


def _check_id(session_id: str) -> str:
    if not isinstance(session_id, str) or not _ID_PATTERN.fullmatch(session_id):
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
    context_tokens: int = 0
    allow_rules: list[str] = Field(default_factory=list)
    deny_rules: list[str] = Field(default_factory=list)
    """Permissions remembered for this session."""
    checkpoints: list[dict[str, Any]] = Field(default_factory=list)
    """Undo data, opaque to the store."""

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
        )


class _SummaryFile(SessionSummary):
    """The sidecar's on-disk shape."""

    schema_version: int = SCHEMA_VERSION


# ---- the store ----------------------------------------------------------------------------------------------------


def default_root() -> Path:
    """Where sessions live unless told otherwise (not created here)."""
    return platformdirs.user_data_path("coder-agent") / "sessions"


_StatKey = tuple[int, int, int]
"""(inode, mtime_ns, size): changes whenever a file is replaced or rewritten."""


def _stat_key(stat: os.stat_result) -> _StatKey:
    return (stat.st_ino, stat.st_mtime_ns, stat.st_size)


@dataclass(frozen=True)
class _Listed:
    """One session as `list` knows it: the summary (None if unusable) and the file states it was derived from."""

    record_key: _StatKey
    summary_key: _StatKey | None
    summary: SessionSummary | None
    order: tuple[datetime, str]


class SessionStore:
    """Sessions on disk under `root`: `save`, `load`, `delete`, `list`. Synchronous; safe to share between threads."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root if root is not None else default_root()
        self._locks_guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}
        self._list_lock = threading.Lock()
        self._listed: dict[str, _Listed] = {}

    # -- paths and locks --

    def record_path(self, session_id: str) -> Path:
        """The record file of a session (InvalidSessionId for an unsafe id)."""
        return self.root / f"{_check_id(session_id)}{_RECORD_SUFFIX}"

    def _summary_path(self, session_id: str) -> Path:
        return self.root / f"{session_id}{_SUMMARY_SUFFIX}"

    def _lock(self, session_id: str) -> threading.Lock:
        with self._locks_guard:
            lock = self._locks.get(session_id)
            if lock is None:
                lock = self._locks[session_id] = threading.Lock()
            return lock

    # -- save / load / delete --

    def save(self, record: SessionRecord) -> None:
        """Write `record` (and its listing sidecar) atomically, replacing any previous version."""
        session_id = _check_id(record.session_id)
        if record.schema_version != SCHEMA_VERSION:
            record = record.model_copy(update={"schema_version": SCHEMA_VERSION})
        data = record.model_dump_json().encode()
        summary = _summary_bytes(SessionSummary.of(record))
        path = self.record_path(session_id)
        with self._lock(session_id):
            try:
                self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
            except OSError as error:
                raise StoreError(f"cannot create the session directory {self.root}: {error}") from error
            self._write_atomic(path, data)
            self._write_atomic(self._summary_path(session_id), summary)

    def load(self, session_id: str) -> SessionRecord:
        """The stored record: SessionNotFound if there is none, StoreError if its file is unreadable or too new."""
        path = self.record_path(session_id)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise SessionNotFound(f"no stored session {session_id!r} (looked for {path})") from None
        except OSError as error:
            raise StoreError(f"cannot read session file {path}: {error}") from error
        return _parse_record(path, session_id, data)

    def delete(self, session_id: str) -> None:
        """Remove a session's files; deleting a session that is not stored succeeds silently."""
        path = self.record_path(session_id)
        with self._lock(session_id):
            # The record goes first: a crash in between leaves an orphan sidecar, which `list` drops.
            for target in (path, self._summary_path(session_id)):
                try:
                    target.unlink()
                except FileNotFoundError:
                    pass
                except OSError as error:
                    raise StoreError(f"cannot delete {target}: {error}") from error
            self._fsync_dir()

    # -- list --

    def list(
        self, cwd: str | None = None, cursor: str | None = None, limit: int = 50
    ) -> tuple[builtins.list[SessionSummary], str | None]:
        """One page of sessions, newest first (by `updated_at`, then id), optionally only those whose cwd is `cwd`.

        Returns the page and the cursor of the next one (None after the last). A cursor marks a position in that
        order, not an offset: sessions saved or deleted between two calls never make a later page repeat or skip
        the others (a session saved meanwhile moves to the front, which a walk already past it does not revisit).
        """
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        after = _decode_cursor(cursor, cwd) if cursor is not None else None
        with self._list_lock:
            listed = self._scan()
        rows = [
            (item.order, item.summary)
            for item in listed
            if item.summary is not None and (cwd is None or item.summary.cwd == cwd)
        ]
        rows.sort(key=lambda row: row[0], reverse=True)
        if after is not None:
            rows = [row for row in rows if row[0] < after]
        page = [summary for _, summary in rows[:limit]]
        next_cursor = _encode_cursor(page[-1], cwd) if len(rows) > limit else None
        return page, next_cursor

    def _scan(self) -> builtins.list[_Listed]:
        """Every listable session, reusing what was parsed before for files that have not changed since."""
        records: dict[str, os.DirEntry[str]] = {}
        summaries: dict[str, os.DirEntry[str]] = {}
        temps: builtins.list[os.DirEntry[str]] = []
        try:
            with os.scandir(self.root) as entries:
                for entry in entries:
                    name = entry.name
                    if name.startswith("."):
                        if name.endswith(_TEMP_SUFFIX):
                            temps.append(entry)
                    elif name.endswith(_SUMMARY_SUFFIX):
                        summaries[name[: -len(_SUMMARY_SUFFIX)]] = entry
                    elif name.endswith(_RECORD_SUFFIX):
                        records[name[: -len(_RECORD_SUFFIX)]] = entry
        except FileNotFoundError:
            self._listed.clear()
            return []
        except OSError as error:
            raise StoreError(f"cannot read the session directory {self.root}: {error}") from error

        result: builtins.list[_Listed] = []
        for session_id, entry in records.items():
            if not _ID_PATTERN.fullmatch(session_id):
                continue
            try:
                record_key = _stat_key(entry.stat())
            except OSError:  # deleted meanwhile
                continue
            summary_entry = summaries.get(session_id)
            summary_key: _StatKey | None = None
            if summary_entry is not None:
                with contextlib.suppress(OSError):
                    summary_key = _stat_key(summary_entry.stat())
            known = self._listed.get(session_id)
            if known is None or known.record_key != record_key or known.summary_key != summary_key:
                known = self._list_one(session_id, record_key, summary_key)
            self._listed[session_id] = known
            result.append(known)

        for gone in self._listed.keys() - records.keys():
            del self._listed[gone]
        for session_id in summaries.keys() - records.keys():
            self._drop_orphan_summary(session_id)
        for entry in temps:
            self._drop_stale_temp(entry)
        return result

    def _list_one(self, session_id: str, record_key: _StatKey, summary_key: _StatKey | None) -> _Listed:
        """Read a session's sidecar; if it is missing, older than the record, or unreadable, rebuild it.

        If the record cannot be read either, an older but readable sidecar still lists the session (so the user
        sees it, and `load` explains what is wrong); with no usable sidecar it is left out. Either way it is logged,
        once per state of its files.
        """
        path = self._summary_path(session_id)
        summary: SessionSummary | None = None
        if summary_key is None:
            problem = "is missing"
        else:
            try:
                summary = _parse_summary(path, session_id, path.read_bytes())
            except (OSError, StoreError) as error:
                problem = f"is unusable ({error})"
            else:
                if summary_key[1] >= record_key[1]:
                    return _Listed(record_key, summary_key, summary, _order(summary))
                problem = "is older than the record"

        with self._lock(session_id):
            try:
                record = self.load(session_id)
            except StoreError as error:
                if summary is not None:
                    log.warning("session %s: listed from its older summary: %s", session_id, error)
                    return _Listed(record_key, summary_key, summary, _order(summary))
                log.warning("session %s: not listed: summary %s %s, and %s", session_id, path, problem, error)
                return _Listed(record_key, summary_key, None, (datetime.min.replace(tzinfo=UTC), session_id))
            summary = SessionSummary.of(record)
            log.warning("session %s: summary %s %s; rebuilt it from the record", session_id, path, problem)
            try:
                # Only if the record is still the one just read (a save in this process holds the same lock).
                if _stat_key(os.stat(self.record_path(session_id))) == record_key:
                    self._write_atomic(path, _summary_bytes(summary))
                    summary_key = _stat_key(os.stat(path))
            except (OSError, StoreError) as error:
                log.warning("session %s: could not rewrite %s: %s", session_id, path, error)
            return _Listed(record_key, summary_key, summary, _order(summary))

    def _drop_orphan_summary(self, session_id: str) -> None:
        """A sidecar without a record: left by a delete that died half-way. Remove it (if it is still orphaned)."""
        if not _ID_PATTERN.fullmatch(session_id):
            return
        with self._lock(session_id):
            if self.record_path(session_id).exists():
                return  # a save created the record after the directory was read
            with contextlib.suppress(FileNotFoundError):
                self._summary_path(session_id).unlink()
                log.info("session %s: removed an orphaned summary file", session_id)

    def _drop_stale_temp(self, entry: os.DirEntry[str]) -> None:
        try:
            if time.time() - entry.stat().st_mtime > _STALE_TEMP_SECONDS:
                os.unlink(entry.path)
                log.info("removed %s, left by an interrupted write", entry.path)
        except OSError:
            pass

    # -- atomic writes --

    def _write_atomic(self, path: Path, data: bytes) -> None:
        """Replace `path` by `data` so that any crash leaves either the old content or the new, never a mix."""
        try:
            write_atomic(path, data, mode=0o600, temp_suffix=_TEMP_SUFFIX)
        except OSError as error:
            raise StoreError(f"cannot write {path}: {error}") from error
        self._fsync_dir()

    def _fsync_dir(self) -> None:
        """Make a rename or unlink durable (POSIX; elsewhere a directory cannot be opened for this)."""
        if os.name != "posix":
            return
        try:
            fd = os.open(self.root, os.O_RDONLY)
        except OSError:
            return
        try:
            os.fsync(fd)
        except OSError:
            pass
        finally:
            os.close(fd)


# ---- parsing ------------------------------------------------------------------------------------------------------


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
    details = "; ".join(
        f"{'.'.join(str(part) for part in item['loc']) or '(top)'}: {item['msg']}" for item in error.errors()[:3]
    )
    more = f" (and {error.error_count() - 3} more)" if error.error_count() > 3 else ""
    return StoreError(f"session file {path} is corrupt: not a valid {what}: {details}{more}")


def _parse_record(path: Path, session_id: str, data: bytes) -> SessionRecord:
    value = _load_json_object(path, data)
    _check_schema(path, value)
    try:
        record = SessionRecord.model_validate(value)
    except ValidationError as error:
        raise _shape_error(path, "session record", error) from None
    if record.session_id != session_id:
        raise StoreError(f"session file {path} is corrupt: it holds session {record.session_id!r}")
    return record


def _parse_summary(path: Path, session_id: str, data: bytes) -> SessionSummary:
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
    )


def _summary_bytes(summary: SessionSummary) -> bytes:
    return _SummaryFile(schema_version=SCHEMA_VERSION, **summary.model_dump()).model_dump_json().encode()


def _order(summary: SessionSummary) -> tuple[datetime, str]:
    return (_parse_time(summary.updated_at), summary.session_id)


# ---- cursors ------------------------------------------------------------------------------------------------------


def _encode_cursor(last: SessionSummary, cwd: str | None) -> str:
    payload = {"v": _CURSOR_VERSION, "u": last.updated_at, "i": last.session_id, "c": cwd}
    raw = json.dumps(payload, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str, cwd: str | None) -> tuple[datetime, str]:
    """The position after which the next page starts; InvalidCursor unless `cursor` came from `list` with `cwd`."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        payload = json.loads(raw)
        if (
            not isinstance(payload, dict)
            or payload.get("v") != _CURSOR_VERSION
            or not isinstance(payload.get("u"), str)
            or not isinstance(payload.get("i"), str)
            or not _ID_PATTERN.fullmatch(payload["i"])
        ):
            raise ValueError("unexpected content")
        position = (_parse_time(payload["u"]), payload["i"])
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError):
        raise InvalidCursor(f"invalid cursor {cursor!r}") from None
    if payload.get("c") != cwd:
        raise InvalidCursor(f"cursor {cursor!r} belongs to a listing with another cwd filter")
    return position
