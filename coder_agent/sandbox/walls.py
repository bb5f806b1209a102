"""`Walls`: what a session's sandboxed commands may touch, as data — built once when the session opens, turned into
the launcher's spec (and the environment a command gets) for every command.

Writable: the session's folders, its private temp folder, the sandbox's caches for package managers (this
project's own), and the configured extra folders. Inside them, what git and the agent run from stays read-only
(`gitplaces`: hooks, config files and what they include, the hooks folder they name, `.coder-agent/`; of the
session's repositories, their submodules and the repositories their indexes link), and git folders are pinned so
they cannot be renamed away and rebuilt. These are looked up again for every command, so a repository a command
creates is protected from the next command on (and what it planted is undone when it ends: `command.CommandGuard`).
The agent's own installation (`installation.own_places`: its interpreter, environment, packages and prompts), where
it lies inside the writable places, stays read-only too: the agent runs and imports it outside the walls; a session
folder inside it cannot be walled.
Readable: the system; of the home folder only what builds need (`settings.HOME_READABLE`, `sandbox.allow_read`);
never the kept-out paths (keys, tokens, credentials, shell history, browser profiles, the agent's own config, data,
state, caches and logs, other sessions' folders) and `/dev` beyond a few safe devices. A folder that contains the
home folder cannot be walled (its shell startup files would run outside), so such a session gets no sandbox, and
says why.
"""

from __future__ import annotations

import glob
import logging
import os
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

from coder_agent import installation
from coder_agent.sandbox import gitconfig, gitplaces
from coder_agent.sandbox.gitindex import GitlinkCache
from coder_agent.sandbox.settings import DEFAULT_DENY_READ, HOME_READABLE, SandboxConfig
from coder_agent.sandbox.spec import Spec

