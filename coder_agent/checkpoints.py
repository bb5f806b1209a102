"""Checkpoints: snapshots of the files a turn changes, so `/undo` can put them back.

This module owns:

* `FileSnapshot` / `TurnCheckpoint`: what one turn changed (the content of each file before the turn's first
  change of it, by blob id, and a digest of what the turn's last change left), JSON-serializable so the caller can
  keep `Checkpoints.history` in the session record;
* `Checkpoints`: the per-session recorder (`begin_turn`, `before_change`, `after_change`, `end_turn`) and
  `undo_last`, which pops the newest checkpoint and returns an `UndoPlan` (what to write back, what to delete, and
  which files the user changed since the agent's edit). It writes nothing itself: the caller writes through the
  editor (`fs/write_text_file`), or calls `apply_locally(plan)`;
* the blob stores behind it (`BlobStore`, `GitBlobStore`, `FileBlobStore`, `blob_store_for`).

Where the content lives
-----------------------
Inside a git work tree (`GitBlobStore`), snapshots are blobs in the repository's own object database, written with
`git hash-object -w --stdin` and read with `git cat-file blob`; neither touches the index, HEAD, branches, the
stash or the working tree. `git gc` prunes unreachable objects (after `gc.pruneExpire`, two weeks by default; at
once with `--prune=now`), so each session keeps the blobs its checkpoints still need reachable from a private ref,
`refs/coder-agent/checkpoints/<session>`, that points straight at a tree object built with `git mktree` (one
entry per blob, named by its id). A tree rather than a commit: `git log --all`, graph views and `git branch`
ignore a ref to a tree, so nothing shows in the user's history, and fetch, clone and push (short of `--mirror`)
ignore refs outside `refs/heads` and `refs/tags`. The ref is rewritten when that set changes (a new snapshot, an
undo) and deleted when it empties or on `Checkpoints.discard()`. Linked worktrees share it with the main one.

Outside git (`FileBlobStore`), snapshots are content-addressed files (named by the sha256 of the content) under
`<user data dir>/coder-agent/blobs/<2 hex>/<62 hex>`, written atomically, private to the user, shared by every
session and never collected automatically.

Blocking work (git processes, file I/O) runs in worker threads; `git` (gitpython) is imported lazily, in them.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import tempfile
import uuid
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import anyio.to_thread
import platformdirs

from coder_agent.atomic import write_atomic
from coder_agent.config import APP_NAME

if TYPE_CHECKING:
    import git

log = logging.getLogger(__name__)

REF_PREFIX = "refs/coder-agent/checkpoints/"
"""The private ref namespace: one ref per session, pointing at a tree of the blobs its checkpoints need."""
BLOBS_DIR = "blobs"
"""The folder of `FileBlobStore` under the user data directory."""
_BLOB_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
"""A git object id (sha1 or sha256) or a `FileBlobStore` id (sha256), lowercase hex."""
_SAFE_REF_PART = re.compile(r"[^A-Za-z0-9_-]")
"""The mode `apply_locally` gives a file it recreates (one the user deleted since the turn)."""

ReadCurrent = Callable[[Path], Awaitable[str | bytes | None]]
"""Reads a file as it is now for `undo_last` (None: it does not exist), e.g. through the editor."""


class CheckpointError(Exception):
    """A snapshot could not be stored or read back, or the recorder was used out of order."""


# --- records --------------------------------------------------------------------------------------------------------


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
            if value is not None and not (isinstance(value, str) and _BLOB_ID.fullmatch(value)):
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
    """What undoing one turn takes; the caller carries it out (or calls `apply_locally`)."""

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


# --- blob stores ----------------------------------------------------------------------------------------------------


class BlobStore(Protocol):
    """Content-addressed storage of snapshot bytes. Blocking: call it from a worker thread."""

    def put(self, data: bytes) -> str:
        """Store `data`; returns its blob id. Raises CheckpointError."""
        ...

    def get(self, blob: str) -> bytes:
        """The bytes stored under `blob`. Raises CheckpointError if they are gone or the id is malformed."""
        ...

    def retain(self, owner: str, blobs: Collection[str]) -> None:
        """Keep exactly `blobs` alive on behalf of `owner` (a session id), replacing what it kept before.

        An empty collection releases everything the owner kept. Raises CheckpointError.
        """
        ...


class GitBlobStore:
    """Blobs in a git repository's object database, kept alive by a private ref per owner (see the module doc)."""

    def __init__(self, work_dir: Path) -> None:
        self.work_dir = work_dir
        self._git: git.Git | None = None

    def put(self, data: bytes) -> str:
        blob = self._run(["hash-object", "-w", "--stdin"], data).decode("ascii").strip()
        if not _BLOB_ID.fullmatch(blob):
            raise CheckpointError(f"git hash-object answered {blob!r}")
        return blob

    def get(self, blob: str) -> bytes:
        _check_blob_id(blob)
        return self._run(["cat-file", "blob", blob])

    def retain(self, owner: str, blobs: Collection[str]) -> None:
        ref = self.ref_for(owner)
        if not blobs:
            self._run(["update-ref", "-d", ref])
            return
        for blob in blobs:
            _check_blob_id(blob)
        listing = "".join(f"100644 blob {blob}\t{blob}\n" for blob in sorted(set(blobs)))
        tree = self._run(["mktree"], listing.encode("ascii")).decode("ascii").strip()
        self._run(["update-ref", ref, tree])

    @staticmethod
    def ref_for(owner: str) -> str:
        """The private ref of `owner`: its id where that is ref-safe, else a sanitized id plus a hash of it."""
        safe = _SAFE_REF_PART.sub("_", owner)
        if safe != owner or not safe:
            safe = f"{safe}-{hashlib.sha256(owner.encode('utf-8')).hexdigest()[:12]}"
        return REF_PREFIX + safe

    def _run(self, args: list[str], stdin: bytes | None = None) -> bytes:
        import git

        if self._git is None:
            self._git = git.Git(str(self.work_dir))
        command = [git.Git.GIT_PYTHON_GIT_EXECUTABLE or "git", *args]
        try:
            with tempfile.TemporaryFile() as handle:
                if stdin is not None:
                    handle.write(stdin)
                    handle.seek(0)
                output = self._git.execute(
                    command,
                    istream=handle if stdin is not None else None,
                    stdout_as_string=False,
                    strip_newline_in_stdout=False,
                )
        except (git.GitCommandError, OSError) as exc:
            raise CheckpointError(f"git {args[0]} failed in {self.work_dir}: {exc}") from exc
        if not isinstance(output, bytes):
            raise CheckpointError(f"git {args[0]} answered {type(output).__name__}, not bytes")
        return output


