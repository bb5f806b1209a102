"""The session files on disk: atomic saves, loads, deletes, and the repairs a crash can call for.

For a session id `ID`, under the store's root:

    ID.json            the full `SessionRecord`
    ID.summary.json    its `SessionSummary` sidecar (plus `schema_version`), so listing never parses the big files
    .ID.*.tmp          a write in progress (or left by a killed one); ignored, removed once it is stale

Every file is written to a temp file in the same directory, flushed, fsynced and `os.replace`d over the old one
(then the directory is fsynced), so a crash or `kill -9` at any moment leaves the old file or the new one, never a
partial one. The record is written before its sidecar and deleted before it, so after a crash the sidecar can only be
missing, older than the record, or orphaned: `summary_for_listing` rebuilds it from the record,
`drop_orphan_summary` removes it, and both log what they did. Within one process, writes of one session are
serialised by a per-session lock; separate processes writing *different* sessions never touch the same file.
Everything is synchronous (callers use `anyio.to_thread.run_sync`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from pathlib import Path

import platformdirs

from coder_agent.atomic import write_atomic
from coder_agent.store.errors import SessionNotFound, StoreError
from coder_agent.store.records import (
    ID_PATTERN,
    SCHEMA_VERSION,
    SessionRecord,
    SessionSummary,
    check_id,
    parse_record,
    parse_summary,
    summary_bytes,
)

__all__ = ["RECORD_SUFFIX", "SUMMARY_SUFFIX", "TEMP_SUFFIX", "SessionFiles", "StatKey", "default_root", "stat_key"]

log = logging.getLogger(__name__)

RECORD_SUFFIX = ".json"
SUMMARY_SUFFIX = ".summary.json"
TEMP_SUFFIX = ".tmp"
_STALE_TEMP_SECONDS = 15 * 60
"""A temp file older than this belongs to a write that died; younger ones may be another process's write."""

StatKey = tuple[int, int, int]
"""(inode, mtime_ns, size): changes whenever a file is replaced or rewritten."""


def stat_key(stat: os.stat_result) -> StatKey:
    return (stat.st_ino, stat.st_mtime_ns, stat.st_size)


def default_root() -> Path:
    """Where sessions live unless told otherwise (not created here)."""
    return platformdirs.user_data_path("coder-agent") / "sessions"


class SessionFiles:
    """The files of the sessions under `root`. Synchronous; safe to share between threads."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root if root is not None else default_root()
        self._locks_guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}

    # -- paths and locks --

    def record_path(self, session_id: str) -> Path:
        """The record file of a session (InvalidSessionId for an unsafe id)."""
        return self.root / f"{check_id(session_id)}{RECORD_SUFFIX}"

    def summary_path(self, session_id: str) -> Path:
        return self.root / f"{session_id}{SUMMARY_SUFFIX}"

    def lock(self, session_id: str) -> threading.Lock:
        """The lock that serialises the writes of one session in this process."""
        with self._locks_guard:
            lock = self._locks.get(session_id)
            if lock is None:
                lock = self._locks[session_id] = threading.Lock()
            return lock

    # -- save / load / delete --

    def save(self, record: SessionRecord) -> None:
        """Write `record` (and its listing sidecar) atomically, replacing any previous version."""
        session_id = check_id(record.session_id)
        if record.schema_version != SCHEMA_VERSION:
            record = record.model_copy(update={"schema_version": SCHEMA_VERSION})
        data = record.model_dump_json().encode()
        summary = summary_bytes(SessionSummary.of(record))
        path = self.record_path(session_id)
        with self.lock(session_id):
            try:
                self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
            except OSError as error:
                raise StoreError(f"cannot create the session directory {self.root}: {error}") from error
            self._write_atomic(path, data)
            self._write_atomic(self.summary_path(session_id), summary)

    def load(self, session_id: str) -> SessionRecord:
        """The stored record: SessionNotFound if there is none, StoreError if its file is unreadable or too new."""
        path = self.record_path(session_id)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise SessionNotFound(f"no stored session {session_id!r} (looked for {path})") from None
        except OSError as error:
            raise StoreError(f"cannot read session file {path}: {error}") from error
        return parse_record(path, session_id, data)

    def delete(self, session_id: str) -> None:
        """Remove a session's files; deleting a session that is not stored succeeds silently."""
        path = self.record_path(session_id)
        with self.lock(session_id):
            # The record goes first: a crash in between leaves an orphan sidecar, which `list` drops.
            for target in (path, self.summary_path(session_id)):
                try:
                    target.unlink()
                except FileNotFoundError:
                    pass
                except OSError as error:
                    raise StoreError(f"cannot delete {target}: {error}") from error
            self._fsync_dir()

    def stored_cwd(self, session_id: str) -> str | None:
        """The working folder a stored session was in (from its sidecar, else its record); None if unknown."""
        try:
            path = self.summary_path(check_id(session_id))
            return parse_summary(path, session_id, path.read_bytes()).cwd
        except (OSError, StoreError):
            pass
        try:
            return self.load(session_id).cwd
        except StoreError:
            return None

    # -- repairs --

    def summary_for_listing(
        self, session_id: str, record_key: StatKey, summary_key: StatKey | None
    ) -> tuple[SessionSummary | None, StatKey | None]:
        """A session's summary and the state of its sidecar; a missing, older or unreadable sidecar is rebuilt.

        If the record cannot be read either, an older but readable sidecar still lists the session (so the user
        sees it, and `load` explains what is wrong); with no usable sidecar it is left out (None). Either way it is
        logged; callers ask again only when the files change, so it is logged once per state of its files.
        """
        path = self.summary_path(session_id)
        summary: SessionSummary | None = None
        if summary_key is None:
            problem = "is missing"
        else:
            try:
                summary = parse_summary(path, session_id, path.read_bytes())
            except (OSError, StoreError) as error:
                problem = f"is unusable ({error})"
            else:
                if summary_key[1] >= record_key[1]:
                    return summary, summary_key
                problem = "is older than the record"

        with self.lock(session_id):
            try:
                record = self.load(session_id)
            except StoreError as error:
                if summary is not None:
                    log.warning("session %s: listed from its older summary: %s", session_id, error)
                    return summary, summary_key
                log.warning("session %s: not listed: summary %s %s, and %s", session_id, path, problem, error)
                return None, summary_key
            summary = SessionSummary.of(record)
            log.warning("session %s: summary %s %s; rebuilt it from the record", session_id, path, problem)
            try:
                # Only if the record is still the one just read (a save in this process holds the same lock).
                if stat_key(os.stat(self.record_path(session_id))) == record_key:
                    self._write_atomic(path, summary_bytes(summary))
                    summary_key = stat_key(os.stat(path))
            except (OSError, StoreError) as error:
                log.warning("session %s: could not rewrite %s: %s", session_id, path, error)
            return summary, summary_key

    def drop_orphan_summary(self, session_id: str) -> None:
        """A sidecar without a record: left by a delete that died half-way. Remove it (if it is still orphaned)."""
        if not ID_PATTERN.fullmatch(session_id):
            return
        with self.lock(session_id):
            if self.record_path(session_id).exists():
                return  # a save created the record after the directory was read
            with contextlib.suppress(FileNotFoundError):
                self.summary_path(session_id).unlink()
                log.info("session %s: removed an orphaned summary file", session_id)

    def drop_stale_temp(self, entry: os.DirEntry[str]) -> None:
        """Remove a temp file left by a write that died (one old enough that no live write can own it)."""
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
            write_atomic(path, data, mode=0o600, temp_suffix=TEMP_SUFFIX)
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
