"""`Workplace`: the place one isolated child works in — a git worktree of the session's repository on a scratch branch,
or a copy of a folder that is not a repository — made, read for what the child changed, and removed.

**A worktree** starts from the parent's current state, uncommitted changes included, without touching the parent's
index or files: a copy of the parent's index takes the work tree as it is (`git add -A` into that copy: untracked
files too, ignored ones not), its tree is committed on the parent's `HEAD` (none on a repository without commits),
and `git worktree add -b coder-agent/<child>` checks that commit out in the child's private folder (see
`isolation.places`). Git runs no hook, filter or other program of the repository's while doing so
(`isolation.git`). Submodules stay empty folders in the worktree; Git LFS files stay their pointers.

**What the child changed** is read the same way, whatever the child did to its branch or index (a commit, a reset):
its work tree taken into a copy of its index and compared with the snapshot (`git diff-tree`, no renames: a rename is
a deletion and a new file). Each change carries the file's bytes before (the snapshot's, as they are checked out)
and after; symlinks, submodules, mode changes and files over the size limit come with a note instead.

**A copy** (`isolation.copying`) is cloned where the file system can, copied where it cannot, within a size cap; the
child's copy is compared with a second, untouched one.

`remove` takes away the worktree, the branch and the folder; `remove_left_behind` does so for a child of an agent
that is gone (`places.sweep`).
"""

from __future__ import annotations

import logging
import os
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from coder_agent import nofollow
from coder_agent.isolation import copying
from coder_agent.isolation.git import IDENTITY, GitFailed, git, installed
from coder_agent.isolation.places import BRANCH, BRANCH_PREFIX, Owner, Swept, read_meta, sweep, write_meta

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 4_000_000
"""A changed file larger than this is not merged (it could not be written through the editor either)."""
NO_OBJECT = "0" * 40
LFS_POINTER = b"version https://git-lfs.github.com/spec/"


class IsolationFailed(Exception):
    """No isolated place could be made; the message says why."""


@dataclass(frozen=True)
class Change:
    """One file the child changed: its bytes before (None: it did not exist) and after (None: deleted), or a note
    saying why it cannot be merged (then the bytes are None)."""

    path: str
    """POSIX, relative to the folder the workplace mirrors (`Workplace.source`)."""
    before: bytes | None
    after: bytes | None
    note: str | None = None