class FileBlobStore:
    """Content-addressed files (sha256) under `root`, written atomically; `retain` keeps everything."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def put(self, data: bytes) -> str:
        blob = hashlib.sha256(data).hexdigest()
        path = self._path(blob)
        try:
            if path.is_file() and path.stat().st_size == len(data):
                return blob
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            write_atomic(path, data, mode=0o600)
        except OSError as exc:
            raise CheckpointError(f"could not store a snapshot under {self.root}: {exc}") from exc
        return blob

    def get(self, blob: str) -> bytes:
        path = self._path(blob)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise CheckpointError(f"snapshot {blob} is gone from {self.root}: {exc.strerror or exc}") from exc
        if hashlib.sha256(data).hexdigest() != blob:
            raise CheckpointError(f"snapshot {blob} under {self.root} is corrupt")
        return data

    def retain(self, owner: str, blobs: Collection[str]) -> None:
        """Nothing to do: these files are never collected automatically."""

    def _path(self, blob: str) -> Path:
        if len(blob) != 64:
            raise CheckpointError(f"not a snapshot id: {blob!r}")
        _check_blob_id(blob)
        return self.root / blob[:2] / blob[2:]


def blob_store_for(cwd: Path, data_dir: Path | None = None) -> BlobStore:
    """A `GitBlobStore` if `cwd` is inside a git work tree, else a `FileBlobStore` under `data_dir`/blobs.

    `data_dir` defaults to the platformdirs user data directory of coder-agent. Blocking (runs git).
    """
    if _inside_git_work_tree(cwd):
        return GitBlobStore(cwd)
    return FileBlobStore((data_dir or platformdirs.user_data_path(APP_NAME)) / BLOBS_DIR)


def _inside_git_work_tree(cwd: Path) -> bool:
    try:
        import git

        answer = git.Git(str(cwd)).rev_parse("--is-inside-work-tree")
    except Exception as exc:  # no git, not a repository, an unsafe one, a missing folder: no git store
        log.debug("no git store for %s: %s", cwd, exc)
        return False
    return bool(answer.strip() == "true")


def _check_blob_id(blob: str) -> None:
    if not _BLOB_ID.fullmatch(blob):
        raise CheckpointError(f"not a snapshot id: {blob!r}")


# --- the recorder ---------------------------------------------------------------------------------------------------


@dataclass
class _OpenTurn:
    turn_id: str
    created_at: str
    files: dict[str, FileSnapshot] = field(default_factory=dict)


class Checkpoints:
    """Records what each turn changes, per session, and plans undoing the newest turn.

    The tool that writes a file calls `before_change` right before writing it and `after_change` right after;
    the turn runner brackets each turn with `begin_turn` / `end_turn`. `history` holds the checkpoints of the turns
    that changed something, oldest first; restore it from the session record with `TurnCheckpoint.from_dict` (and
    the same `session_id`, whose private git ref keeps the blobs alive).
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
        self._store = store
        self._data_dir = data_dir
        self._turn: _OpenTurn | None = None
        self._lock = anyio.Lock()

    @property
    def turn_open(self) -> bool:
        return self._turn is not None

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

    async def discard(self) -> None:
        """Forget every checkpoint and release their blobs (deletes the session's private git ref)."""
        self._turn = None
        async with self._lock:
            self.history.clear()
            await self._retain(set())

    # --- internals ---

    def _key(self, path: Path) -> str:
        return os.path.abspath(self.cwd / path)

    def _live_blobs(self) -> set[str]:
        turns: Iterable[Iterable[FileSnapshot]] = [c.files for c in self.history]
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
        blob = store.put(data)
        if blob not in live:
            try:
                store.retain(self.session_id, live | {blob})
            except CheckpointError as exc:  # the blob is still safe from gc for gc.pruneExpire (two weeks)
                log.warning("could not protect snapshots from garbage collection: %s", exc)
        return blob

    def _read_blobs(self, files: list[FileSnapshot]) -> list[bytes | None]:
        store = self._get_store()
        return [None if f.blob is None else store.get(f.blob) for f in files]

    async def _retain(self, live: set[str]) -> None:
        def work() -> None:
            self._get_store().retain(self.session_id, live)

        try:
            await anyio.to_thread.run_sync(work)
        except CheckpointError as exc:
            log.warning("could not update the snapshots kept for session %s: %s", self.session_id, exc)


async def apply_locally(plan: UndoPlan) -> None:
    """Carry out `plan` on the local disk: atomic writes (keeping file modes), deletes of files the turn created."""
    for restore in plan.files:
        await anyio.to_thread.run_sync(_apply, restore)


def _apply(restore: FileRestore) -> None:
    path = Path(restore.path)
    if restore.text is None:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, _encode(restore.text))


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
