"""`Walls`: what a session's sandboxed commands may touch, as data — built once when the session opens, turned into
the launcher's spec (and the environment a command gets) for every command.

Writable: the session's folders, its private temp folder, the sandbox's caches for package managers, and the
configured extra folders. Inside the session's folders, what git and the agent run from stays read-only: `.git/hooks`
and `.git/config` (also of submodules, and of a worktree's main repository, which is writable for commits),
`.coder-agent/`; each `.git` folder is pinned so it cannot be renamed away and rebuilt. These are looked up again for
every command, so a repository a command creates is protected from the next command on. Readable: everything but the
kept-out paths (keys, tokens, browser profiles, the agent's own config and sessions) and `/dev` beyond a few safe
devices. A folder that contains the home folder cannot be walled (its shell startup files would run outside), so
such a session gets no sandbox, and says why.
"""

from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

from coder_agent.sandbox.settings import DEFAULT_DENY_READ, SandboxConfig
from coder_agent.sandbox.spec import Spec

PROTECTED_NAMES = (".coder-agent",)
GIT_REDIRECTS = ("commondir", "gitdir")
"""Files in a git folder that send git elsewhere for its config and hooks: one a command makes is removed after it,
one it changes put back (`Walls.git_redirects`), since the folder must stay writable for commits and a wall cannot
forbid one name in it."""
GIT_PROTECTED = ("hooks", "config")
PROXY_URL = "http://127.0.0.1:3128"
CACHE_VARIABLES = {
    "XDG_CACHE_HOME": "xdg",
    "UV_CACHE_DIR": "uv",
    "PIP_CACHE_DIR": "pip",
    "npm_config_cache": "npm",
    "YARN_CACHE_FOLDER": "yarn",
    "npm_config_store_dir": "pnpm",
    "CARGO_HOME": "cargo",
    "GOMODCACHE": "go-mod",
    "GOCACHE": "go-build",
}
"""Package managers' caches, pointed inside the walls: a command never writes (or poisons) the user's own."""
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


class Unwallable(Exception):
    """These folders cannot be walled; the message says why."""


@dataclass(frozen=True)
class Walls:
    roots: tuple[Path, ...]
    """The session's folders (cwd first), resolved."""
    temp: Path
    """The session's private temp folder (TMPDIR)."""
    cache: Path
    """The sandbox's caches for package managers (shared by every sandboxed session of this user)."""
    extra_writable: tuple[Path, ...] = ()
    denied: tuple[Path, ...] = ()
    network: str = "off"
    hosts: tuple[str, ...] = ()
    proxy_socket: Path | None = None
    unix_sockets: bool = False
    max_processes: int = 4096
    max_file_bytes: int = 4096 << 20
    missing: tuple[str, ...] = field(default=())
    """Configured paths left out (a writable folder that does not exist, a path that is not absolute; said once)."""

    @property
    def writable(self) -> tuple[Path, ...]:
        return (*self.roots, self.temp, self.cache, *self.extra_writable)

    def spec(self, cgroup: Path | None = None) -> Spec:
        """The launcher's spec for one command, with `.git` and `.coder-agent` looked up now."""
        pinned, protected, git_writable = _git_places(self.roots)
        spec: Spec = {
            "write": [str(p) for p in (*self.writable, *git_writable)],
            "pin": [str(p) for p in pinned],
            "protect": [str(p) for p in protected],
            "deny": [str(p) for p in self.denied],
            "max_processes": [str(self.max_processes)],
            "max_file_bytes": [str(self.max_file_bytes)],
        }
        if self.network == "proxy" and self.proxy_socket is not None:
            spec["proxy"] = [str(self.proxy_socket)]
        if self.unix_sockets:
            spec["unix_sockets"] = ["yes"]
        if cgroup is not None:
            spec["cgroup"] = [str(cgroup)]
        return spec

    def git_redirects(self) -> dict[Path, bytes]:
        """The redirecting files (`GIT_REDIRECTS`) in the session's git folders now, with what they say."""
        pinned, _, writable = _git_places(self.roots)
        folders = [*pinned, *writable]
        folders += [m.parent for p in pinned for m in (p / "modules").glob("**/config")]
        found: dict[Path, bytes] = {}
        for path in (f / name for f in dict.fromkeys(folders) for name in GIT_REDIRECTS):
            with contextlib.suppress(OSError):
                found[path] = path.read_bytes()
        return found

    def environment(self) -> dict[str, str]:
        """What a sandboxed command's environment gets on top of the usual: TMPDIR, the caches, the proxy."""
        env = {"TMPDIR": str(self.temp), "TMP": str(self.temp), "TEMP": str(self.temp)}
        env.update({name: str(self.cache / sub) for name, sub in CACHE_VARIABLES.items()})
        if self.network == "proxy":
            env.update(dict.fromkeys(PROXY_VARIABLES, PROXY_URL))
            env["NO_PROXY"] = env["no_proxy"] = "localhost,127.0.0.1,::1"
        else:
            env.update(dict.fromkeys(PROXY_VARIABLES, ""))
        return env

    def describe(self) -> list[str]:
        """The walls in words, one line each (for `/permissions`, `doctor` and the system prompt)."""
        home = Path.home()
        show = [_tilde(p, home) for p in self.writable]
        lines = [
            f"writes: {', '.join(show)}",
            "read-only inside them: .git/hooks, .git/config, .coder-agent/",
            f"reads: everything but {_kept_out_text(self.denied, home)}, and /dev",
        ]
        if self.network == "proxy":
            lines.append(f"network: through the proxy to {', '.join(self.hosts) or 'no host'}; nothing else")
        else:
            shared = "the session's commands" if sys.platform == "linux" else "the machine (macOS has no private one)"
            lines.append(f"network: none (servers on 127.0.0.1 work, their loopback shared with {shared})")
        if not self.unix_sockets:
            lines.append("UNIX sockets: none outside socketpair()")
        lines.append(f"limits: {self.max_processes} processes, files up to {self.max_file_bytes >> 20} MiB")
        return lines