@dataclass
class Workplace:
    """One isolated child's place (see the module docstring)."""

    kind: Literal["worktree", "copy"]
    folder: Path
    """The child's private folder: its metadata, temp folder, base copy."""
    tree: Path
    """The worktree, or the copy: mirrors `source`."""
    source: Path
    """The repository's work tree, or the folder copied."""
    subpath: str
    """Where the session's folder lies inside `source` (POSIX, "" for `source` itself)."""
    size: int
    """Bytes of files checked out or copied."""
    files: int
    branch: str | None = None
    snapshot: str | None = None
    """The commit the branch starts at."""
    how: str = ""
    """How it was made, in words (for the user and the child)."""

    @property
    def cwd(self) -> Path:
        """The child's working directory: the session's folder's place in the tree."""
        return self.tree / self.subpath if self.subpath else self.tree

    @property
    def temp(self) -> Path:
        return self.folder / "tmp"

    def changes(self) -> list[Change]:
        """What the child changed under its working directory (blocking: run it in a worker thread)."""
        if self.kind == "copy":
            return self._copy_changes()
        return self._worktree_changes()

    def remove(self) -> None:
        """Take away the worktree, its branch and the child's folder (blocking). Never raises."""
        _remove(self.kind, self.folder, self.source, self.tree, self.branch)

    # ---- a worktree -----------------------------------------------------------------------------

    def _worktree_changes(self) -> list[Change]:
        assert self.snapshot is not None
        index = self.folder / "index.after"
        _copy_index(self.tree, index)
        env = {"GIT_INDEX_FILE": str(index)}
        git(["add", "-A", "--", "."], root=self.tree, env=env)
        tree = git(["write-tree"], root=self.tree, env=env).decode().strip()
        scope = [self.subpath] if self.subpath else []
        raw = git(["diff-tree", "-r", "-z", "--no-renames", self.snapshot, tree, "--", *scope], root=self.tree)
        entries = _raw_entries(raw)
        wanted = [(entry.old_sha, entry.path) for entry in entries if entry.note() is None]
        texts = _blobs(self.tree, [(sha, path) for sha, path in wanted if sha != NO_OBJECT])
        changes = []
        real = Path(os.path.realpath(self.tree))
        for entry in entries:
            path = _relative(entry.path, self.subpath)
            note = entry.note()
            before = texts.get((entry.old_sha, entry.path)) if note is None else None
            after, unread = _read(real / entry.path) if note is None and entry.new_sha != NO_OBJECT else (None, None)
            note = note or unread
            if note is None and entry.old_sha != NO_OBJECT and before is None:
                note = f"over {MAX_FILE_BYTES // 1_000_000} MB"
            if note is None and entry.new_sha != NO_OBJECT and after is None:
                note = f"over {MAX_FILE_BYTES // 1_000_000} MB"
            if note is None and before is not None and before.startswith(LFS_POINTER):
                note = "a Git LFS file (its pointer is all the worktree holds)"
            changes.append(Change(path, before, after, note))
        return changes

    # ---- a copy ---------------------------------------------------------------------------------

    def _copy_changes(self) -> list[Change]:
        # Both copies are read along their own real places, never through a symlink in them: what still runs in the
        # child's copy (its language server) may swap a folder listed a moment ago for a symlink to one outside.
        base, tree = Path(os.path.realpath(self.folder / "base")), Path(os.path.realpath(self.tree))
        changes = []
        for path, was, is_now in copying.changes(base, self.tree):
            before_path, after_path = base / path, tree / path
            if (was and before_path.is_symlink()) or (is_now and after_path.is_symlink()):
                changes.append(Change(path, None, None, "a symlink"))
                continue
            before, unread = _read(before_path) if was else (None, None)
            after, unread = _read(after_path) if is_now and not unread else (None, unread)
            if unread is None and ((was and before is None) or (is_now and after is None)):
                unread = f"over {MAX_FILE_BYTES // 1_000_000} MB"
            changes.append(Change(path, None, None, unread) if unread else Change(path, before, after))
        return changes


def make(owner: Owner, cwd: Path, *, name: str, cap: int) -> Workplace:
    """A new isolated place mirroring `cwd`: a worktree when `cwd` is in a git repository (and git is installed),
    else a copy of `cwd`; `cap` bytes at most. IsolationFailed if none can be made (blocking)."""
    cwd = Path(os.path.realpath(cwd))
    child, folder = owner.new_child()
    (folder / "tmp").mkdir()
    root = _repository_root(cwd)
    try:
        if root is not None and installed(root):
            return _make_worktree(folder, child, root, cwd, name, cap)
        return _make_copy(folder, cwd, cap, repository=root is not None)
    except (GitFailed, copying.TooBig, OSError) as exc:
        remove_left_behind(folder, read_meta(folder))
        raise IsolationFailed(str(exc)) from None


