"""Listing stored sessions: pages newest first, cursors tied to their filter, and the caches that keep it cheap.

Sessions opened and never prompted are left out (they stay loadable by id): an editor that opens a session per
window would otherwise fill the list with untitled, empty entries.

A cursor marks a position in the order (`updated_at`, then id), not an offset: sessions saved or deleted between two
calls never make a later page repeat or skip the others. It carries the `cwd` filter it was made for, and any other
cursor is refused (`InvalidCursor`).

Two caches, both checked against the file system on every call, so that saves by other processes are always seen:

* per session, the parsed sidecar, reused while the stat of both files (inode, mtime, size) is unchanged;
* for the whole folder, the last scan, reused while the folder's own stat is unchanged. Every write and delete of
  the store renames or unlinks in that folder, which updates its mtime, so an unchanged folder holds the same
  files. A change made in the same tick of the file system's clock as an earlier one leaves the mtime as it was,
  so a scan is only reused if the folder's mtime was already safely in the past when it began: 0.1 s (more than a
  kernel clock tick) where mtimes have sub-second precision, 3 s where they are whole seconds (FAT keeps two).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import os
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from coder_agent.store.errors import InvalidCursor, StoreError
from coder_agent.store.files import (
    RECORD_SUFFIX,
    SUMMARY_SUFFIX,
    TEMP_SUFFIX,
    SessionFiles,
    StatKey,
    stat_key,
)
from coder_agent.store.records import ID_PATTERN, SessionSummary, parse_time

__all__ = ["SessionListing"]

_CURSOR_VERSION = 1
_SETTLED_NS = 100_000_000
"""How far in the past a folder's sub-second mtime must be for a scan of it to be reused."""
_SETTLED_WHOLE_SECONDS_NS = 3_000_000_000
"""The same for a whole-second mtime (a file system that may keep only seconds, or two)."""

Order = tuple[datetime, str]
"""A session's place in the listing: (`updated_at`, id), newest first."""


@dataclass(frozen=True)
class _Listed:
    """One session as the listing knows it: the summary (None if unusable) and the file states it came from."""

    record_key: StatKey
    summary_key: StatKey | None
    summary: SessionSummary | None
    order: Order


class SessionListing:
    """Pages of the sessions stored in `files`; safe to share between threads."""

    def __init__(self, files: SessionFiles) -> None:
        self.files = files
        self._lock = threading.Lock()
        self._listed: dict[str, _Listed] = {}
        self._folder_key: StatKey | None = None  # the folder's stat when `_listed` was complete and can be reused

    def page(self, cwd: str | None, cursor: str | None, limit: int) -> tuple[list[SessionSummary], str | None]:
        """One page of sessions, newest first, optionally only those whose cwd is `cwd`, and the next cursor."""
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        after = _decode_cursor(cursor, cwd) if cursor is not None else None
        with self._lock:
            listed = self._scan()
        rows = [
            (item.order, item.summary)
            for item in listed
            if item.summary is not None and item.summary.prompted and (cwd is None or item.summary.cwd == cwd)
        ]
        rows.sort(key=lambda row: row[0], reverse=True)
        if after is not None:
            rows = [row for row in rows if row[0] < after]
        page = [summary for _, summary in rows[:limit]]
        next_cursor = _encode_cursor(page[-1], cwd) if len(rows) > limit else None
        return page, next_cursor

    def _scan(self) -> list[_Listed]:
        """Every listable session, reusing what was parsed before for files that have not changed since."""
        root = self.files.root
        began = time.time_ns()
        try:
            folder = os.stat(root)
        except FileNotFoundError:
            self._listed.clear()
            self._folder_key = None
            return []
        except OSError as error:
            raise StoreError(f"cannot read the session directory {root}: {error}") from error
        folder_key = stat_key(folder)
        if folder_key == self._folder_key:
            return list(self._listed.values())
        self._folder_key = None

        records: dict[str, os.DirEntry[str]] = {}
        summaries: dict[str, os.DirEntry[str]] = {}
        temps: list[os.DirEntry[str]] = []
        try:
            with os.scandir(root) as entries:
                for entry in entries:
                    name = entry.name
                    if name.startswith("."):
                        if name.endswith(TEMP_SUFFIX):
                            temps.append(entry)
                    elif name.endswith(SUMMARY_SUFFIX):
                        summaries[name[: -len(SUMMARY_SUFFIX)]] = entry
                    elif name.endswith(RECORD_SUFFIX):
                        records[name[: -len(RECORD_SUFFIX)]] = entry
        except FileNotFoundError:
            self._listed.clear()
            return []
        except OSError as error:
            raise StoreError(f"cannot read the session directory {root}: {error}") from error

        result: list[_Listed] = []
        for session_id, entry in records.items():
            if not ID_PATTERN.fullmatch(session_id):
                continue
            try:
                record_key = stat_key(entry.stat())
            except OSError:  # deleted meanwhile
                continue
            summary_entry = summaries.get(session_id)
            summary_key: StatKey | None = None
            if summary_entry is not None:
                with contextlib.suppress(OSError):
                    summary_key = stat_key(summary_entry.stat())
            known = self._listed.get(session_id)
            if known is None or known.record_key != record_key or known.summary_key != summary_key:
                known = self._list_one(session_id, record_key, summary_key)
            self._listed[session_id] = known
            result.append(known)

        for gone in self._listed.keys() - records.keys():
            del self._listed[gone]
        for session_id in summaries.keys() - records.keys():
            self.files.drop_orphan_summary(session_id)
        for entry in temps:
            self.files.drop_stale_temp(entry)
        settled = _SETTLED_NS if folder.st_mtime_ns % 1_000_000_000 else _SETTLED_WHOLE_SECONDS_NS
        if began - folder.st_mtime_ns > settled and len(result) == len(self._listed):
            self._folder_key = folder_key
        return result

    def _list_one(self, session_id: str, record_key: StatKey, summary_key: StatKey | None) -> _Listed:
        summary, summary_key = self.files.summary_for_listing(session_id, record_key, summary_key)
        if summary is None:
            return _Listed(record_key, summary_key, None, (datetime.min.replace(tzinfo=UTC), session_id))
        return _Listed(record_key, summary_key, summary, _order(summary))


def _order(summary: SessionSummary) -> Order:
    return (parse_time(summary.updated_at), summary.session_id)


def _encode_cursor(last: SessionSummary, cwd: str | None) -> str:
    payload = {"v": _CURSOR_VERSION, "u": last.updated_at, "i": last.session_id, "c": cwd}
    raw = json.dumps(payload, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str, cwd: str | None) -> Order:
    """The position after which the next page starts; InvalidCursor unless `cursor` came from `list` with `cwd`."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        payload = json.loads(raw)
        if (
            not isinstance(payload, dict)
            or payload.get("v") != _CURSOR_VERSION
            or not isinstance(payload.get("u"), str)
            or not isinstance(payload.get("i"), str)
            or not ID_PATTERN.fullmatch(payload["i"])
        ):
            raise ValueError("unexpected content")
        position = (parse_time(payload["u"]), payload["i"])
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError):
        raise InvalidCursor(f"invalid cursor {cursor!r}") from None
    if payload.get("c") != cwd:
        raise InvalidCursor(f"cursor {cursor!r} belongs to a listing with another cwd filter")
    return position
