"""Real walls around a temporary user, and one shell command run inside them as the agent runs it.

`make_layout(base)` lays out what a command could try to reach: a fake home holding every default kept-out path and
every credential file of `CREDENTIAL_FILES` (each with a secret in it), what builds read there (`READABLE_FILES`),
the agent's own config, session store, state and log (`~/.config/coder-agent`, `~/.local/share/coder-agent`,
`~/.local/state/coder-agent`), a git workspace with hooks, config and a `.coder-agent/` folder, and an `outside`
folder of victims; `copy_layout` copies one (quicker than laying out anew). Everything belongs to the user the
commands run as and is open to them, so that only the walls can stop a command, never file permissions. The caller
points HOME and the XDG folders into the fake home, so that the agent's own paths (`sandbox.walls.agent_paths`)
are the layout's (`Walled` checks it).

`opened_sandbox(layout, settings)` opens a session's sandbox as the agent does (`CommandSandbox.open` in a task
group, its proxy served there) for commands run with `run_inside`.

`Walled` builds the walls from a layout with the real code (`build_walls(..., home=...)`, `CommandSandbox`,
`Walls.spec` looked up again on every launch) and `run(command)` runs `bash -c command` through the real launcher
as the agent's local bridge does: `session.bridge.command_line`, its own process group (`process.spawn_group`),
the scrubbed environment plus `COMMAND_ENV` and the walls' additions, the group ended afterwards
(`process.stop_group`). With `network="proxy"` a real `HostProxy` serves the command for as long as it runs.
`as_user=NOBODY` wraps the launcher in `setpriv`, so the command starts unprivileged and the launcher takes its
user-namespace branch.

`snapshot(paths)` records everything about trees that a command could change (entries, kinds, modes, owners,
sizes, mtimes, contents, link targets) for before/after comparisons; `survivors(mark)` lists the processes still
carrying a command's marker in their environment.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import shutil
import stat
import subprocess
import warnings
import weakref
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import platformdirs

from coder_agent.process import spawn_group, stop_group
from coder_agent.sandbox import probe
from coder_agent.sandbox.cgroups import make_session_group, remove_group
from coder_agent.sandbox.command import CommandSandbox
from coder_agent.sandbox.proxy import HostProxy
from coder_agent.sandbox.settings import DEFAULT_DENY_READ, SandboxConfig
from coder_agent.sandbox.walls import agent_paths, build_walls
from coder_agent.secrets import child_environ
from coder_agent.session.bridge import COMMAND_ENV, command_line
from coder_agent.session.local_bridge import DRAIN_GRACE, KILL_GRACE
from tests.sandbox.credentials import CREDENTIAL_FILES, FOLDER_LIKE, PATTERN_NAME, READABLE_FILES, SECRET_FILE_IN

NOBODY = 65534
MARK_VARIABLE = "SANDBOX_TEST_MARK"
"""Every command of these tests carries a marker in its environment, so what it leaves running can be found."""
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Sandbox Test",
    "GIT_AUTHOR_EMAIL": "sandbox@test.invalid",
    "GIT_COMMITTER_NAME": "Sandbox Test",
    "GIT_COMMITTER_EMAIL": "sandbox@test.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}
HOOK = "#!/bin/sh\nexit 0\n"
AGENT_CONFIG = ".config/coder-agent"
AGENT_DATA = ".local/share/coder-agent"
AGENT_STATE = ".local/state/coder-agent"
"""Where the agent keeps its config, data, state and logs under a home folder (platformdirs, with the XDG folders
in it)."""


@dataclass(frozen=True)
class Layout:
    """The places of one test (see the module docstring)."""

    base: Path
    home: Path
    workspace: Path
    outside: Path
    private: Path
    """The session's private folder: its `tmp/` is the commands' TMPDIR."""
    cache: Path
    agent_files: tuple[Path, ...]
    """The agent's own config file and a session of its store."""
    secrets: dict[Path, str] = field(default_factory=dict)
    """Every kept-out file the layout made, with its content (a unique secret)."""

    @property
    def temp(self) -> Path:
        return self.private / "tmp"

    @property
    def key(self) -> Path:
        return self.home / ".ssh" / "id_rsa"

    @property
    def guarded(self) -> tuple[Path, ...]:
        """What no command may change: the home folder (keys, tokens, profiles, the agent's own files), the outside
        folder, and what stays read-only inside the workspace."""
        git = self.workspace / ".git"
        return (self.home, self.outside, git / "hooks", git / "config", self.workspace / ".coder-agent")


