"""The recorder: what each turn changes, per session, and the plan to undo the newest turn.

`Checkpoints.begin_turn` / `end_turn` bracket a turn; the tool that writes a file calls `before_change` right before
writing it (the first call per file and turn snapshots its content into the blob store) and `after_change` right
after (a digest of what it wrote). `undo_last` pops the newest checkpoint and returns an `UndoPlan`: what to write
back, what to delete, and which files changed since the agent's edit. It writes nothing itself: the caller writes
through the editor. Blobs the history no longer needs are released as checkpoints leave it (`BlobStore.retain`).
A forked session's recorder takes its history's blobs from the session it was forked from (`copy_blobs_from`),
so each keeps its own: an undo in one, or deleting one, never releases what the other needs.

A rewind (`session.rewind`) goes back over several turns at once: `plan_restore` plans putting back the files of a
list of checkpoints (each file as it was before the oldest of them changed it), and `keep` holds on to the blobs of
checkpoints that left the history but may come back (the session before a rewind, which can be undone).
"""

from __future__ import annotations

import hashlib
import logging
import os
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

import anyio
import anyio.to_thread

from coder_agent.checkpoints.blobs import BlobStore, blob_store_for
from coder_agent.checkpoints.records import CheckpointError, FileRestore, FileSnapshot, TurnCheckpoint, UndoPlan

__all__ = ["Checkpoints", "ReadCurrent"]

log = logging.getLogger(__name__)

ReadCurrent = Callable[[Path], Awaitable[str | bytes | None]]
"""Reads a file as it is now for `undo_last` (None: it does not exist), e.g. through the editor."""


@dataclass
class _OpenTurn:
    turn_id: str
    created_at: str
    files: dict[str, FileSnapshot] = field(default_factory=dict)


