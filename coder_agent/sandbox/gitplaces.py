"""Where git, run later outside the walls (by the user, or by the agent), reads config and runs hooks from, inside
the places sandboxed commands write: what the walls pin and keep read-only, and what is watched and undone after
each command.

`find(roots, writable, home, global_configs)` looks, for every repository git outside would open — a session
folder's own (`.git` a folder, or a file naming a linked worktree's folder and, through `commondir`, its main
repository), the submodules in `.git/modules/**`, and every gitlink of an index (a path git treats as a submodule
and looks into at `git status`), recursively — for:

- **pinned** folders (bound onto themselves, so they cannot be renamed away and rebuilt): the git folders, and
  `.git/worktrees/*`;
- **protected** paths (read-only): `hooks` (made first if missing, as `git init` would), `config`,
  `config.worktree` (read once `extensions.worktreeConfig` is on), the `.git` files of worktrees and submodules,
  and what the config files name inside the writable places: the files they include (`include.path`, every
  `includeIf.*.path`, recursively) and the `core.hooksPath` folder (from the repository's config, or the user's
  and the system's);
- **watched** files, whose content is recorded before a command and put back after it: the redirects
  (`commondir`, `gitdir`) of every git folder, other worktrees' included;
- **absent** paths, which git would read or run were they there (a missing `config.worktree`, included file or
  hooks folder): one a command makes is renamed aside after it (`DISABLED`), nothing is made in their place;
- **repositories**: each git folder git outside would open, with its identity, so that one a command made (or
  replaced) is told apart (`command.CommandGuard` then cuts its config to settings that run nothing and disables
  its hooks: `gitundo`).

Commands write these folders, so what is read is bounded (`MAX_FOLLOWED`, `MAX_DEPTH`, the readers' own limits).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from coder_agent.sandbox import gitconfig, gitundo
from coder_agent.sandbox.gitindex import GitlinkCache

PROTECTED_NAMES = (".coder-agent",)
GIT_REDIRECTS = ("commondir", "gitdir")
"""Files in a git folder that send git elsewhere (for its config and hooks): the folder must stay writable for
commits and a wall cannot forbid one name in it, so they are watched and undone instead."""
MAX_DEPTH = 4
"""How deep repositories inside repositories (gitlinks of gitlinks) are followed."""
MAX_FOLLOWED = 1024
"""The most worktrees, gitlinks and module folders looked at per repository (a command could make millions: the
walls are looked up for every command, in the agent)."""
MAX_GITFILE_BYTES = 4096


@dataclass
class GitPlaces:
    pinned: list[Path] = field(default_factory=list)
    protected: list[Path] = field(default_factory=list)
    writable: list[Path] = field(default_factory=list)
    """Git folders outside the session's folders that its commits write (a linked worktree's)."""
    watched: list[Path] = field(default_factory=list)
    absent: list[Path] = field(default_factory=list)
    repositories: dict[Path, tuple[int, int]] = field(default_factory=dict)
    """Git folders git outside would open (and linked worktrees' own folders), with the (device, inode) of each."""

    def snapshot(self) -> gitundo.Snapshot:
        """What the watched files hold now."""
        return gitundo.snapshot(self.watched)


def find(
    roots: tuple[Path, ...],
    writable: tuple[Path, ...],
    home: Path,
    global_configs: tuple[Path, ...] = (),
    cache: GitlinkCache | None = None,
    linked: tuple[Path, ...] = (),
) -> GitPlaces:
    """The git places of these session folders (see the module docstring); `writable` is every place commands
    write, `global_configs` the user's and the system's config files (for a `core.hooksPath` they set), `linked`
    the git folders of the session folders that were linked worktrees when the session opened (`linked_dirs`):
    only those are made writable (a `.git` file a command writes names any folder it likes)."""
    finder = _Finder(writable, home, global_configs, cache or GitlinkCache(), linked)
    for root in roots:
        finder.places.protected += [root / name for name in PROTECTED_NAMES]
        finder.worktree(root, 0)
    return finder.places


def linked_dirs(roots: tuple[Path, ...]) -> tuple[Path, ...]:
    """The git folder and main repository's git folder of each session folder that is a linked worktree now (its
    `.git` a file naming them)."""
    found: list[Path] = []
    for root in roots:
        dot_git = root / ".git"
        gitdir = pointed_gitdir(dot_git) if dot_git.is_file() and not dot_git.is_symlink() else None
        if gitdir is not None:
            found += [gitdir, common_dir(gitdir)]
    return tuple(found)


class _Finder:
    def __init__(
        self,
        writable: tuple[Path, ...],
        home: Path,
        configs: tuple[Path, ...],
        cache: GitlinkCache,
        linked: tuple[Path, ...],
    ) -> None:
        self.writable = writable
        self.home = home
        self.global_configs = configs
        self.cache = cache
        self.linked = linked
        self.places = GitPlaces()
        self.seen: set[Path] = set()
        self.global_hooks = gitconfig.values(
            [*configs, *(t for c in configs for t in gitconfig.includes(c, home))], "core", "hookspath"
        )

    def inside(self, path: Path) -> bool:
        return any(path.is_relative_to(w) for w in (*self.writable, *self.places.writable))

    def worktree(self, folder: Path, depth: int) -> None:
        """A folder git may open as a worktree: its `.git` (a folder, a file naming one, or a link to one)."""
        dot_git = folder / ".git"
        try:
            is_link = dot_git.is_symlink()
            is_dir = dot_git.is_dir()
            is_file = dot_git.is_file()
        except OSError:
            return
        if is_link:  # a link cannot be kept read-only: it is watched (one a command makes is removed after it)
            self.places.watched.append(dot_git)
            target = Path(os.path.realpath(dot_git))
            if is_dir and self.inside(target):
                self.repository(target, target, folder, depth)
        elif is_dir:
            self.repository(dot_git, dot_git, folder, depth)
        elif is_file:
            self.places.protected.append(dot_git)
            gitdir = pointed_gitdir(dot_git)
            if gitdir is not None:
                common = common_dir(gitdir)
                if depth == 0 and gitdir in self.linked and common in self.linked:
                    self.places.writable += [gitdir, common]  # the session's own worktree: commits write there
                elif not (self.inside(gitdir) and self.inside(common)):
                    return  # naming a folder outside: the walls never open one that way
                self.repository(gitdir, common, folder, depth)

    def repository(self, git_dir: Path, common: Path, worktree: Path | None, depth: int) -> None:
        git_dir, common = Path(os.path.realpath(git_dir)), Path(os.path.realpath(common))
        if git_dir in self.seen or depth > MAX_DEPTH:
            return
        self.seen.add(git_dir)
        places = self.places
        places.repositories[git_dir] = _identity(git_dir)
        places.pinned += [git_dir] if git_dir == common else [git_dir, common]
        places.watched += [git_dir / name for name in GIT_REDIRECTS]
        if common != git_dir:
            places.watched += [common / name for name in GIT_REDIRECTS]
        with contextlib.suppress(OSError):
            (common / "hooks").mkdir(exist_ok=True)
        configs = [common / "config", common / "config.worktree"]
        if git_dir != common:
            configs.append(git_dir / "config.worktree")
        places.protected += [common / "hooks"]
        for admin in _subfolders(common / "worktrees")[:MAX_FOLLOWED]:  # not pinned: `git worktree remove` removes it
            places.watched += [admin / name for name in GIT_REDIRECTS]
            places.repositories[admin] = _identity(admin)
            configs.append(admin / "config.worktree")
        for config in configs:
            self.keep_real(config)
        self.configured(configs, worktree)
        for module in _modules(common / "modules"):
            module_tree = _module_worktree(module)
            if module_tree is not None and self.inside(module_tree):
                places.protected.append(module_tree / ".git")
            self.repository(module, module, module_tree, depth + 1)
        if worktree is None:
            return
        for link in (self.cache.get(git_dir / "index") or ())[:MAX_FOLLOWED]:
            nested = Path(os.path.normpath(worktree / link))
            if self.inside(nested):
                self.worktree(nested, depth + 1)

    def configured(self, configs: list[Path], worktree: Path | None) -> None:
        """What these config files name inside the writable places: included files, the hooks folder."""
        hooks = list(self.global_hooks)
        for config in configs:
            targets = gitconfig.includes(config, self.home)
            for target in targets:
                self.keep(target)
            hooks += gitconfig.values([config, *targets], "core", "hookspath")
        for value in hooks:
            base = worktree if worktree is not None else configs[0].parent
            self.keep(gitconfig.expand(value, self.home, base))

    def keep_real(self, path: Path) -> None:
        """`keep` for a path in a git folder found already (its folder is real: only the name may be a link)."""
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            self.places.absent.append(path)
            return
        except OSError:
            return
        if stat.S_ISLNK(st.st_mode):
            self.keep(path)
        else:
            self.places.protected.append(path)

    def keep(self, named: Path) -> None:
        """Keep a path git reads as it is: read-only if it is there, watched for appearing if not; a link on the
        way there inside the writable places is watched (a read-only wall would follow it)."""
        parent = Path(os.path.realpath(named.parent))
        if os.path.islink(parent / named.name) and self.inside(parent):
            self.places.watched.append(parent / named.name)
        path = Path(os.path.realpath(named))
        if not self.inside(path):
            return
        if os.path.lexists(path):
            self.places.protected.append(path)
        else:
            self.places.absent.append(path)


def _identity(path: Path) -> tuple[int, int]:
    try:
        st = os.stat(path)
    except OSError:
        return (0, 0)
    return (st.st_dev, st.st_ino)


def _subfolders(folder: Path) -> list[Path]:
    try:
        return [Path(e.path) for e in os.scandir(folder) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def _modules(folder: Path) -> Iterable[Path]:
    """The git folders under `.git/modules` (a submodule's name may hold slashes, so they nest): a folder with a
    `HEAD` or a `config` is one (its own modules are its own business, looked at when it is); others are walked."""
    stack = _subfolders(folder)
    for _ in range(MAX_FOLLOWED):
        if not stack:
            return
        candidate = stack.pop()
        if os.path.lexists(candidate / "HEAD") or os.path.lexists(candidate / "config"):
            yield candidate
        else:
            stack += _subfolders(candidate)


def _module_worktree(module: Path) -> Path | None:
    try:
        entries = gitconfig.read(module / "config") or []
    except gitconfig.Malformed:
        return None
    trees = [e.value for e in entries if e.section == "core" and e.key == "worktree" and e.value]
    return Path(os.path.realpath(module / trees[-1])) if trees else None


def pointed_gitdir(dot_git: Path) -> Path | None:
    """The folder a `.git` file names (`gitdir: PATH`), if it is one."""
    try:
        with open(dot_git, "rb") as handle:
            text = handle.read(MAX_GITFILE_BYTES).decode("utf-8", errors="replace").strip()
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    target = Path(text.removeprefix("gitdir:").strip())
    target = target if target.is_absolute() else dot_git.parent / target
    return Path(os.path.realpath(target)) if target.is_dir() else None


def common_dir(gitdir: Path) -> Path:
    """The main repository's git folder of a linked worktree's (its `commondir`), or the folder itself."""
    try:
        with open(gitdir / "commondir", "rb") as handle:
            pointer = handle.read(MAX_GITFILE_BYTES).decode("utf-8", errors="replace").strip()
    except OSError:
        return gitdir
    common = Path(pointer) if Path(pointer).is_absolute() else gitdir / pointer
    return Path(os.path.realpath(common))