ALONG_THE_WAY = (".python-version", ".tool-versions", ".nvmrc", ".node-version", ".ruby-version", ".editorconfig")
"""Files version managers and editors look for in every folder above a project: readable in the folders between
the home folder and a session's folder (the rest of those folders is kept out with the home folder)."""
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
"""Package managers' caches, pointed inside the walls (the project's own: see `command.project_cache`): a command
never writes (or poisons) the user's own, nor another project's."""
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
    """The sandbox's caches for package managers (this project's: `command.project_cache`)."""
    extra_writable: tuple[Path, ...] = ()
    denied: tuple[Path, ...] = ()
    """Kept out, read and write, wherever they are."""
    home: Path | None = None
    """The home folder (None: the agent's), kept out but for `readable` unless `home_kept` is off (it is `/`)."""
    home_kept: bool = True
    readable: tuple[Path, ...] = ()
    """What may be read inside the home folder (what builds need), but for the `denied` paths inside them."""
    git_configs: tuple[Path, ...] = ()
    """The user's and the system's git config files (for a `core.hooksPath` they set)."""
    linked: tuple[Path, ...] = ()
    """The git folders of the session folders that were linked worktrees when it opened (`gitplaces.linked_dirs`):
    commits write there."""
    own: tuple[Path, ...] = ()
    """The parts of the agent's own installation inside the writable places (`installation.own_places`): read-only."""
    network: str = "off"
    hosts: tuple[str, ...] = ()
    proxy_socket: Path | None = None
    unix_sockets: bool = False
    max_processes: int = 4096
    max_file_bytes: int = 4096 << 20
    missing: tuple[str, ...] = field(default=())
    """Configured paths left out (a writable folder that does not exist, a path that is not absolute; said once)."""
    gitlinks: GitlinkCache = field(default_factory=GitlinkCache, compare=False, repr=False)

    @property
    def writable(self) -> tuple[Path, ...]:
        return (*self.roots, self.temp, self.cache, *self.extra_writable)

    def git_places(self) -> gitplaces.GitPlaces:
        """Where git outside reads config and runs hooks from, inside the writable places, now."""
        home = self.home or Path.home()
        return gitplaces.find(self.roots, self.writable, home, self.git_configs, self.gitlinks, self.linked)

    def spec(self, cgroup: Path | None = None) -> Spec:
        """The launcher's spec for one command, with the git places and `.coder-agent` looked up now."""
        places = self.git_places()
        spec: Spec = {
            "write": [str(p) for p in dict.fromkeys((*self.writable, *places.writable))],
            "pin": [str(p) for p in dict.fromkeys(places.pinned)],
            "protect": [str(p) for p in dict.fromkeys((*places.protected, *self.own))],
            "deny": [str(p) for p in self.denied],
            "home": [str(self.home)] if self.home is not None and self.home_kept else [],
            "read": [str(p) for p in self.readable],
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

    def environment(self) -> dict[str, str]:
        """What a sandboxed command's environment gets on top of the usual: TMPDIR, the caches, the proxy."""
        env = dict.fromkeys(("TMPDIR", "TMP", "TEMP", "XDG_RUNTIME_DIR"), str(self.temp))
        env.update({name: str(self.cache / sub) for name, sub in CACHE_VARIABLES.items()})
        if self.network == "proxy":
            env.update(dict.fromkeys(PROXY_VARIABLES, PROXY_URL))
            env["NO_PROXY"] = env["no_proxy"] = "localhost,127.0.0.1,::1"
        else:
            env.update(dict.fromkeys(PROXY_VARIABLES, ""))
        return env

    def describe(self) -> list[str]:
        """The walls in words, one line each (for `/permissions`, `doctor` and the system prompt)."""
        home = self.home or Path.home()
        show = [_tilde(p, home) for p in self.writable]
        lines = [
            f"writes: {', '.join(show)}",
            "read-only inside them: .git/hooks, .git/config and what it includes, the hooks folder it names "
            "(also of submodules and linked repositories), .coder-agent/"
            + "".join(f", {_tilde(p, home)} (the agent's own)" for p in self.own),
            f"reads: {_reads_text(self, home)}",
            f"never: {_kept_out_text(self.denied, home)}, and /dev",
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
    own: tuple[Path, ...] | None = None,
) -> Walls:
    """The walls of a session working in `roots`; Unwallable if a root holds the home folder or `/`, or lies in the
    agent's own installation (`own`, by default `installation.own_places()`). `agent_paths` are kept out too (the
    agent's own files, other sessions' folders and other projects' caches), but for the session's own temp folder
    and cache inside them."""
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
    installed = installation.own_places() if own is None else own
    writable = (*resolved, *extra)
    for place in installed:
        held = next((folder for folder in writable if installation.inside(folder, (place,))), None)
        if held is not None:
            raise Unwallable(
                f"the folder {held} lies in coder-agent's own installation ({place}): a command could change what "
                "the agent itself runs, so commands are not sandboxed there (open the project folder instead)"
            )
    kept = kept_out_paths(settings, agent_paths, home=home, missing=missing)
    return Walls(
        roots=resolved,
        temp=Path(os.path.realpath(temp)),
        cache=Path(os.path.realpath(cache)),
        extra_writable=extra,
        denied=kept,
        home=home,
        home_kept=home != Path("/"),
        readable=_readable(home, resolved, settings.allow_read, kept),
        git_configs=_git_configs(home),
        linked=gitplaces.linked_dirs(resolved),
        own=tuple(p for p in installed if installation.inside(p, writable)),
        network=settings.network,
        hosts=settings.hosts(),
        proxy_socket=proxy_socket,
        unix_sockets=settings.allow_unix_sockets,
        max_processes=settings.max_processes,
        max_file_bytes=settings.max_file_mb << 20,
        missing=tuple(missing),
    )


def agent_paths(store_root: Path | None = None) -> tuple[Path, ...]:
    """The agent's own config, data (sessions, undo snapshots), state, caches and logs, and the files it logs to
    (`--log-file`): kept out of sandboxed commands' reach (the sandbox's caches inside them are reached only by
    their own project's commands)."""
    app = "coder-agent"
    paths = [
        platformdirs.user_config_path(app),
        platformdirs.user_data_path(app),
        platformdirs.user_state_path(app),
        platformdirs.user_cache_path(app),
        platformdirs.user_log_path(app),
    ]
    if store_root is not None:
        paths.append(store_root)
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.FileHandler) and not Path(handler.baseFilename).is_relative_to("/dev"):
            paths.append(Path(handler.baseFilename))
    return tuple(dict.fromkeys(paths))


