"""Where snapshot content lives: the blob stores behind the checkpoints, and releasing a deleted session's blobs.

Every operation is on behalf of an owner (a session id), so that what one session keeps is released without
looking at any other session.

Inside a git work tree (`GitBlobStore`), snapshots are blobs in the repository's own object database, written with
`git hash-object -w --stdin` and read with `git cat-file blob`; neither touches the index, HEAD, branches, the
stash or the working tree. `git gc` prunes unreachable objects (after `gc.pruneExpire`, two weeks by default; at
once with `--prune=now`), so each session keeps the blobs its checkpoints still need reachable from a private ref,
`refs/coder-agent/checkpoints/<session>`, that points straight at a tree object built with `git mktree` (one
entry per blob, named by its id). A tree rather than a commit: `git log --all`, graph views and `git branch`
ignore a ref to a tree, so nothing shows in the user's history, and fetch, clone and push (short of `--mirror`)
ignore refs outside `refs/heads` and `refs/tags`. The ref is rewritten when that set changes (a new snapshot, an
undo) and deleted when it empties or the session is deleted. Linked worktrees share it with the main one.

Outside git (`FileBlobStore`), snapshots are content-addressed files (named by the sha256 of the content), one
folder per session: `<user data dir>/coder-agent/blobs/sessions/<session>/<64 hex>`, written atomically, private
to the user. When a session's checkpoints no longer need a blob (an undo), it is deleted once it is an hour old
(younger ones may still be named by a session record saved before the undo, or by the same session open in another
agent process); deleting the session deletes its folder. Earlier versions kept one shared folder,
`blobs/<2 hex>/<62 hex>`; blobs there are still read, and never deleted (no one knows which sessions use them).

Git runs through `own_git.run_sync` (outside the walls, with config that beats the repository's and no secrets:
see there): `hash-object` without filters, `cat-file` without replace refs, `update-ref` without hooks. A blob read
back is checked against its id (git's object hash of the bytes), so a loose object rewritten in the workspace's
`.git` by a command cannot make an undo write something else.

Everything here blocks (git processes, file I/O): call it from a worker thread.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import shutil
import time
from collections.abc import Collection
from pathlib import Path
from typing import Protocol

import platformdirs

from coder_agent import own_git
from coder_agent.atomic import write_atomic
from coder_agent.checkpoints.records import BLOB_ID, CheckpointError, check_blob_id
from coder_agent.config import APP_NAME

__all__ = [
    "BLOBS_DIR",
    "REF_PREFIX",
    "BlobStore",
    "FileBlobStore",
    "GitBlobStore",
    "blob_store_for",
    "owner_key",
    "release_session",
]

log = logging.getLogger(__name__)

REF_PREFIX = "refs/coder-agent/checkpoints/"
"""The private ref namespace: one ref per session, pointing at a tree of the blobs its checkpoints need."""
BLOBS_DIR = "blobs"
"""The folder of `FileBlobStore` under the user data directory."""
SESSIONS_DIR = "sessions"
"""The folder of the per-session folders inside the `FileBlobStore` root."""
RELEASED_BLOB_GRACE_SECONDS = 3600
"""How old a blob no checkpoint needs must be before `FileBlobStore.retain` deletes it."""
GIT_TIMEOUT = 60.0
"""One git of the blob store at most, in seconds (a snapshot of a big file into a slow disk)."""

_UNSAFE_OWNER_CHARS = re.compile(r"[^A-Za-z0-9_-]")


class BlobStore(Protocol):
    """Content-addressed storage of snapshot bytes, on behalf of owners (session ids). Blocking."""

    def put(self, owner: str, data: bytes) -> str:
        """Store `data`; returns its blob id. Raises CheckpointError."""
        ...

    def get(self, owner: str, blob: str) -> bytes:
        """The bytes stored under `blob`. Raises CheckpointError if they are gone or the id is malformed."""
        ...

    def retain(self, owner: str, blobs: Collection[str]) -> None:
        """Keep exactly `blobs` alive on behalf of `owner`, replacing what it kept before.

        An empty collection releases everything the owner kept. Raises CheckpointError.
        """
        ...


def owner_key(owner: str) -> str:
    """`owner` as a ref or folder name: itself where it is made of `[A-Za-z0-9_-]`, else a sanitized form plus a
    hash of it (so that two owners never share a name)."""
    safe = _UNSAFE_OWNER_CHARS.sub("_", owner)
    if safe != owner or not safe:
        safe = f"{safe}-{hashlib.sha256(owner.encode('utf-8')).hexdigest()[:12]}"
    return safe


class GitBlobStore:
    """Blobs in a git repository's object database, kept alive by a private ref per owner (see the module doc)."""

    def __init__(self, work_dir: Path, root: Path | None = None) -> None:
        """`root`: the repository's folder (the one with `.git`); found from `work_dir` when not given."""
        self.work_dir = work_dir
        self.root = root if root is not None else own_git.find_root(work_dir) or work_dir

    def put(self, owner: str, data: bytes) -> str:
        blob = self._run(["hash-object", "-w", "--no-filters", "--stdin"], data).decode("ascii").strip()
        if not BLOB_ID.fullmatch(blob):
            raise CheckpointError(f"git hash-object answered {blob!r}")
        return blob

    def get(self, owner: str, blob: str) -> bytes:
        check_blob_id(blob)
        data = self._run(["cat-file", "blob", blob])
        if object_id(data, len(blob)) != blob.lower():
            raise CheckpointError(f"snapshot {blob} in {self.root}/.git is not what was stored (it was rewritten)")
        return data

    def retain(self, owner: str, blobs: Collection[str]) -> None:
        ref = self.ref_for(owner)
        if not blobs:
            self._run(["update-ref", "--no-deref", "-d", ref])
            return
        for blob in blobs:
            check_blob_id(blob)
        listing = "".join(f"100644 blob {blob}\t{blob}\n" for blob in sorted(set(blobs)))
        tree = self._run(["mktree"], listing.encode("ascii")).decode("ascii").strip()
        self._run(["update-ref", "--no-deref", ref, tree])

    @staticmethod
    def ref_for(owner: str) -> str:
        """The private ref of `owner`: its id where that is ref-safe, else a sanitized id plus a hash of it."""
        return REF_PREFIX + owner_key(owner)

    def _run(self, args: list[str], stdin: bytes | None = None) -> bytes:
        try:
            return own_git.run_sync(args, root=self.root, cwd=self.work_dir, input=stdin, timeout=GIT_TIMEOUT)
        except own_git.GitFailed as exc:
            raise CheckpointError(str(exc)) from None