def make_layout(base: Path, *, token: str, owner: int | None = None, project_config: bool = True) -> Layout:
    """Lay out a user's world under `base` (see the module docstring); `owner` is the uid the commands run as."""
    home = base / "home"
    secrets: dict[Path, str] = {}
    targets = []
    for raw in DEFAULT_DENY_READ:
        if not raw.startswith("~/"):
            continue  # the machine's own (/etc/shadow): not laid out here
        entry = home / raw.removeprefix("~/").replace("*", PATTERN_NAME)
        targets.append(entry / SECRET_FILE_IN.get(raw.rstrip("/"), "secret.txt") if raw in FOLDER_LIKE else entry)
    targets += [home / raw.removeprefix("~/") for raw in CREDENTIAL_FILES.values()]
    for target in dict.fromkeys(targets):
        target.parent.mkdir(parents=True, exist_ok=True)
        secret = f"SECRET-{token}-{len(secrets):02d}-{target.name.lstrip('.')}"
        target.write_text(secret + "\n", encoding="utf-8")
        secrets[target] = secret
    for raw, text in READABLE_FILES.items():
        path = home / raw.removeprefix("~/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        if "/bin/" in raw:
            path.chmod(0o755)
    (home / ".bashrc").write_text("# the user's shell startup\n", encoding="utf-8")
    agent_files = []
    for path, secret in (
        (home / AGENT_CONFIG / "config.toml", f"AGENT-CONFIG-{token}"),
        (home / AGENT_DATA / "sessions" / "session.jsonl", f"AGENT-SESSION-{token}"),
        (home / AGENT_STATE / "log" / "coder-agent.log", f"AGENT-LOG-{token}"),
        (home / AGENT_STATE / "history.jsonl", f"AGENT-STATE-{token}"),
    ):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'# {secret}\nmodel = "openai/{secret}"\n', encoding="utf-8")
        secrets[path] = secret
        agent_files.append(path)
    outside = base / "outside"
    (outside / "inbox").mkdir(parents=True)
    (outside / "victim.txt").write_text("original\n", encoding="utf-8")
    workspace = base / "ws"
    _make_repository(workspace, project_config=project_config)
    private = base / "private"
    (private / "tmp").mkdir(parents=True)
    cache = base / "cache"
    cache.mkdir()
    for folder, _dirs, files in os.walk(base):
        os.chmod(folder, 0o755)
        for name in files:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                os.chmod(path, 0o755 if os.stat(path).st_mode & 0o100 else 0o644)
    _own(base, owner)
    return Layout(base, home, workspace, outside, private, cache, tuple(agent_files), secrets)


def copy_layout(template: Layout, base: Path, *, owner: int | None = None) -> Layout:
    """A copy of a laid-out world at `base` (laying one out runs git three times; copying is quicker)."""
    shutil.copytree(template.base, base, symlinks=True)
    _own(base, owner)

    def moved(path: Path) -> Path:
        return base / path.relative_to(template.base)

    return Layout(
        base,
        moved(template.home),
        moved(template.workspace),
        moved(template.outside),
        moved(template.private),
        moved(template.cache),
        tuple(moved(p) for p in template.agent_files),
        {moved(p): secret for p, secret in template.secrets.items()},
    )


def _own(base: Path, owner: int | None) -> None:
    if owner is None or owner == os.getuid():
        return
    for folder, dirs, files in os.walk(base):
        os.lchown(folder, owner, owner)
        for name in (*dirs, *files):
            os.lchown(os.path.join(folder, name), owner, owner)


def _make_repository(workspace: Path, *, project_config: bool) -> None:
    (workspace / "src").mkdir(parents=True)
    (workspace / "README.md").write_text("# a project\n", encoding="utf-8")
    (workspace / "src" / "app.py").write_text("print('hello')\n", encoding="utf-8")
    if project_config:
        (workspace / ".coder-agent").mkdir()
        (workspace / ".coder-agent" / "config.toml").write_text('model = "openai/project-model"\n', encoding="utf-8")
    git(workspace, "init", "-q", "-b", "main")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "first")
    hook = workspace / ".git" / "hooks" / "pre-commit"
    hook.write_text(HOOK, encoding="utf-8")
    hook.chmod(0o755)