def build_walls(
    roots: tuple[Path, ...],
    settings: SandboxConfig,
    *,
    temp: Path,
    cache: Path,
    proxy_socket: Path | None,
    agent_paths: tuple[Path, ...] = (),
    home: Path | None = None,
) -> Walls:
    """The walls of a session working in `roots`; Unwallable if a root holds the home folder or `/`."""
    home = (home or Path.home()).resolve()
    resolved = tuple(Path(os.path.realpath(r)) for r in roots)
    for root in resolved:
        if root == Path("/") or home == root or root in home.parents:
            raise Unwallable(
                f"the session's folder {root} contains your home folder: a command could change what runs when you "
                "log in, so commands are not sandboxed there (open a project folder instead)"
            )
    missing: list[str] = []
    extra = _existing(settings.writable, home, missing)
    kept = kept_out_paths(settings, agent_paths, home=home, missing=missing)
    return Walls(
        roots=resolved,
        temp=Path(os.path.realpath(temp)),
        cache=Path(os.path.realpath(cache)),
        extra_writable=extra,
        denied=kept,
        network=settings.network,
        hosts=settings.hosts(),
        proxy_socket=proxy_socket,
        unix_sockets=settings.allow_unix_sockets,
        max_processes=settings.max_processes,
        max_file_bytes=settings.max_file_mb << 20,
        missing=tuple(missing),
    )


def agent_paths(store_root: Path | None = None) -> tuple[Path, ...]:
    """The agent's own config and data (sessions, undo snapshots): kept out of sandboxed commands' reach."""
    paths = [platformdirs.user_config_path("coder-agent"), platformdirs.user_data_path("coder-agent")]
    if store_root is not None:
        paths.append(store_root)
    return tuple(paths)


