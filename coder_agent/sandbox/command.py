"""`CommandSandbox`: one session's sandbox — how each of its commands is launched inside its walls, and what a
result that hit them looks like.

`launch(argv)` gives the command line and the environment additions that run `argv` inside the walls: on Linux the
launcher (`python -I -S sandbox/enter.py -- …`, walls in `CODER_AGENT_SANDBOX`), on macOS `sandbox-exec` with a
Seatbelt profile. The session owns a private folder (the proxy's socket, out of the commands' reach), a temp folder
the commands write to (0700, in one folder of this user's, `sessions_folder`, that is kept out of every session's
commands but for their own), and package caches of its project's own (`project_cache`): `open()` makes them and
starts the proxy, `aclose()` removes the private and temp folders. On Linux the private folder also holds
`sandboxed`, a two-line script that runs the launcher, so the command line an editor shows for its terminal reads
`…/sandboxed bash -c '<the command>'` rather than the interpreter and the launcher's path (where the folder's file
system forbids running files, the launcher is named in full).
`guard()` is what one command needs around it: the git places as they were before it, so that when it ends what
it planted for git outside is undone (`CommandGuard.finish`).
`hit_walls(output, exit_code)` recognises a failure the walls caused (or the launcher's refusal to run without
them), so the command can be offered to run outside.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shlex
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
import platformdirs
from anyio.abc import TaskGroup

from coder_agent.process import PipedLeader, spawn_group
from coder_agent.sandbox import gitplaces, gitundo, seatbelt
from coder_agent.sandbox.cgroups import SessionGroup, default_memory, make_session_group, remove_group
from coder_agent.sandbox.network import SessionNetwork
from coder_agent.sandbox.probe import Support, launcher_argv
from coder_agent.sandbox.proxy import HostProxy
from coder_agent.sandbox.settings import SandboxConfig
from coder_agent.sandbox.spawner import ForkServerSpawner
from coder_agent.sandbox.spec import FAILURE_MARK, SPEC_VARIABLE, encode
from coder_agent.sandbox.walls import PROXY_VARIABLES, Walls, build_walls

log = logging.getLogger(__name__)

DENIAL_SIGNS = (
    "Permission denied",
    "Read-only file system",
    "Operation not permitted",
    "Network is unreachable",
    "Could not resolve host",
    "Temporary failure in name resolution",
    "Name or service not known",
    "nodename nor servname",
    "getaddrinfo",
    "Failed to establish a new connection",
    "Connection refused",
    "Tunnel connection failed: 403",
    "CONNECT tunnel failed, response 403",
    "coder-agent sandbox:",
)
"""What a command prints when the walls stopped it (file system, network, the proxy's refusal, the launcher)."""
SHOWN_LAUNCHER = "sandboxed"
"""The script in the session's private folder that runs the launcher: what an editor shows as a command's program."""


@dataclass(frozen=True)
class WallsHit:
    """Why a sandboxed command seems to have failed because of the walls."""

    evidence: str
    """The line of its output that shows it."""
    launcher: bool
    """The walls could not be put up at all (nothing ran)."""


class CommandSandbox:
    """A session's sandbox (see the module docstring)."""

    def __init__(
        self,
        walls: Walls,
        support: Support,
        folder: Path,
        proxy: HostProxy | None,
        spawner: ForkServerSpawner | None,
        group: SessionGroup | None = None,
        network: SessionNetwork | None = None,
    ) -> None:
        self.walls = walls
        self.support = support
        self.folder = folder
        self.proxy = proxy
        self.spawner = spawner
        """Starts local commands without a launcher each (Linux); None: every command goes through `launch`."""
        self.group = group
        """The session's cgroup (`sandbox/cgroups.py`: processes and memory), which every command joins; None where
        none could be made (RLIMIT_NPROC holds the processes, nothing the memory)."""
        self.network = network
        """The network namespace the session's commands share (Linux); None: each has its own (or none at all)."""
        self._closers: list[Callable[[], Awaitable[None]]] = []

    @classmethod
    async def open(
        cls,
        roots: tuple[Path, ...],
        settings: SandboxConfig,
        support: Support,
        tasks: TaskGroup,
        agent_paths: tuple[Path, ...] = (),
    ) -> CommandSandbox:
        """Make the session's private folder, build the walls, start the proxy if the network goes through it.
        `walls.Unwallable` if these folders cannot be walled."""
        sessions = sessions_folder()
        folder = Path(tempfile.mkdtemp(prefix="coder-agent-sandbox-"))
        temp = Path(tempfile.mkdtemp(prefix="session-", dir=sessions))  # 0700
        try:
            cache = project_cache(roots)
            cache.mkdir(mode=0o700, parents=True, exist_ok=True)
            proxy_socket = folder / "proxy.sock" if settings.network == "proxy" else None
            walls = build_walls(
                roots,
                settings,
                temp=temp,
                cache=cache,
                proxy_socket=proxy_socket,
                agent_paths=(*agent_paths, sessions, cache.parent),
            )
            proxy = None
            if proxy_socket is not None:
                proxy = HostProxy(proxy_socket, walls.hosts)
                await proxy.serve(tasks, tcp=support.kind == "seatbelt")  # macOS: no forwarder, a port of ours
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            shutil.rmtree(temp, ignore_errors=True)
            raise
        linux = support.kind == "landlock"
        if linux:
            write_shown_launcher(folder)
        memory = (settings.max_memory_mb << 20) if settings.max_memory_mb else default_memory()
        group = await anyio.to_thread.run_sync(make_session_group, walls.max_processes, memory) if linux else None
        spawner = ForkServerSpawner(tasks, group.folders if group is not None else ()) if linux else None
        network = SessionNetwork(proxy_socket, group.folders if group is not None else ()) if linux else None
        return cls(walls, support, folder, proxy, spawner, group, network)

    def sharing(self, walls: Walls, folder: Path) -> CommandSandbox:
        """A sandbox of other walls (an isolated sub-agent's, `folder` its private folder) that shares this one's
        launcher, proxy, cgroup and network. It owns none of them: this one is closed, never it."""
        return CommandSandbox(walls, self.support, folder, self.proxy, self.spawner, self.group, self.network)

    async def launch(self, argv: Sequence[str], *, shared_network: bool = True) -> tuple[list[str], dict[str, str]]:
        """The command line and environment additions that run `argv` inside the walls: on Linux in the session's
        network (started for the first command that needs it), or with `shared_network=False` in one of its own
        (an MCP server: what it listens on must not be a way around its tools' permission questions)."""
        env = self.walls.environment()
        spec = self.walls.spec()
        if self.group is not None:
            spec["cgroup"] = [str(folder) for folder in self.group.folders]
        shared = await self.network.entry() if self.network is not None and shared_network else None
        if shared is not None:
            spec["network"] = [shared]
        if self.support.kind == "seatbelt":
            port = self.proxy.tcp_port if self.proxy is not None else None
            proxied = self.walls.network == "proxy"
            if proxied:  # the proxy's own port, or none at all (fail closed)
                env.update(dict.fromkeys(PROXY_VARIABLES, f"http://127.0.0.1:{port}" if port is not None else ""))
            return seatbelt.argv(spec, argv, proxy=proxied, proxy_port=port), env
        env[SPEC_VARIABLE] = encode(spec)
        shown = self.folder / SHOWN_LAUNCHER
        return [str(shown), *argv] if shown.exists() else [*launcher_argv(), "--", *argv], env

    async def start(
        self,
        argv: Sequence[str],
        cwd: Path,
        env: Mapping[str, str],
        *,
        stdin: int | None = None,
        errors: bool = True,
    ) -> PipedLeader:
        """Start `argv` inside the walls as a local process group, its output (stdout and stderr; with
        `errors=False` stdout alone, stderr going to /dev/null) on a pipe; `env` is the environment it gets apart
        from the walls' own additions, `stdin` the descriptor it reads (None: /dev/null; the caller keeps and
        closes its own). OSError if it could not start."""
        command, extra = await self.launch(argv)
        full = {**env, **extra}
        if self.spawner is not None:
            return await self.spawner.spawn(argv, cwd, full, stdin=stdin, errors=errors)
        return await spawn_group(
            command,
            cwd=cwd,
            env=full,
            stdin=subprocess.DEVNULL if stdin is None else stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if errors else subprocess.DEVNULL,
        )

    def describe(self) -> list[str]:
        """The walls in words, one line each, and the session's limits."""
        return [*self.walls.describe(), *([self.group.describe()] if self.group is not None else [])]

    def guard(self) -> CommandGuard:
        """What one command needs around it: the git places as they were before it. (What it leaves running ends
        with it: it has a PID namespace of its own, `sandbox/supervisor.py`.)"""
        places = self.walls.git_places()
        return CommandGuard(self.walls, places, places.snapshot())

    def on_close(self, closer: Callable[[], Awaitable[None]]) -> None:
        """Run `closer` first when the sandbox closes (a helper of the agent's own that runs inside the walls)."""
        self._closers.append(closer)

    async def aclose(self) -> None:
        for closer in self._closers:
            try:
                await closer()
            except Exception:
                log.warning("a helper inside the sandbox did not close", exc_info=True)
        if self.spawner is not None:
            await self.spawner.aclose()
        if self.network is not None:
            await self.network.aclose()
        if self.group is not None:
            await anyio.to_thread.run_sync(remove_group, self.group)
        for folder in (self.folder, self.walls.temp):
            with contextlib.suppress(OSError):
                await anyio.to_thread.run_sync(shutil.rmtree, folder, True)


@dataclass
class CommandGuard:
    """What one sandboxed command must not leave behind for git run outside the walls."""

    walls: Walls
    places: gitplaces.GitPlaces
    """The git places before the command."""
    watched: gitundo.Snapshot
    """What the watched git files held before the command."""

    async def finish(self) -> str:
        """Once the command has ended: undo what it planted for git run outside (`undo`); what was done, as a note
        for the output."""
        with anyio.CancelScope(shield=True):
            notes = await anyio.to_thread.run_sync(self.undo)
        return "".join(f"\n{note}" for note in notes)

    def undo(self) -> list[str]:
        """Before the agent or the user runs git again: the redirects the command made or changed removed or put
        back, what it made where git would read or run it (a missing included file, hooks folder or
        `config.worktree`) renamed aside, and a repository it made (or replaced) where git outside will open it (a
        session folder's, a submodule's, one it linked in an index) cut to settings that run nothing, its hooks
        disabled. The walls of the next command protect what is there now."""
        after = self.walls.git_places()
        before = self.places.repositories
        new = {path for path, identity in after.repositories.items() if before.get(path) != identity}
        notes = gitundo.undo_redirects(self.watched, after.snapshot(), new)
        notes += gitundo.set_aside(self.places.absent)
        for git_dir in sorted(new):
            notes += gitundo.neutralize(git_dir)
        return notes


def sessions_folder() -> Path:
    """The folder of this user's sessions' temp folders (in the agent's cache folder, 0700): kept out of every
    session's commands, which reach only their own temp folder in it. Not in the machine's temp folder, because
    keeping a folder there out of reach makes the walls grant each of its neighbours one by one, for every command.
    OSError if it is not this user's alone: the sessions then get no sandbox, and say why."""
    folder = platformdirs.user_cache_path("coder-agent") / "sessions"
    folder.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise OSError(f"{folder} is not a folder of yours")
    if st.st_mode & 0o077:
        os.chmod(folder, 0o700)
    return Path(os.path.realpath(folder))


def project_cache(roots: tuple[Path, ...]) -> Path:
    """The package managers' caches of the project in these folders: one folder per set of session folders (by
    their resolved paths), so what one project's commands leave there (a poisoned package, a `CARGO_HOME`
    config that runs a wrapper) never reaches another project's; the others are kept out of its commands."""
    key = "\0".join(os.path.realpath(root) for root in roots)
    return platformdirs.user_cache_path("coder-agent") / "sandbox" / hashlib.sha256(key.encode()).hexdigest()[:16]


def hit_walls(output: str, exit_code: int | None) -> WallsHit | None:
    """Whether a sandboxed command's failure looks like the walls' doing (a failed command only)."""
    if exit_code == 0:
        return None
    for line in output.splitlines():
        if line.startswith(FAILURE_MARK):
            return WallsHit(line.strip(), launcher=True)
    for line in output.splitlines():
        if any(sign in line for sign in DENIAL_SIGNS):
            return WallsHit(line.strip()[:300], launcher=False)
    return None


def write_shown_launcher(folder: Path) -> None:
    """`sandboxed` in the session's private folder (0700, which sandboxed commands cannot write): it runs the launcher
    on the rest of its command line. Not written where the file system forbids running files (`noexec`)."""
    if os.statvfs(folder).f_flag & os.ST_NOEXEC:
        return
    line = " ".join(shlex.quote(part) for part in launcher_argv())
    script = folder / SHOWN_LAUNCHER
    script.write_text(f'#!/bin/sh\nexec {line} -- "$@"\n', encoding="utf-8")
    script.chmod(0o500)