def kept_out_paths(
    settings: SandboxConfig,
    agent_paths: tuple[Path, ...] = (),
    *,
    home: Path | None = None,
    missing: list[str] | None = None,
) -> tuple[Path, ...]:
    """The paths kept out, read and write, wherever they are (resolved; those that do not exist yet too: one made
    later stays out of reach): the defaults less `allow_read`, `deny_read`, the agent's own paths, the desktop
    session's runtime folder. A configured path that is not absolute goes to `missing`. Also what the agent itself
    never reads on its own in a session without walls (`TurnContext.reading_refused`)."""
    home = (home or Path.home()).resolve()
    allowed = {_expand(p, home) for p in settings.allow_read}
    defaults = [p for p in DEFAULT_DENY_READ if _expand(p, home) not in allowed]
    denied = [Path(os.path.realpath(p)) for raw in defaults for p in _matches(_expand(raw, home))]
    denied += _kept_out(settings.deny_read, home, missing if missing is not None else [])
    denied += [Path(os.path.realpath(p)) for p in agent_paths]
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(runtime):  # sockets and tokens of the desktop session (a container registry's login, say)
        denied.append(Path(os.path.realpath(runtime)))
    return tuple(dict.fromkeys(denied))


def _readable(home: Path, roots: tuple[Path, ...], allow_read: list[str], denied: tuple[Path, ...]) -> tuple[Path, ...]:
    """What may be read inside the home folder: `HOME_READABLE`, `allow_read`, the version files in the folders
    between the home folder and each session folder, and the launcher's own code should it live there; each
    resolved, and left out where it lies in a kept-out path (which wins)."""
    raw = [_expand(p, home) for p in (*HOME_READABLE, *allow_read)]
    raw += _git_reads(home)
    for root in roots:
        if root.is_relative_to(home):
            for folder in (*reversed(root.parents), root):
                if folder.is_relative_to(home) and folder not in (home, root):
                    raw += [folder / name for name in ALONG_THE_WAY]
    own = Path(__file__).resolve().parent  # the launcher imports from here after the walls are up
    raw += [own, *(Path(sysconfig.get_path(name)) for name in ("stdlib", "platstdlib"))]
    found: list[Path] = []
    for path in raw:
        if not os.path.lexists(path):
            continue
        real = Path(os.path.realpath(path))
        if not real.is_relative_to(home) or any(real.is_relative_to(d) for d in denied):
            continue
        found.append(real)
    unique = tuple(dict.fromkeys(found))
    return tuple(p for p in unique if not any(p != q and p.is_relative_to(q) for q in unique))


def _git_reads(home: Path) -> list[Path]:
    """What git reads besides its config files as the user's config names them: the files they include (git stops
    at one it cannot read), and the user's excludes and attributes files."""
    configs = list(_git_configs(home))
    found = [target for config in configs for target in gitconfig.includes(config, home)]
    for key in ("excludesfile", "attributesfile"):
        found += [gitconfig.expand(v, home, home) for v in gitconfig.values([*configs, *found], "core", key)]
    return found


def _git_configs(home: Path) -> tuple[Path, ...]:
    """The config files git reads besides a repository's own (the system's, the user's)."""
    configs = []
    if not os.environ.get("GIT_CONFIG_NOSYSTEM"):
        configs.append(Path(os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"))
    if os.environ.get("GIT_CONFIG_GLOBAL"):
        configs.append(Path(os.environ["GIT_CONFIG_GLOBAL"]))
    else:
        xdg = os.environ.get("XDG_CONFIG_HOME") or str(home / ".config")
        configs += [Path(xdg) / "git" / "config", home / ".gitconfig"]
    return tuple(configs)


def _matches(path: Path) -> list[Path]:
    """A kept-out path as written, or what its `*` matches now."""
    if "*" not in str(path):
        return [path]
    return [Path(p) for p in sorted(glob.glob(glob.escape(str(path)).replace("[*]", "*")))]


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


def _reads_text(walls: Walls, home: Path) -> str:
    if not walls.home_kept:
        return "everything but what is kept out"
    inside = [_tilde(p, home) for p in walls.readable if p.is_relative_to(home)]
    shown = ", ".join(inside[:12]) + (f" and {len(inside) - 12} more" if len(inside) > 12 else "")
    return f"the system; of your home folder only what builds need ({shown or 'nothing here'})"


def _kept_out_text(denied: tuple[Path, ...], home: Path, shown: int = 12) -> str:
    present = [_tilde(p, home) for p in denied if os.path.lexists(p)]
    more = len(denied) - min(len(present), shown)
    later = f" (and {more} more keys, tokens and credentials, here or should they appear)" if more else ""
    return (", ".join(present[:shown]) or "no key or token here") + later


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
