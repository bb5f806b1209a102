"""Persistence of ACP sessions: one JSON file per session, schema-versioned, written atomically.

* `records`: `SessionRecord` (everything needed to resume a session) and `SessionSummary` (what `session/list`
  shows), the schema version, ids and timestamps (`utc_now`);
* `files`: the files on disk, atomic saves, loads and deletes, and crash repair (the layout is described there);
* `listing`: pages newest first, cursors tied to their filter, and the caches that keep listing cheap;
* `errors`: `StoreError` and its subclasses `SessionNotFound`, `InvalidCursor`, `InvalidSessionId`.

`SessionStore` puts them together, under one directory (by default `platformdirs.user_data_path("coder-agent") /
"sessions"`, created on the first write). Deleting a session also releases the undo snapshots it kept
(`checkpoints.release_session`). Everything is synchronous; nothing here writes to stdout.
"""

from __future__ import annotations

import builtins
from pathlib import Path

from coder_agent.checkpoints import release_session
from coder_agent.store.errors import InvalidCursor, InvalidSessionId, SessionNotFound, StoreError
from coder_agent.store.files import SessionFiles, default_root
from coder_agent.store.listing import SessionListing
from coder_agent.store.records import SCHEMA_VERSION, SessionRecord, SessionSummary, parse_time, utc_now

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
    "parse_time",
    "utc_now",
]


class SessionStore(SessionFiles):
    """Sessions on disk under `root`: `save`, `load`, `delete`, `list`. Synchronous; safe to share between threads."""

    def __init__(self, root: Path | None = None) -> None:
        super().__init__(root)
        self._listing = SessionListing(self)

    def delete(self, session_id: str) -> None:
        """Remove a session's files, then release its undo snapshots; deleting a session that is not stored
        succeeds silently."""
        cwd = self.stored_cwd(session_id)
        super().delete(session_id)
        release_session(session_id, cwd)

    def list(
        self, cwd: str | None = None, cursor: str | None = None, limit: int = 50
    ) -> tuple[builtins.list[SessionSummary], str | None]:
        """One page of sessions, newest first (by `updated_at`, then id), optionally only those whose cwd is `cwd`.

        Returns the page and the cursor of the next one (None after the last). A cursor marks a position in that
        order, not an offset: sessions saved or deleted between two calls never make a later page repeat or skip
        the others (a session saved meanwhile moves to the front, which a walk already past it does not revisit).
        """
        return self._listing.page(cwd, cursor, limit)
