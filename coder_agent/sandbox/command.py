"""`CommandSandbox`: one session's sandbox — how each of its commands is launched inside its walls, and what a
result that hit them looks like.

`launch(argv)` gives the command line and the environment additions that run `argv` inside the walls: on Linux the
launcher (`python -I -S sandbox/enter.py -- …`, walls in `CODER_AGENT_SANDBOX`), on macOS `sandbox-exec` with a
Seatbelt profile. The session owns its private folder (a `tmp/` the commands write to, and the proxy's socket
beside it, out of their reach): `open()` makes it and starts the proxy, `aclose()` removes it.
`hit_walls(output, exit_code)` recognises a failure the walls caused (or the launcher's refusal to run without
them), so the command can be offered to run outside.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
import platformdirs
from anyio.abc import TaskGroup

from coder_agent.process import PipedLeader, spawn_group
from coder_agent.sandbox import seatbelt
from coder_agent.sandbox.cgroups import make_pids_group, remove_group
from coder_agent.sandbox.network import SessionNetwork
from coder_agent.sandbox.probe import Support, launcher_argv
from coder_agent.sandbox.proxy import HostProxy
from coder_agent.sandbox.settings import SandboxConfig
from coder_agent.sandbox.spawner import ForkServerSpawner
from coder_agent.sandbox.spec import FAILURE_MARK, SPEC_VARIABLE, encode
from coder_agent.sandbox.walls import Walls, build_walls

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
COMMAND_MARK = "CODER_AGENT_COMMAND"
"""The environment entry that marks the processes of one sandboxed command."""


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
        pids_group: Path | None = None,
        network: SessionNetwork | None = None,
    ) -> None:
        self.walls = walls
        self.support = support
        self.folder = folder
        self.proxy = proxy
        self.spawner = spawner
        """Starts local commands without a launcher each (Linux); None: every command goes through `launch`."""
        self.pids_group = pids_group
        """The session's pids cgroup (a root agent), which every command joins; None: RLIMIT_NPROC holds them."""
        self.network = network
        """The network namespace the session's commands share (Linux); None: each has its own (or none at all)."""

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
        folder = Path(tempfile.mkdtemp(prefix="coder-agent-sandbox-"))
        try:
            (folder / "tmp").mkdir()
            cache = platformdirs.user_cache_path("coder-agent") / "sandbox"
            cache.mkdir(parents=True, exist_ok=True)
            proxy_socket = folder / "proxy.sock" if settings.network == "proxy" else None
            walls = build_walls(
                roots,
                settings,
                temp=folder / "tmp",
                cache=cache,
                proxy_socket=proxy_socket,
                agent_paths=agent_paths,
            )
            proxy = None
            if proxy_socket is not None:
                proxy = HostProxy(proxy_socket, walls.hosts)
                await proxy.serve(tasks)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        linux = support.kind == "landlock"
        spawner = ForkServerSpawner(tasks) if linux else None
        pids_group = await anyio.to_thread.run_sync(make_pids_group, walls.max_processes) if linux else None
        network = SessionNetwork(proxy_socket, pids_group) if linux else None
        return cls(walls, support, folder, proxy, spawner, pids_group, network)

    async def launch(self, argv: Sequence[str], *, shared_network: bool = True) -> tuple[list[str], dict[str, str]]:
        """The command line and environment additions that run `argv` inside the walls: on Linux in the session's
        network (started for the first command that needs it), or with `shared_network=False` in one of its own
        (an MCP server: what it listens on must not be a way around its tools' permission questions)."""
        env = self.walls.environment()
        spec = self.walls.spec(self.pids_group)
        shared = await self.network.entry() if self.network is not None and shared_network else None
        if shared is not None:
            spec["network"] = [shared]
        if self.support.kind == "seatbelt":
            return seatbelt.argv(spec, argv, proxy=self.walls.network == "proxy"), env
        env[SPEC_VARIABLE] = encode(spec)
        return [*launcher_argv(), "--", *argv], env

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

    def guard(self) -> CommandGuard:
        """What one command needs around it: a mark for its processes, the git redirects there were before it."""
        return CommandGuard(self.walls, uuid.uuid4().hex, self.walls.git_redirects())

    async def aclose(self) -> None:
        if self.spawner is not None:
            await self.spawner.aclose()
        if self.network is not None:
            await self.network.aclose()
        if self.pids_group is not None:
            await anyio.to_thread.run_sync(remove_group, self.pids_group)
        with contextlib.suppress(OSError):
            await anyio.to_thread.run_sync(shutil.rmtree, self.folder, True)


@dataclass
class CommandGuard:
    """One sandboxed command's mark (in `env`, inherited by all it starts) and what it must not leave behind."""

    walls: Walls
    token: str
    git_before: dict[Path, bytes]

    @property
    def env(self) -> dict[str, str]:
        return {COMMAND_MARK: self.token}

    async def finish(self) -> str:
        """Once the command has ended: kill what it left running (a daemon that left its process group still
        carries the mark), and remove the git redirects it made; what was done, as a note for the output."""
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(_kill_marked, f"{COMMAND_MARK}={self.token}".encode())
            made = await anyio.to_thread.run_sync(self.walls.git_redirects)
        notes = []
        for path, says in sorted(made.items()):
            before = self.git_before.get(path)
            if before == says:
                continue
            with contextlib.suppress(OSError):
                if before is None:
                    path.unlink()
                else:
                    path.write_bytes(before)
            what = "made" if before is None else "changed"
            undone = "it was removed" if before is None else "it was put back"
            notes.append(
                f"\n[coder-agent: the command {what} {path}, which would send git, run outside the sandbox, to another "
                f"folder's config and hooks; {undone}.]"
            )
        return "".join(notes)


def _kill_marked(mark: bytes) -> None:
    """SIGKILL every process whose environment holds `mark` (Linux's /proc; elsewhere nothing)."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as handle:
                found = mark in handle.read().split(b"\0")
        except OSError:
            continue
        if found:
            with contextlib.suppress(OSError):
                os.kill(int(name), signal.SIGKILL)


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