def git(cwd: Path, *args: str, check: bool = True) -> str:
    """Run git outside the walls, as the user would (setting a layout up, or looking at one afterwards)."""
    env = {**os.environ, **GIT_IDENTITY, "HOME": str(cwd)}
    done = subprocess.run(
        ["git", "-c", "safe.directory=*", *args], cwd=cwd, env=env, capture_output=True, text=True, check=check
    )
    return done.stdout.strip()


@dataclass(frozen=True)
class Ran:
    """How a sandboxed command ended: its exit status (negative: the signal that ended it), its output (stdout and
    stderr together), and whether it outlived its timeout (and was killed)."""

    status: int
    output: str
    timed_out: bool = False

    @property
    def failed(self) -> bool:
        return self.status != 0


class Walled:
    """Walls built by the real code around a layout, and commands run inside them."""

    def __init__(self, layout: Layout, settings: SandboxConfig, *, as_user: int | None = None, mark: str = "") -> None:
        for own in (platformdirs.user_config_path("coder-agent"), platformdirs.user_state_path("coder-agent")):
            if not own.is_relative_to(layout.home):
                raise AssertionError(f"point the XDG folders into the fake home first: the agent's {own} is not there")
        self.layout = layout
        self.as_user = as_user
        self.mark = mark
        proxy_socket = layout.private / "proxy.sock" if settings.network == "proxy" else None
        walls = build_walls(
            (layout.workspace,),
            settings,
            temp=layout.temp,
            cache=layout.cache,
            proxy_socket=proxy_socket,
            agent_paths=agent_paths(None),
            home=layout.home,
        )
        group = None  # a root agent's session cgroup (processes, memory)
        if as_user is None:
            group = make_session_group(walls.max_processes, (settings.max_memory_mb or 4096) << 20)
        self.sandbox = CommandSandbox(walls, probe.check(), layout.private, None, None, group)
        if group is not None:
            weakref.finalize(self, remove_group, group)
        self.proxy = HostProxy(proxy_socket, walls.hosts) if proxy_socket is not None else None
        self.proxy_leaks: list[str] = []
        """ResourceWarnings raised when the proxy stopped (its listener is left for the garbage collector)."""

    def run(
        self,
        command: str,
        *,
        timeout: float = 30.0,
        stdin: int = subprocess.DEVNULL,
        env: Mapping[str, str] | None = None,
        prefix: Sequence[str] = (),
        pass_fds: Sequence[int] = (),
    ) -> Ran:
        """Run `command` with bash inside the walls, in the workspace, and wait for its group to end; `prefix` goes
        before the launcher (as `setpriv` does for `as_user`), which inherits `pass_fds`."""
        return anyio.run(self._serve_and_run, command, timeout, stdin, env, prefix, pass_fds)

    async def _serve_and_run(
        self,
        command: str,
        timeout: float,
        stdin: int,
        env: Mapping[str, str] | None,
        prefix: Sequence[str] = (),
        pass_fds: Sequence[int] = (),
    ) -> Ran:
        more = {"prefix": prefix, "pass_fds": pass_fds}
        if self.proxy is None:
            return await self.run_async(command, timeout=timeout, stdin=stdin, env=env, **more)
        with contextlib.suppress(FileNotFoundError):
            self.proxy.socket_path.unlink()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ResourceWarning)
            async with anyio.create_task_group() as tasks:
                await self.proxy.serve(tasks)
                try:
                    ran = await self.run_async(command, timeout=timeout, stdin=stdin, env=env, **more)
                finally:
                    tasks.cancel_scope.cancel()
            gc.collect()
        self.proxy_leaks.extend(str(w.message) for w in caught if _known_proxy_leak(w))
        for warning in caught:
            if not _known_proxy_leak(warning):
                warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
        return ran

    async def run_async(
        self,
        command: str,
        *,
        timeout: float = 30.0,
        stdin: int = subprocess.DEVNULL,
        env: Mapping[str, str] | None = None,
        prefix: Sequence[str] = (),
        pass_fds: Sequence[int] = (),
    ) -> Ran:
        return await run_inside(
            self.sandbox,
            command,
            home=self.layout.home,
            cwd=self.layout.workspace,
            timeout=timeout,
            stdin=stdin,
            env={MARK_VARIABLE: self.mark, **(env or {})},
            as_user=self.as_user,
            prefix=prefix,
            pass_fds=pass_fds,
        )


