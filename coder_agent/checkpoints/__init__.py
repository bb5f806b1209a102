"""Checkpoints: snapshots of the files a turn changes, so `/undo` can put them back.

* `records`: `FileSnapshot` / `TurnCheckpoint` (what one turn changed, kept in the session record as plain dicts),
  `FileRestore` / `UndoPlan` (what undoing it takes) and `CheckpointError`;
* `blobs`: where the snapshot content lives: the repository's own object database inside git (`GitBlobStore`, kept
  alive by a private ref per session), content-addressed files under the user data folder outside it
  (`FileBlobStore`, a folder per session), and `release_session`, which drops a deleted session's snapshots;
* `recorder`: `Checkpoints`, the per-session recorder (`begin_turn`, `before_change`, `after_change`, `end_turn`)
  and `undo_last`, which plans the undo of the newest turn and writes nothing itself.
"""

from coder_agent.checkpoints.blobs import (
    BLOBS_DIR,
    REF_PREFIX,
    BlobStore,
    FileBlobStore,
    GitBlobStore,
    blob_store_for,
    release_session,
)
from coder_agent.checkpoints.recorder import Checkpoints, ReadCurrent
from coder_agent.checkpoints.records import CheckpointError, FileRestore, FileSnapshot, TurnCheckpoint, UndoPlan

__all__ = [
    "BLOBS_DIR",
    "REF_PREFIX",
    "BlobStore",
    "CheckpointError",
    "Checkpoints",
    "FileBlobStore",
    "FileRestore",
    "FileSnapshot",
    "GitBlobStore",
    "ReadCurrent",
    "TurnCheckpoint",
    "UndoPlan",
    "blob_store_for",
    "release_session",
]
