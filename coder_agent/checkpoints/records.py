"""What a checkpoint records, and what an undo plans: the data of `/undo`, JSON-serializable, with its error.

* `FileSnapshot` / `TurnCheckpoint`: what one turn changed (the content of each file before the turn's first change
  of it, by blob id, and a digest of what the turn's last change left), kept in the session record as plain dicts
  (`to_dict` / `from_dict`, which refuses malformed data, blob ids included);
* `FileRestore` / `UndoPlan`: what undoing one turn takes; the caller carries it out (through the editor);
* `CheckpointError`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BLOB_ID", "CheckpointError", "FileRestore", "FileSnapshot", "TurnCheckpoint", "UndoPlan", "check_blob_id"]

BLOB_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
"""A git object id (sha1 or sha256) or a `FileBlobStore` id (sha256), lowercase hex."""


class CheckpointError(Exception):
    """A snapshot could not be stored or read back, or the recorder was used out of order."""


def check_blob_id(blob: str) -> None:
    """CheckpointError unless `blob` is a well-formed blob id (so it can never name a path or a git revision)."""
    if not BLOB_ID.fullmatch(blob):
        raise CheckpointError(f"not a snapshot id: {blob!r}")


@dataclass(frozen=True)
class FileSnapshot:
    """One file a turn changed."""

    path: str
    """Absolute path of the file."""
    blob: str | None
    """Blob id of the content before the turn's first change of the file; None: the file did not exist."""
    after: str | None = None
    """sha256 (hex) of the content the turn's last change left; None: not recorded (then never flagged)."""

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "blob": self.blob, "after": self.after}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FileSnapshot:
        path, blob, after = data.get("path"), data.get("blob"), data.get("after")
        if not isinstance(path, str) or not path:
            raise ValueError(f"a file snapshot needs a path, not {path!r}")
        for name, value in (("blob", blob), ("after", after)):
            if value is not None and not (isinstance(value, str) and BLOB_ID.fullmatch(value)):
                raise ValueError(f"bad {name} {value!r} in the snapshot of {path}")
        return cls(path=path, blob=blob, after=after)


@dataclass
class TurnCheckpoint:
    """The files one turn changed, in the order of their first change."""

    turn_id: str
    created_at: str
    """When the turn began, ISO 8601 in UTC."""
    files: list[FileSnapshot] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"turn_id": self.turn_id, "created_at": self.created_at, "files": [f.to_dict() for f in self.files]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TurnCheckpoint:
        turn_id, created_at, files = data.get("turn_id"), data.get("created_at"), data.get("files")
        if not isinstance(turn_id, str) or not isinstance(created_at, str) or not isinstance(files, list):
            raise ValueError("a turn checkpoint needs turn_id, created_at (strings) and files (a list)")
        if not all(isinstance(f, Mapping) for f in files):
            raise ValueError("each file of a turn checkpoint must be an object")
        return cls(turn_id=turn_id, created_at=created_at, files=[FileSnapshot.from_dict(f) for f in files])


@dataclass(frozen=True)
class FileRestore:
    """One step of an undo: write `text` back to `path`, or delete it when `text` is None."""

    path: str
    text: str | None
    changed_since: bool = False
    """The file differs now from what the agent's turn left in it (the user, or something else, changed it)."""

    @property
    def delete(self) -> bool:
        """The turn created the file, so undoing it deletes the file."""
        return self.text is None


@dataclass(frozen=True)
class UndoPlan:
    """What undoing one turn takes; the caller carries it out."""

    checkpoint: TurnCheckpoint
    """The checkpoint popped from the history; append it back if carrying the plan out fails."""
    files: tuple[FileRestore, ...]

    @property
    def turn_id(self) -> str:
        return self.checkpoint.turn_id

    @property
    def changed_since(self) -> list[str]:
        """Paths changed since the agent's edit: undo overwrites (or deletes) those changes too."""
        return [f.path for f in self.files if f.changed_since]