def _make_worktree(folder: Path, child: str, root: Path, cwd: Path, name: str, cap: int) -> Workplace:
    index = folder / "index.snapshot"
    _copy_index(root, index)
    env = {"GIT_INDEX_FILE": str(index)}
    git(["add", "-A", "--", "."], root=root, env=env)
    tree = git(["write-tree"], root=root, env=env).decode().strip()
    index.unlink()
    files, size = _tree_size(root, tree)
    if size > cap:
        raise copying.TooBig(f"the repository's files take {size >> 20} MiB, over the cap of {cap >> 20} MiB")
    try:
        head = git(["rev-parse", "--verify", "-q", "HEAD^{commit}"], root=root).decode().strip()
    except GitFailed:
        head = ""  # a repository without commits yet
    parents = ["-p", head] if head else []
    message = f"coder-agent: the session's files as {name} started (uncommitted changes included)"
    snapshot = git(["commit-tree", tree, *parents, "-m", message], root=root, env=IDENTITY).decode().strip()
    branch = BRANCH_PREFIX + child
    tree_path = folder / "work" / root.name
    tree_path.parent.mkdir()
    write_meta(folder, _meta("worktree", root, tree_path, branch))
    add = ["worktree", "add", "--quiet", "--no-track", "-b", branch, str(tree_path), snapshot]
    git(["-c", "checkout.workers=0", *add], root=root)  # files written in parallel: 7.6 s -> 3.0 s for 10,000 at load 8
    subpath = Path(os.path.relpath(cwd, root)).as_posix()
    dirty = not head or git(["rev-parse", f"{head}^{{tree}}"], root=root).decode().strip() != tree
    how = f"a git worktree on the branch {branch}, from {head[:10] or 'no commit'}" + (
        " with your uncommitted changes" if dirty else ""
    )
    return Workplace(
        "worktree", folder, tree_path, root, "" if subpath == "." else subpath, size, files, branch, snapshot, how
    )


def _make_copy(folder: Path, cwd: Path, cap: int, *, repository: bool) -> Workplace:
    measured = copying.measure(cwd, cap)
    tree = folder / "work" / cwd.name
    tree.parent.mkdir()
    write_meta(folder, _meta("copy", cwd, tree, None))
    copying.copy_tree(cwd, folder / "base")
    made = copying.copy_tree(cwd, tree)
    why = " (git is not installed)" if repository else ""
    how = f"a copy of the folder{why}: {measured.files} files, {measured.size >> 20} MiB, {made.how}"
    if made.left_out:
        how += f"; special files left out: {', '.join(made.left_out[:5])}"
    return Workplace("copy", folder, tree, cwd, "", made.size, made.files, how=how)


def _meta(kind: str, source: Path, tree: Path, branch: str | None) -> dict[str, Any]:
    created = datetime.now(UTC).isoformat(timespec="seconds")
    return {"kind": kind, "source": str(source), "tree": str(tree), "branch": branch, "created": created}


def sweep_left_behind(root: Path | None = None) -> list[Swept]:
    """Remove the places of children whose agent is gone (`places.sweep`)."""
    return sweep(remove_left_behind, root)


def remove_left_behind(folder: Path, meta: dict[str, Any]) -> Swept | None:
    """Remove a left-behind child's place as its `meta.json` describes it; None if it could not be."""
    source = Path(str(meta.get("source") or folder))
    raw_tree = meta.get("tree")
    tree = Path(raw_tree) if isinstance(raw_tree, str) and Path(raw_tree).is_relative_to(folder) else None
    branch = meta.get("branch") if isinstance(meta.get("branch"), str) and BRANCH.fullmatch(meta["branch"]) else None
    kind = "worktree" if meta.get("kind") == "worktree" else "copy"
    _remove(kind, folder, source, tree, branch)
    if folder.exists():
        return None
    what = f"the worktree and branch {branch}" if branch else "a copy of the folder"
    return Swept(str(source), what)


def _remove(kind: str, folder: Path, source: Path, tree: Path | None, branch: str | None) -> None:
    if kind == "worktree" and tree is not None and (source / ".git").exists():
        try:
            git(["worktree", "remove", "--force", "--force", str(tree)], root=source)
        except GitFailed as exc:
            log.info("git worktree remove: %s; removing its admin folder", exc)
            _forget_worktree(source, tree)
        if branch is not None:
            try:
                git(["branch", "-D", branch], root=source)
            except GitFailed as exc:
                log.info("the branch %s could not be deleted: %s", branch, exc)
    shutil.rmtree(folder, ignore_errors=True)
    if folder.exists():
        log.warning("could not remove %s", folder)