def kept_out_paths(
    settings: SandboxConfig,
    agent_paths: tuple[Path, ...] = (),
    *,
    home: Path | None = None,
    missing: list[str] | None = None,
) -> tuple[Path, ...]:
    """The paths kept out of reach (resolved), whether they exist yet or not (one made later stays out of reach):
    the defaults less `allow_read`, `deny_read`, and the agent's own paths. A configured path that is not absolute
    goes to `missing`. Also what the agent itself does not read on its own in a session without walls."""
    home = (home or Path.home()).resolve()
    allowed = {_expand(p, home) for p in settings.allow_read}
    defaults = [p for p in DEFAULT_DENY_READ if _expand(p, home) not in allowed]
    denied = [Path(os.path.realpath(_expand(p, home))) for p in defaults]
    denied += _kept_out(settings.deny_read, home, missing if missing is not None else [])
    denied += [Path(os.path.realpath(p)) for p in agent_paths]
    return tuple(dict.fromkeys(denied))


def _expand(raw: str, home: Path) -> Path:
    return home / raw[2:] if raw.startswith("~/") else home if raw == "~" else Path(raw)


def _existing(raws: list[str], home: Path, missing: list[str]) -> tuple[Path, ...]:
    found: list[Path] = []
    for raw in raws:
        path = _expand(raw, home)
        if not path.is_absolute() or not os.path.lexists(path):
            missing.append(raw)
            continue
        found.append(Path(os.path.realpath(path)))
    return tuple(found)


def _kept_out_text(denied: tuple[Path, ...], home: Path) -> str:
    present = [_tilde(p, home) for p in denied if os.path.lexists(p)]
    absent = len(denied) - len(present)
    later = f" (and {absent} more, should they appear)" if absent else ""
    return (", ".join(present) or "nothing") + later


def _kept_out(raws: list[str], home: Path, missing: list[str]) -> list[Path]:
    """Configured paths to keep out, whether they exist yet or not (one that is not absolute is said once)."""
    kept: list[Path] = []
    for raw in raws:
        path = _expand(raw, home)
        if path.is_absolute():
            kept.append(Path(os.path.realpath(path)))
        else:
            missing.append(raw)
    return kept


def _tilde(path: Path, home: Path) -> str:
    return f"~/{path.relative_to(home)}" if path.is_relative_to(home) and path != home else str(path)


def _git_places(roots: tuple[Path, ...]) -> tuple[list[Path], list[Path], list[Path]]:
    """(folders to pin, paths to keep read-only, folders outside the roots a worktree's commits write to)."""
    pinned: list[Path] = []
    protected: list[Path] = []
    writable: list[Path] = []
    for root in roots:
        protected += [root / name for name in PROTECTED_NAMES]
        dot_git = root / ".git"
        if dot_git.is_dir() and not dot_git.is_symlink():
            _protect_git_dir(dot_git, pinned, protected)
        elif dot_git.is_file():
            protected.append(dot_git)
            gitdir = _pointed_gitdir(dot_git)
            if gitdir is not None:
                common = _common_dir(gitdir)
                writable += [gitdir, common]
                protected.append(gitdir / "config.worktree")
                _protect_git_dir(common, pinned, protected)
    return pinned, protected, writable


def _protect_git_dir(git_dir: Path, pinned: list[Path], protected: list[Path]) -> None:
    """Pin a git folder and keep its hooks and config (and its submodules') read-only; a missing hooks folder is
    made first (as `git init` would), so one cannot be created inside the walls."""
    pinned.append(git_dir)
    with contextlib.suppress(OSError):
        (git_dir / "hooks").mkdir(exist_ok=True)
    protected += [git_dir / name for name in GIT_PROTECTED]
    modules = git_dir / "modules"
    if modules.is_dir():
        for config in modules.glob("**/config"):
            module = config.parent
            (module / "hooks").mkdir(exist_ok=True)
            protected += [module / name for name in GIT_PROTECTED]


def _pointed_gitdir(dot_git: Path) -> Path | None:
    try:
        text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    target = Path(text.removeprefix("gitdir:").strip())
    target = target if target.is_absolute() else dot_git.parent / target
    return Path(os.path.realpath(target)) if target.is_dir() else None


def _common_dir(gitdir: Path) -> Path:
    try:
        pointer = (gitdir / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return gitdir
    common = Path(pointer) if Path(pointer).is_absolute() else gitdir / pointer
    return Path(os.path.realpath(common))
