"""The store's errors: `StoreError` and the three that callers tell apart."""

from __future__ import annotations

__all__ = ["InvalidCursor", "InvalidSessionId", "SessionNotFound", "StoreError"]


class StoreError(Exception):
    """A session could not be saved, loaded, deleted or listed; the message names the file at fault."""


class SessionNotFound(StoreError):
    """No session with this id is stored (or it was deleted)."""


class InvalidCursor(StoreError):
    """A `list` cursor that this store did not hand out (or one handed out for another `cwd`)."""


class InvalidSessionId(StoreError):
    """A session id with characters outside `[A-Za-z0-9_-]` (or empty, or too long)."""