def object_id(data: bytes, length: int) -> str:
    """Git's id of a blob of `data`: SHA-1 (40 hex digits) or, in a SHA-256 repository, SHA-256 (64)."""
    digest = hashlib.sha256() if length == 64 else hashlib.sha1(usedforsecurity=False)
    digest.update(b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()


class FileBlobStore:
    """Content-addressed files (sha256) under `root`, one folder per owner, written atomically (see the module doc)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def folder(self, owner: str) -> Path:
        """The folder of `owner`'s blobs."""
        return self.root / SESSIONS_DIR / owner_key(owner)

    def put(self, owner: str, data: bytes) -> str:
        blob = hashlib.sha256(data).hexdigest()
        path = self.folder(owner) / blob
        try:
            if path.is_file() and path.stat().st_size == len(data):
                os.utime(path)  # kept again: young, so a `retain` in another process leaves it alone
                return blob
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            write_atomic(path, data, mode=0o600)
        except OSError as exc:
            raise CheckpointError(f"could not store a snapshot under {self.root}: {exc}") from exc
        return blob

    def get(self, owner: str, blob: str) -> bytes:
        if len(blob) != 64:
            raise CheckpointError(f"not a snapshot id: {blob!r}")
        check_blob_id(blob)
        path = self.folder(owner) / blob
        legacy = self.root / blob[:2] / blob[2:]  # the shared folder of earlier versions
        if not path.exists() and legacy.exists():
            path = legacy
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise CheckpointError(f"snapshot {blob} is gone from {self.root}: {exc.strerror or exc}") from exc
        if hashlib.sha256(data).hexdigest() != blob:
            raise CheckpointError(f"snapshot {blob} under {self.root} is corrupt")
        return data

    def retain(self, owner: str, blobs: Collection[str]) -> None:
        """Delete the owner's blobs that are not in `blobs` and are over an hour old; its folder once it is empty.

        The work is bounded by the owner's own folder: no other session's files are looked at.
        """
        folder = self.folder(owner)
        keep = set(blobs)
        cutoff = time.time() - RELEASED_BLOB_GRACE_SECONDS
        try:
            entries = list(os.scandir(folder))
        except FileNotFoundError:
            return
        except OSError as exc:
            raise CheckpointError(f"could not list the snapshots in {folder}: {exc}") from exc
        left = 0
        for entry in entries:
            try:
                if entry.name in keep or not BLOB_ID.fullmatch(entry.name) or entry.stat().st_mtime > cutoff:
                    left += 1
                    continue
                os.unlink(entry.path)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise CheckpointError(f"could not delete the snapshot {entry.path}: {exc}") from exc
        if not left:
            with contextlib.suppress(OSError):  # a put just added a file, or the folder went already
                folder.rmdir()

    def release(self, owner: str) -> None:
        """Delete everything `owner` kept, at once (its session is gone)."""
        try:
            shutil.rmtree(self.folder(owner))
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise CheckpointError(f"could not delete the snapshots of {owner}: {exc}") from exc


def blob_store_for(cwd: Path, data_dir: Path | None = None) -> BlobStore:
    """A `GitBlobStore` if `cwd` is inside a git work tree, else a `FileBlobStore` under `data_dir`/blobs.

    `data_dir` defaults to the platformdirs user data directory of coder-agent. Blocking (runs git).
    """
    root = _git_work_tree(cwd)
    if root is not None:
        return GitBlobStore(cwd, root)
    return FileBlobStore(_blobs_root(data_dir))


def release_session(session_id: str, cwd: str | None, data_dir: Path | None = None) -> None:
    """Release what a deleted session kept for undo: its folder of the file store and, when `cwd` (its working
    folder) is in a git work tree, its private ref there (git prunes the blobs later). Bounded by that session's own
    snapshots; never raises (failures are logged). Blocking."""
    try:
        FileBlobStore(_blobs_root(data_dir)).release(session_id)
    except CheckpointError as exc:
        log.warning("session %s: %s", session_id, exc)
    root = own_git.find_root(Path(cwd)) if cwd is not None and os.path.isdir(cwd) else None
    if cwd is not None and root is not None:
        try:
            GitBlobStore(Path(cwd), root).retain(session_id, ())
        except CheckpointError as exc:  # not a repository (any more): no ref to drop
            log.debug("session %s: no private ref dropped in %s: %s", session_id, cwd, exc)


def _blobs_root(data_dir: Path | None) -> Path:
    return (data_dir or platformdirs.user_data_path(APP_NAME)) / BLOBS_DIR


def _git_work_tree(cwd: Path) -> Path | None:
    """The folder of the repository whose work tree holds `cwd`, if git agrees it is one (None: no git, not a
    repository, one git refuses, a missing folder)."""
    root = own_git.find_root(cwd)
    if root is None:
        return None
    try:
        answer = own_git.run_sync(["rev-parse", "--is-inside-work-tree"], root=root, cwd=cwd, timeout=GIT_TIMEOUT)
    except own_git.GitFailed as exc:
        log.debug("no git store for %s: %s", cwd, exc)
        return None
    return root if answer.strip() == b"true" else None