class Checkpoints:
    """Records what each turn changes, per session, and plans undoing the newest turn.

    The tool that writes a file calls `before_change` right before writing it and `after_change` right after;
    the turn runner brackets each turn with `begin_turn` / `end_turn`. `history` holds the checkpoints of the turns
    that changed something, oldest first; `restore` takes it back from the session record (made with the same
    `session_id`, whose private git ref keeps the blobs alive).
    """

    def __init__(
        self,
        cwd: Path,
        store: BlobStore | None = None,
        session_id: str | None = None,
        data_dir: Path | None = None,
    ) -> None:
        """`store` None: `blob_store_for(cwd, data_dir)`, chosen on first use; `session_id` None: a fresh one."""
        self.cwd = cwd
        self.session_id = session_id or uuid.uuid4().hex
        self.history: list[TurnCheckpoint] = []
        self.kept: list[TurnCheckpoint] = []
        """Checkpoints out of the history whose blobs are still needed (a rewind's state before, see `keep`)."""
        self._store = store
        self._data_dir = data_dir
        self._turn: _OpenTurn | None = None
        self._lock = anyio.Lock()

    @property
    def current_turn(self) -> str | None:
        """The id of the turn being recorded, or None between turns."""
        return self._turn.turn_id if self._turn is not None else None

    def begin_turn(self, turn_id: str) -> None:
        """Start recording a turn; a turn still open is ended first (its checkpoint kept)."""
        if self._turn is not None:
            self.end_turn()
        self._turn = _OpenTurn(turn_id, datetime.now(UTC).isoformat(timespec="seconds"))

    async def before_change(self, path: Path, current_text: str | None) -> None:
        """Snapshot `path` before the turn's first change of it (`current_text` None: it does not exist yet).

        Later calls for the same file in the same turn keep the first snapshot. Raises CheckpointError if no turn
        is open or the content cannot be stored; then the caller should not count on undoing the write.
        """
        turn = self._turn
        if turn is None:
            raise CheckpointError("before_change outside a turn: call begin_turn first")
        key = self._key(path)
        async with self._lock:
            if key in turn.files:
                return
            data = None if current_text is None else _encode(current_text)
            live = self._live_blobs()
            blob = await anyio.to_thread.run_sync(self._snapshot, data, live)
            turn.files[key] = FileSnapshot(key, blob)

    def after_change(self, path: Path, new_text: str) -> None:
        """Note what the turn wrote to `path`, so an undo can tell whether the file changed since."""
        turn = self._turn
        key = self._key(path)
        if turn is None or key not in turn.files:
            log.debug("after_change without before_change for %s; ignored", key)
            return
        turn.files[key] = replace(turn.files[key], after=_digest(_encode(new_text)))

    def end_turn(self) -> TurnCheckpoint | None:
        """Close the open turn; its checkpoint (appended to `history`), or None if it changed nothing."""
        turn, self._turn = self._turn, None
        if turn is None or not turn.files:
            return None
        checkpoint = TurnCheckpoint(turn.turn_id, turn.created_at, list(turn.files.values()))
        self.history.append(checkpoint)
        return checkpoint

    def restore(self, history: list[TurnCheckpoint]) -> None:
        """The checkpoints of a stored session, oldest first."""
        self.history = list(history)

    async def copy_blobs_from(self, source: Checkpoints) -> None:
        """Keep, on this session's behalf, the blobs its history needs, read from `source` (the session it was forked
        from). A checkpoint whose snapshots cannot be read there any more leaves the history (logged)."""

        def work() -> list[TurnCheckpoint]:
            kept: list[TurnCheckpoint] = []
            for checkpoint in self.history:
                try:
                    data = source._read_blobs(checkpoint.files)
                    for blob in data:
                        if blob is not None:
                            self._get_store().put(self.session_id, blob)
                except CheckpointError as exc:
                    log.warning("session %s: undo of turn %s left out: %s", self.session_id, checkpoint.turn_id, exc)
                    continue
                kept.append(checkpoint)
            return kept

        async with self._lock:
            self.history = await anyio.to_thread.run_sync(work)
            await self._retain(self._live_blobs())

    def put_back(self, checkpoint: TurnCheckpoint) -> None:
        """An undo that could not finish: its checkpoint is the newest again, so it can be tried once more."""
        self.history.append(checkpoint)

    async def undo_last(self, read_current: ReadCurrent | None = None) -> UndoPlan | None:
        """Pop the newest checkpoint with changes and plan restoring its files; None if there is none.

        An open turn is ended first, so its changes are the ones undone. `read_current` reads a file as it is now
        (default: from disk) to flag the files changed since the agent's edit. Nothing is written. Raises
        CheckpointError (and keeps the checkpoint) if a snapshot cannot be read back.
        """
        if self._turn is not None:
            self.end_turn()
        async with self._lock:
            while self.history and not self.history[-1].files:
                self.history.pop()
            if not self.history:
                return None
            checkpoint = self.history[-1]
            before = await anyio.to_thread.run_sync(self._read_blobs, checkpoint.files)
            restores = []
            for snapshot, data in zip(checkpoint.files, before, strict=True):
                now = await (read_current or _read_disk)(Path(snapshot.path))
                now_bytes = _encode(now) if isinstance(now, str) else now
                changed = snapshot.after is not None and (now_bytes is None or _digest(now_bytes) != snapshot.after)
                text = None if data is None else data.decode("utf-8", errors="surrogateescape")
                restores.append(FileRestore(snapshot.path, text, changed))
            self.history.pop()
            await self._retain(self._live_blobs())
            return UndoPlan(checkpoint, tuple(restores))

    async def keep(self, checkpoints: list[TurnCheckpoint]) -> None:
        """Hold on to the blobs of these checkpoints besides the history's (replacing those held before)."""
        async with self._lock:
            self.kept = list(checkpoints)
            await self._retain(self._live_blobs())

    async def plan_restore(
        self, checkpoints: list[TurnCheckpoint], read_current: ReadCurrent | None = None
    ) -> list[FileRestore]:
        """Plan putting back every file these checkpoints (oldest first) changed, as it was before the first of them
        changed it; `changed_since` flags a file that differs from what the last of them left. Writes nothing.
        Raises CheckpointError if a snapshot cannot be read back."""
        first: dict[str, FileSnapshot] = {}
        last: dict[str, FileSnapshot] = {}
        for checkpoint in checkpoints:
            for snapshot in checkpoint.files:
                first.setdefault(snapshot.path, snapshot)
                last[snapshot.path] = snapshot
        snapshots = list(first.values())
        async with self._lock:
            before = await anyio.to_thread.run_sync(self._read_blobs, snapshots)
        restores = []
        for snapshot, data in zip(snapshots, before, strict=True):
            after = last[snapshot.path].after
            now = await (read_current or _read_disk)(Path(snapshot.path))
            now_bytes = _encode(now) if isinstance(now, str) else now
            changed = after is not None and (now_bytes is None or _digest(now_bytes) != after)
            text = None if data is None else data.decode("utf-8", errors="surrogateescape")
            restores.append(FileRestore(snapshot.path, text, changed))
        return restores

    # --- internals ---

    def _key(self, path: Path) -> str:
        return os.path.abspath(self.cwd / path)

    def _live_blobs(self) -> set[str]:
        turns: Iterable[Iterable[FileSnapshot]] = [c.files for c in [*self.history, *self.kept]]
        if self._turn is not None:
            turns = [*turns, self._turn.files.values()]
        return {s.blob for files in turns for s in files if s.blob is not None}

    def _get_store(self) -> BlobStore:
        """The store, chosen on first use (blocking: call from a worker thread, under the lock)."""
        if self._store is None:
            self._store = blob_store_for(self.cwd, self._data_dir)
        return self._store

    def _snapshot(self, data: bytes | None, live: set[str]) -> str | None:
        if data is None:
            return None
        store = self._get_store()
        blob = store.put(self.session_id, data)
        if blob not in live:
            try:
                store.retain(self.session_id, live | {blob})
            except CheckpointError as exc:  # still safe for a while: git prunes after two weeks, the file store an hour
                log.warning("could not protect snapshots from garbage collection: %s", exc)
        return blob

    def _read_blobs(self, files: list[FileSnapshot]) -> list[bytes | None]:
        store = self._get_store()
        return [None if f.blob is None else store.get(self.session_id, f.blob) for f in files]

    async def _retain(self, live: set[str]) -> None:
        """Keep only `live` on behalf of this session (after an undo: the rest is released)."""

        def work() -> None:
            self._get_store().retain(self.session_id, live)

        try:
            await anyio.to_thread.run_sync(work)
        except CheckpointError as exc:
            log.warning("could not update the snapshots kept for session %s: %s", self.session_id, exc)


async def _read_disk(path: Path) -> bytes | None:
    try:
        return await anyio.Path(path).read_bytes()
    except OSError:
        return None


def _encode(text: str) -> bytes:
    """UTF-8; surrogateescape round-trips text decoded from undecodable bytes, other lone surrogates pass."""
    try:
        return text.encode("utf-8", errors="surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", errors="surrogatepass")


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