@asynccontextmanager
async def opened_sandbox(layout: Layout, settings: SandboxConfig) -> AsyncIterator[CommandSandbox]:
    """A session's sandbox as the agent opens it (`CommandSandbox.open` in a task group, which serves its proxy)
    around the layout's workspace, closed afterwards. Point HOME and the XDG folders at the layout first."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        async with anyio.create_task_group() as tasks:
            sandbox = await CommandSandbox.open((layout.workspace,), settings, probe.check(), tasks, agent_paths(None))
            try:
                yield sandbox
            finally:
                await sandbox.aclose()
                tasks.cancel_scope.cancel()
        gc.collect()
    unexpected = [w for w in caught if not _known_proxy_leak(w)]
    for warning in unexpected:
        warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)


def _known_proxy_leak(warning: warnings.WarningMessage) -> bool:
    """The proxy's listening socket, which HostProxy never closes (test_escapes shows it)."""
    return issubclass(warning.category, ResourceWarning) and "proxy.sock" in str(warning.message)


async def run_inside(
    sandbox: CommandSandbox,
    command: str,
    *,
    home: Path,
    cwd: Path,
    timeout: float = 30.0,
    stdin: int = subprocess.DEVNULL,
    env: Mapping[str, str] | None = None,
    as_user: int | None = None,
    prefix: Sequence[str] = (),
    pass_fds: Sequence[int] = (),
) -> Ran:
    """Run `bash -c command` inside `sandbox`'s walls as the agent does (see the module docstring)."""
    argv, extra_env = await command_line(command, sandbox)
    argv = [*prefix, *argv]
    if as_user is not None:
        argv = ["setpriv", f"--reuid={as_user}", f"--regid={as_user}", "--clear-groups", "--", *argv]
    guard = sandbox.guard()  # as the bridges do: the command's mark, and the git redirects it must not leave
    full_env = {
        **child_environ(),
        **COMMAND_ENV,
        **extra_env,
        "HOME": str(home),
        **GIT_IDENTITY,
        **(env or {}),
    }
    process = await spawn_group(
        argv, cwd=cwd, env=full_env, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, pass_fds=pass_fds
    )
    chunks: list[bytes] = []
    drained = anyio.Event()

    async def collect() -> None:
        assert process.stdout is not None
        async for chunk in process.stdout:
            chunks.append(chunk)
        drained.set()

    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(collect)
            with anyio.move_on_after(timeout) as waiting:
                await process.wait()
            with anyio.move_on_after(DRAIN_GRACE):
                await drained.wait()
            tasks.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await stop_group(process, grace=KILL_GRACE)
            after = await guard.finish()
    assert process.returncode is not None
    output = b"".join(chunks).decode(errors="replace") + after
    return Ran(process.returncode, output, waiting.cancelled_caught)


Entry = tuple[str, int, int, int, int, str]


def snapshot(paths: tuple[Path, ...]) -> dict[str, Entry]:
    """Everything about these trees a command could change, per entry; symlinks are not followed."""
    seen: dict[str, Entry] = {}
    for top in paths:
        stack = [top]
        while stack:
            path = stack.pop()
            try:
                st = os.lstat(path)
            except (FileNotFoundError, NotADirectoryError):
                seen[str(path)] = ("missing", 0, 0, 0, 0, "")
                continue
            if stat.S_ISLNK(st.st_mode):
                detail = os.readlink(path)
            elif stat.S_ISREG(st.st_mode):
                detail = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                detail = ""
            seen[str(path)] = (stat.filemode(st.st_mode), st.st_uid, st.st_gid, st.st_size, st.st_mtime_ns, detail)
            if stat.S_ISDIR(st.st_mode):
                stack.extend(sorted(path.iterdir()))
    return seen


def survivors(mark: str, variable: str = MARK_VARIABLE) -> list[int]:
    """The processes whose environment carries `mark` (what a command left running)."""
    needle = f"{variable}={mark}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry))
    return found