def _forget_worktree(source: Path, tree: Path) -> None:
    """Remove the repository's record of a worktree of ours that `git worktree remove` would not remove."""
    try:
        common = git(["rev-parse", "--git-common-dir"], root=source).decode().strip()
    except GitFailed:
        return
    records = (source / common) / "worktrees"
    for record in records.glob("*/gitdir") if records.is_dir() else ():
        try:
            points = Path(record.read_text(encoding="utf-8").strip()).parent
        except OSError:
            continue
        if points == tree:
            shutil.rmtree(record.parent, ignore_errors=True)


def _repository_root(cwd: Path) -> Path | None:
    for folder in (cwd, *cwd.parents):
        if os.path.lexists(folder / ".git"):
            return folder
    return None


def _copy_index(root: Path, target: Path) -> None:
    """A copy of the repository's index at `target` (none when it has none): git keeps what it knows of each file,
    so taking the work tree into it reads only the files that changed."""
    where = git(["rev-parse", "--git-path", "index"], root=root).decode().strip()
    index = Path(where) if os.path.isabs(where) else root / where
    try:  # commands write the index: a symlink or named pipe put there is not followed, nor waited on
        data = nofollow.read_bytes(nofollow.leaf(index))
    except FileNotFoundError:
        return
    except OSError as exc:
        log.warning("not copying the index %s (%s): the work tree is read without it", index, exc)
        return
    target.write_bytes(data)


def _tree_size(root: Path, tree: str) -> tuple[int, int]:
    """Files and bytes a checkout of `tree` writes."""
    listing = git(["ls-tree", "-r", "-l", "-z", tree], root=root)
    files = size = 0
    for entry in listing.split(b"\0"):
        fields = entry.split(b"\t", 1)[0].split()
        if len(fields) == 4 and fields[1] == b"blob" and fields[3].isdigit():
            files += 1
            size += int(fields[3])
    return files, size


def _read(real: Path) -> tuple[bytes | None, str | None]:
    """A file of the child's, read without following a symlink: its bytes (None if it is over the size limit), or
    why it could not be read."""
    try:
        with nofollow.open_file(real) as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        return None, f"it could not be read: {exc.strerror or exc}"
    return (data if len(data) <= MAX_FILE_BYTES else None), None


def _relative(path: str, subpath: str) -> str:
    return path[len(subpath) + 1 :] if subpath else path


@dataclass(frozen=True)
class _Entry:
    old_mode: str
    new_mode: str
    old_sha: str
    new_sha: str
    path: str

    def note(self) -> str | None:
        modes = {self.old_mode, self.new_mode} - {"000000"}
        if "120000" in modes:
            return "a symlink"
        if "160000" in modes:
            return "a submodule"
        if self.old_sha == self.new_sha:
            return f"its mode changed ({self.old_mode} to {self.new_mode})"
        return None


def _raw_entries(raw: bytes) -> list[_Entry]:
    """`git diff-tree -r -z` output: `:old new old_sha new_sha status NUL path NUL` per file."""
    parts = raw.split(b"\0")
    entries = []
    for header, path in zip(parts[0::2], parts[1::2], strict=False):
        fields = header.decode("ascii", errors="replace").lstrip(":").split()
        if len(fields) >= 5:
            entries.append(_Entry(fields[0], fields[1], fields[2], fields[3], os.fsdecode(path)))
    return entries


def _blobs(tree: Path, wanted: list[tuple[str, str]]) -> dict[tuple[str, str], bytes]:
    """The bytes of each (blob, path) as a checkout writes them there (no program runs), those over the size limit
    left out. One `cat-file --filters` each: in batch mode git 2.39 heads converted contents with the blob's size."""
    wanted = list(dict.fromkeys(wanted))
    if not wanted:
        return {}
    checked = git(["cat-file", "--batch-check"], root=tree, input="".join(f"{s}\n" for s, _ in wanted).encode())
    sizes = [line.split() for line in checked.decode().splitlines()]
    small = [w for w, size in zip(wanted, sizes, strict=True) if len(size) == 3 and int(size[2]) <= MAX_FILE_BYTES]
    return {(sha, path): git(["cat-file", "--filters", f"--path={path}", sha], root=tree) for sha, path in small}
