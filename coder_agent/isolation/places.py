"""Where isolated children work: the agent's private folder for them, who owns what in it, and the sweep of what an
agent that died left behind.

The folder is `<user cache>/coder-agent/isolated/` — never inside a workspace, and outside the agent's data folder
(which the walls keep every sandboxed command from reading, a child's own included). Each agent process has a
folder of its own there (`<pid>-<random>`) holding a `lock` file it keeps locked (`flock`) as long as it lives: the
kernel lets go of the lock however the process ends, SIGKILL included (and at a clean exit the folder goes, when no
child is left in it). Each child gets a folder in it (`ca-<random>`) with `meta.json` (what to remove: the
repository, the branch, the worktree), its worktree or copy, its temp folder.

`sweep` runs when a session opens: every agent folder whose lock it can take belonged to an agent that is gone, and
its children's worktrees, branches and copies are removed (what was in them had not been applied: the user never
said yes to it). A left-behind worktree is never used again: each child gets a new folder and branch.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import re
import secrets
import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

log = logging.getLogger(__name__)

FOLDER = "isolated"
LOCK = "lock"
META = "meta.json"
BRANCH_PREFIX = "coder-agent/"
CHILD = re.compile(r"ca-[0-9a-f]{12}")
BRANCH = re.compile(r"coder-agent/ca-[0-9a-f]{12}")


def private_root() -> Path:
    """The folder of every agent's isolated children (made on first use)."""
    return platformdirs.user_cache_path("coder-agent") / FOLDER


class Owner:
    """This agent's folder under the private root, locked as long as the agent lives (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        import fcntl  # POSIX: imported where it is used

        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.folder = Path(os.path.realpath(root)) / f"{os.getpid()}-{secrets.token_hex(4)}"
        self.folder.mkdir(mode=0o700)
        self._lock = os.open(self.folder / LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        atexit.register(self.close)

    def close(self) -> None:
        """At exit: the folder goes if no child is left in it (one left is the next sweep's)."""
        with contextlib.suppress(OSError):
            if [entry.name for entry in self.folder.iterdir()] == [LOCK]:
                shutil.rmtree(self.folder)

    def new_child(self) -> tuple[str, Path]:
        """A new child's id and its (new, empty) folder."""
        child = f"ca-{secrets.token_hex(6)}"
        folder = self.folder / child
        folder.mkdir(mode=0o700)
        return child, folder


_owners: dict[Path, Owner] = {}
_owners_lock = threading.Lock()


def owner(root: Path | None = None) -> Owner:
    """This process's folder under `root` (by default the private root), made on first use."""
    root = root or private_root()
    with _owners_lock:
        found = _owners.get(root)
        if found is None or not found.folder.is_dir():
            found = _owners[root] = Owner(root)
        return found


def write_meta(folder: Path, meta: dict[str, Any]) -> None:
    (folder / META).write_text(json.dumps(meta), encoding="utf-8")


@dataclass(frozen=True)
class Swept:
    """A child's place that an agent which stopped left behind, removed."""

    source: str
    """The folder it was made from (the repository, or the folder copied)."""
    what: str
    """What was removed, in words."""


RemoveChild = Callable[[Path, dict[str, Any]], Swept | None]
"""Remove a child's place (its folder and what its `meta.json` says); what was removed, or None if it could not be."""


def sweep(remove_left_behind: RemoveChild, root: Path | None = None) -> list[Swept]:
    """Remove what agents that are gone left under `root` (see the module docstring) with `remove_left_behind`;
    what was removed. Never raises: what cannot be removed now is logged and tried again next time."""
    root = root or private_root()
    try:
        folders = [entry for entry in root.iterdir() if entry.is_dir() and not entry.is_symlink()]
    except OSError:
        return []
    mine = {o.folder for o in _owners.values()}
    swept: list[Swept] = []
    for folder in folders:
        if folder in mine:
            continue
        with _locked(folder / LOCK) as free:
            if not free:
                continue  # its agent is alive (or another agent is sweeping it)
            complete = True
            for child in folder.iterdir():
                if child.is_dir() and not child.is_symlink() and CHILD.fullmatch(child.name):
                    done = remove_left_behind(child, read_meta(child))
                    if done is None:
                        complete = False
                    else:
                        swept.append(done)
            if complete:
                shutil.rmtree(folder, ignore_errors=True)
    return swept


def read_meta(child: Path) -> dict[str, Any]:
    try:
        meta = json.loads((child / META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


@contextlib.contextmanager
def _locked(path: Path) -> Any:
    """Yields whether the lock at `path` was free (and is now held until the block ends)."""
    import fcntl

    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
    except FileNotFoundError:
        yield True  # a folder made without its lock (a crash in between): no one holds it
        return
    except OSError:
        yield False
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        yield True
    finally:
        os.close(fd)
