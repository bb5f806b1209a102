"""Undoing, after a sandboxed command, what it planted for git run outside the walls (`gitplaces` says where to
look; `command.CommandGuard` calls these when the command ends):

- `snapshot(paths)` records what watched files hold (a symbolic link as its target, never followed);
- `undo_redirects(before, after, new_worktrees)` puts back the ones a command changed and removes the ones it made;
- `set_aside(paths)` renames aside a file a command made where git would read or run one that was missing;
- `neutralize(git_dir)` disables the hooks of a repository a command made and cuts its config files to the settings
  that run nothing (`gitconfig.safe`).

These run in the agent, outside the walls, on folders commands write: every change goes through a folder opened
without following links and checked to be the one meant (`_Folder`), and files are made anew (never written
through an existing name), so a command that swapped a folder or a file for a link to elsewhere (`~/.bashrc`)
gets nothing written there. What was done comes back as one note each, for the command's output.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

from coder_agent.sandbox import gitconfig

DISABLED = ".disabled-by-coder-agent"
"""The suffix a planted hook, or a config cut down to safe settings, is kept under (git reads neither)."""
LINK = b"\0link:"
"""How a snapshot records a symbolic link (no file's content starts with a NUL byte and this)."""
MAX_WATCHED_BYTES = 1 << 16
Snapshot = dict[Path, bytes]
"""What watched files held (a missing one is absent)."""


class _Folder:
    """A folder opened without following links, and checked to be `path` itself (where the system can say)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            opened = _opened_path(self.fd)
            if opened is not None and opened != str(path):
                raise OSError(f"{path} is not where it was")
        except BaseException:
            os.close(self.fd)
            raise

    def close(self) -> None:
        os.close(self.fd)

    def read(self, name: str) -> bytes | None:
        """A file's content, or a link's target marked with `LINK`; None if there is none."""
        try:
            st = os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        if stat.S_ISLNK(st.st_mode):
            return LINK + os.fsencode(os.readlink(name, dir_fd=self.fd))
        if not stat.S_ISREG(st.st_mode):
            return LINK + b"(not a file)"
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=self.fd)
        with os.fdopen(fd, "rb") as handle:
            return handle.read(MAX_WATCHED_BYTES)

    def put(self, name: str, data: bytes) -> None:
        """Make `name` hold `data` (a file made anew, or a link if `data` is a link's target)."""
        self.remove(name)
        if data.startswith(LINK):
            os.symlink(os.fsdecode(data[len(LINK) :]), name, dir_fd=self.fd)
            return
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=self.fd)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)

    def remove(self, name: str) -> None:
        try:
            st = os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return
        if stat.S_ISDIR(st.st_mode):
            os.rename(name, self.free_name(name), src_dir_fd=self.fd, dst_dir_fd=self.fd)
        else:
            os.unlink(name, dir_fd=self.fd)

    def aside(self, name: str) -> str:
        """Rename `name` aside (`DISABLED`); the new name."""
        free = self.free_name(name)
        os.rename(name, free, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        return free

    def free_name(self, name: str) -> str:
        free, number = name + DISABLED, 1
        while self.exists(free):
            number += 1
            free = f"{name}{DISABLED}.{number}"
        return free

    def exists(self, name: str) -> bool:
        try:
            os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return True


def _opened_path(fd: int) -> str | None:
    """Where an open folder is (Linux: /proc; macOS: F_GETPATH); None where the system cannot say."""
    if sys.platform == "linux":
        return os.readlink(f"/proc/self/fd/{fd}")
    if sys.platform == "darwin":
        import fcntl

        buffer = fcntl.fcntl(fd, 50, b"\0" * 1024)  # F_GETPATH
        return os.fsdecode(buffer.split(b"\0", 1)[0])
    return None


@contextlib.contextmanager
def _folder(path: Path) -> Iterator[_Folder]:
    folder = _Folder(path)
    try:
        yield folder
    finally:
        folder.close()


def snapshot(paths: list[Path]) -> Snapshot:
    """What these files hold now (links as their targets; folders and what cannot be read left out)."""
    found: Snapshot = {}
    for path in dict.fromkeys(paths):
        if not os.path.lexists(path):
            continue  # (most are: one stat, and no folder to open)
        with contextlib.suppress(OSError), _folder(path.parent) as folder:
            data = folder.read(path.name)
            if data is not None:
                found[path] = data
    return found


def undo_redirects(before: Snapshot, after: Snapshot, new_worktrees: set[Path]) -> list[str]:
    """Put back the watched files a command changed or removed, remove the ones it made; one note each.

    A new worktree's own folder (`.git/worktrees/NAME`, made by `git worktree add`) keeps its `gitdir`, and its
    `commondir` if it names the repository it belongs to: those are what `git worktree add` writes."""
    notes = []
    for path in sorted(set(before) | set(after)):
        was, says = before.get(path), after.get(path)
        if was == says or (was is None and path.parent in new_worktrees and _worktree_own(path, says)):
            continue
        if os.path.islink(path.parent):
            notes += _link_aside(path.parent)
            continue
        if was is not None and not os.path.isdir(path.parent):
            continue  # a worktree removed as a whole: nothing redirects there any more
        try:
            with _folder(path.parent) as folder:
                folder.put(path.name, was) if was is not None else folder.remove(path.name)
        except OSError as exc:
            notes.append(f"[coder-agent: the command changed {path}, which git reads; it could not be undone ({exc}).]")
            continue
        what = "made" if was is None else "removed" if says is None else "changed"
        undone = "it was removed" if was is None else "it was put back"
        notes.append(
            f"[coder-agent: the command {what} {path}, which git, run outside the sandbox, would read for its "
            f"config or hooks; {undone}.]"
        )
    return notes


def _link_aside(path: Path) -> list[str]:
    """A folder git reads that a command swapped for a link (to a folder it made): the link renamed aside."""
    try:
        with _folder(path.parent) as folder:
            name = folder.aside(path.name)
    except OSError as exc:
        return [f"[coder-agent: the command made {path} a link, which git reads; it could not be undone ({exc}).]"]
    return [
        f"[coder-agent: the command replaced {path}, which git, run outside the sandbox, reads for its config, with "
        f"a link to elsewhere; the link was renamed to {name}.]"
    ]


def _worktree_own(path: Path, says: bytes | None) -> bool:
    if path.name == "gitdir":
        return True
    if path.name != "commondir" or says is None or says.startswith(LINK):
        return False
    pointer = os.fsdecode(says.strip())
    target = Path(pointer) if os.path.isabs(pointer) else path.parent / pointer
    common = path.parent.parent.parent  # .git/worktrees/NAME/commondir
    return Path(os.path.realpath(target)) == common


def set_aside(absent: list[Path]) -> list[str]:
    """Rename aside (`DISABLED`) the paths of `absent` that are there now: a command made them."""
    notes = []
    for path in dict.fromkeys(absent):
        if not os.path.lexists(path):
            continue
        try:
            with _folder(path.parent) as folder:
                name = folder.aside(path.name)
        except OSError:
            notes.append(f"[coder-agent: the command made {path}, which git would read or run; it could not be moved.]")
            continue
        notes.append(
            f"[coder-agent: the command made {path}, which git, run outside the sandbox, would read or run; it was "
            f"renamed to {name}.]"
        )
    return notes


def neutralize(git_dir: Path) -> list[str]:
    """A repository a command made where git outside will open it: its hooks disabled (renamed with `DISABLED`,
    which git never runs) and its config files cut to the settings that run nothing (`gitconfig.safe`; the whole
    file kept beside it with `DISABLED`). What was done, one note each."""
    try:
        with _folder(git_dir) as folder:
            notes = _disable_hooks(folder)
            for name in ("config", "config.worktree"):
                notes += _cut_config(folder, name)
    except OSError as exc:
        return [f"[coder-agent: the command made a repository at {git_dir}, which could not be checked ({exc}).]"]
    return notes


def _disable_hooks(git_dir: _Folder) -> list[str]:
    hooks = git_dir.path / "hooks"
    try:
        st = os.stat("hooks", dir_fd=git_dir.fd, follow_symlinks=False)
    except FileNotFoundError:
        return []
    if not stat.S_ISDIR(st.st_mode):
        name = git_dir.aside("hooks")
        os.mkdir("hooks", dir_fd=git_dir.fd)
        return [f"[coder-agent: the command made {hooks} lead elsewhere; it was renamed to {name}.]"]
    notes = []
    with _folder(hooks) as folder:
        for entry in sorted(os.listdir(folder.fd)):
            if entry.endswith(".sample") or DISABLED in entry:
                continue
            name = folder.aside(entry)
            notes.append(
                f"[coder-agent: the command left a hook {hooks / entry}, which git outside the sandbox would run; "
                f"it was renamed to {name}.]"
            )
    return notes


def _cut_config(git_dir: _Folder, name: str) -> list[str]:
    path = git_dir.path / name
    data = git_dir.read(name)
    if data is None:
        return []
    try:
        entries = None if data.startswith(LINK) else gitconfig.parse(data.decode("utf-8", "surrogateescape"))
    except gitconfig.Malformed:
        entries = None
    kept = [e for e in entries if gitconfig.safe(e)] if entries is not None else []
    if entries is not None and len(kept) == len(entries):
        return []
    removed = sorted({e.name for e in entries or () if not gitconfig.safe(e)}) or ["all: it could not be read"]
    aside = git_dir.aside(name)
    git_dir.put(name, gitconfig.render(kept).encode("utf-8", "surrogateescape"))
    return [
        f"[coder-agent: the command left settings in {path} that make git run programs or read other files "
        f"({', '.join(removed)}); they were removed (the whole file is kept as {aside}).]"
    ]
