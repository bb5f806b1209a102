"""The git the agent runs for itself: the git state of the system prompt (`status`, `log`, every turn) and the undo
snapshots' object store (`hash-object`, `cat-file`, `mktree`, `update-ref`). Whatever the workspace holds, that git
runs no program of the repository's and sees no secret.

A repository's config, its attributes and the places `.git` files, `commondir` and includes send git to are written
by whoever wrote the workspace: a cloned repository, or a sandboxed command (`git init && git config core.fsmonitor
…`, a nested repository behind a gitlink, `config.worktree`, a bare repository's layout in a folder). So every git
the agent runs for itself goes through here, and here alone:

* **Which repository.** `find_root(cwd)`: the nearest folder at or above `cwd` with a `.git` entry, as git looks.
  Git is then pinned to it: its work tree is that folder (`GIT_WORK_TREE`: a `core.worktree` cannot move it), it
  looks no higher (`GIT_CEILING_DIRECTORIES`), and a folder laid out as a bare repository (`HEAD`, `config`,
  `objects/`, `refs/`), committed in a repository or made by a command, is refused rather than used
  (`safe.bareRepository=explicit`). Git's own ownership check (`safe.directory`) stays. A `.git` file, `commondir`
  or include may still send git to another folder's config: nothing in any config can make it run a program.
* **Config that beats the repository's.** Every key that makes git run a program is set by us at the command
  line's precedence, which beats every file git reads (the repository's, `config.worktree`, includes, the user's):
  `OVERRIDES` (fsmonitor, hooks, pager, editors, askpass, ssh, credential helpers, external diff, signature
  programs, submodule recursion, automatic gc). Keys whose names a config file chooses (`filter.<driver>.clean`,
  `smudge`, `process`; `diff.<driver>.textconv`, `command`; `merge.<driver>.driver`; `credential.<url>.helper`;
  `protocol.<name>.allow`) are blanked for the commands that read the work tree (`status` runs clean filters on
  changed files): `blanks()` reads them first from the config that git would read (`git config --list`, which runs
  nothing). They travel as `GIT_CONFIG_COUNT`/`KEY_n`/`VALUE_n` (no quoting: a subsection name may hold `=`), which
  every git that git starts inherits.
* **Environment.** `process.child_env()` (no secrets) without the user's `GIT_*` variables (`GIT_DIR`,
  `GIT_CONFIG_*`, `GIT_EXTERNAL_DIFF`, `GIT_SSH_COMMAND`, …), plus `GIT_ALLOW_PROTOCOL=none` (no transport at all,
  so no lazy fetch of a partial clone, no remote helper, no ssh: this beats any `protocol.*.allow`),
  `GIT_NO_REPLACE_OBJECTS` (a `refs/replace/` ref cannot swap a snapshot), `GIT_OPTIONAL_LOCKS=0`,
  `GIT_TERMINAL_PROMPT=0`, `LC_ALL=C`; `--no-pager`. `git` itself is looked up on the absolute entries of PATH
  outside the repository (a `git` planted in a project's `.venv/bin` is never run).
* **Where.** `run` (async) runs inside the session's walls when given its sandbox (nothing kept out is readable, no
  network, writes only to the session's folders): through the session's `WalledReader`, a small process started
  inside them once (`own_git_reader.py`) that runs each git as its child, so the walls' cost (~10 ms of CPU) is paid
  once per session, not once per turn; else as a short-lived child of the agent's (`process.spawn_helper`: git
  starts nothing itself here). `run_sync` (the blob store's, from worker threads) runs outside the walls. The
  per-turn reads (`agent/workspace.py`) put only the `status` inside, and only where the session's commands can
  write the repository: it alone reads the work tree, where a driver added to the config between `blanks()` and
  the status (by a command running meanwhile) could run; a repository above the session's folders is out of the
  commands' reach (and of their reads). The config listing and the log read config files and the object database,
  and with the overrides run nothing. The blob store's commands read neither the index nor the work tree either (no
  fsmonitor, attributes or filters), run no hook and reach no transport, and the object database may lie outside
  the walls' writable folders (a session in a subfolder of a repository).

The user's own config files (global, system) are read as git reads them: they hold `safe.directory`, excludes and
the settings that make `status` say what the user's own `git status` says; the overrides beat them too.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
import weakref
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from coder_agent import process

if TYPE_CHECKING:
    from coder_agent.sandbox.command import CommandSandbox

__all__ = ["OVERRIDES", "GitFailed", "Ran", "blanks", "environment", "find_root", "run", "run_sync"]

log = logging.getLogger(__name__)

NO_PROGRAM = "/dev/null"
"""What a program key is set to where an empty value means "the default program": a path nothing can execute."""
OVERRIDES: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", NO_PROGRAM),
    ("core.pager", "cat"),
    ("core.editor", NO_PROGRAM),
    ("sequence.editor", NO_PROGRAM),
    ("core.askPass", NO_PROGRAM),
    ("core.sshCommand", NO_PROGRAM),
    ("core.gitProxy", NO_PROGRAM),
    ("core.alternateRefsCommand", NO_PROGRAM),
    ("credential.helper", ""),  # an empty value empties the list of helpers
    ("diff.external", NO_PROGRAM),
    ("gpg.program", NO_PROGRAM),
    ("gpg.openpgp.program", NO_PROGRAM),
    ("gpg.x509.program", NO_PROGRAM),
    ("gpg.ssh.program", NO_PROGRAM),
    ("gpg.ssh.defaultKeyCommand", NO_PROGRAM),
    ("log.showSignature", "false"),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("submodule.recurse", "false"),
    ("status.submoduleSummary", "false"),
    ("diff.ignoreSubmodules", "all"),
    ("fetch.recurseSubmodules", "false"),
    ("safe.bareRepository", "explicit"),
    ("protocol.allow", "never"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
)
"""Config of ours that beats the repository's, for every git the agent runs (see the module docstring)."""
NAMED_PROGRAMS: dict[tuple[str, str], str] = {
    ("filter", "clean"): "",
    ("filter", "smudge"): "",
    ("filter", "process"): "",
    ("filter", "required"): "false",
    ("diff", "textconv"): "",
    ("diff", "command"): "",
    ("merge", "driver"): "",
    ("credential", "helper"): "",
    ("protocol", "allow"): "never",
}
"""(section, key) of keys under a name a config file chooses, and what `blanks()` sets each found to."""
ENVIRONMENT = {
    "GIT_ALLOW_PROTOCOL": "none",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_TERMINAL_PROMPT": "0",
    "LC_ALL": "C",
}
MAX_OUTPUT = 16 << 20
"""Output of one git kept at most (a status of a huge tree); the rest is dropped."""
READER = Path(__file__).with_name("own_git_reader.py")
READ_TIMEOUT = 60.0
"""How long the reader inside the walls lets one git run (the callers' own bounds are shorter)."""


class GitFailed(Exception):
    """Git could not run, or failed; the message says which command and why."""


@dataclass(frozen=True)
class Ran:
    """A git that ran: its exit status (None: it was killed) and its output."""

    code: int | None
    out: bytes

    @property
    def ok(self) -> bool:
        return self.code == 0


def find_root(cwd: Path) -> Path | None:
    """The nearest folder at or above `cwd` with a `.git` entry (as git finds a repository); None outside any.

    Looked up on disk, so a folder outside every repository costs no process."""
    for folder in (cwd, *cwd.parents):
        if os.path.lexists(folder / ".git"):
            return folder
    return None


def program(root: Path) -> str:
    """The `git` to run: the first on PATH's absolute entries that is not inside `root` (`process.find_program`);
    "git" when there is none (starting it then fails, as git being missing does)."""
    return process.find_program("git", outside=(root,)) or "git"


def environment(root: Path, blanked: Sequence[tuple[str, str]] = ()) -> dict[str, str]:
    """The environment of a git the agent runs in the repository at `root`: the children's, without the user's GIT_
    variables, with ours and every override (`OVERRIDES`, then `blanked`) as command-line config."""
    env = {name: value for name, value in process.child_env().items() if not name.startswith("GIT_")}
    env.update(ENVIRONMENT)
    env["GIT_WORK_TREE"] = str(root)
    if root.parent != root:
        env["GIT_CEILING_DIRECTORIES"] = str(root.parent)
    pairs = [*OVERRIDES, *blanked]
    env["GIT_CONFIG_COUNT"] = str(len(pairs))
    for index, (key, value) in enumerate(pairs):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env


def blanked_keys(listing: bytes) -> list[tuple[str, str]]:
    """From `git config -z --list` output, an override for every key under a name of the config's choosing that
    names a program (`NAMED_PROGRAMS`)."""
    found: dict[str, str] = {}
    for entry in listing.split(b"\0"):
        key = entry.split(b"\n", 1)[0].decode("utf-8", errors="surrogateescape")
        section, dot, rest = key.partition(".")
        subsection, _, name = rest.rpartition(".")
        if not dot or not subsection:
            continue
        value = NAMED_PROGRAMS.get((section.lower(), name.lower()))
        if value is not None:
            found[key] = value
    return list(found.items())


async def blanks(root: Path, cwd: Path, sandbox: CommandSandbox | None) -> list[tuple[str, str]]:
    """The overrides that blank the programs named under names the config chooses (filter drivers, …), read from
    the config git reads in `cwd`. GitFailed when git cannot read it (a broken config, a refused repository)."""
    listed = await run(["config", "-z", "--list"], root=root, cwd=cwd, sandbox=sandbox)
    if not listed.ok:
        raise GitFailed(f"git config --list exited with {listed.code}")
    return blanked_keys(listed.out)


async def run(
    args: Sequence[str],
    *,
    root: Path,
    cwd: Path,
    sandbox: CommandSandbox | None,
    blanked: Sequence[tuple[str, str]] = (),
) -> Ran:
    """`git args` in `cwd` (inside the repository at `root`): inside the session's walls when `sandbox` is given
    (through its `WalledReader`), else a local process group; its stdout (stderr is dropped). Cancelling it kills
    it. GitFailed if it could not start."""
    argv = [program(root), "--no-pager", *args]
    env = environment(root, blanked)
    if sandbox is not None:
        return await reader_for(sandbox).run(argv, cwd, env)
    try:  # git starts nothing of its own with our overrides: no group needed (the fast path)
        git = await process.spawn_helper(argv, cwd=cwd, env=env, stderr=subprocess.DEVNULL)
    except OSError as exc:
        raise GitFailed(f"git {args[0]} could not start: {exc.strerror or exc}") from None
    out = bytearray()
    try:
        assert git.stdout is not None
        async for chunk in git.stdout:
            out += chunk[: MAX_OUTPUT - len(out)]
        code = await git.wait()
    finally:
        with anyio.CancelScope(shield=True):
            if git.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    git.kill()
            await git.aclose()
    return Ran(None if code < 0 else code, bytes(out))


def reader_for(sandbox: CommandSandbox) -> WalledReader:
    """The session's `WalledReader` (made on first use, closed with the sandbox)."""
    found = _readers.get(sandbox)
    if found is None:
        found = _readers[sandbox] = WalledReader(sandbox)
        sandbox.on_close(found.aclose)
    return found


class WalledReader:
    """A process inside a session's walls (`own_git_reader.py`) that runs the agent's own git there, one request at
    a time: the walls are put up once per session rather than once per git (~10 ms of CPU each). It is started again
    when the walls' spec changes (a `.git` a command made is pinned and protected from then on, as it would be for a
    command), when it died, or after a request was cancelled or failed midway."""

    def __init__(self, sandbox: CommandSandbox) -> None:
        self.sandbox = sandbox
        self._lock = anyio.Lock()
        self._process: process.PipedLeader | None = None
        self._requests: int | None = None
        self._chunks: AsyncIterator[bytes] | None = None
        self._buffer = bytearray()
        self._spec: object = None

    async def run(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> Ran:
        request = {"argv": list(argv), "env": dict(env), "cwd": str(cwd), "timeout": READ_TIMEOUT}
        async with self._lock:
            try:
                await self._ready()
                await self._send(json.dumps(request).encode() + b"\n")
                header = json.loads(await self._take_line())
                out = await self._take(int(header["size"]))
            except BaseException as exc:
                with anyio.CancelScope(shield=True):
                    await self._stop()
                if isinstance(exc, OSError | ValueError | KeyError):
                    raise GitFailed(f"git {argv[2]} could not run inside the walls: {exc}") from None
                raise
        code = int(header["code"])
        return Ran(None if code < 0 else code, out[:MAX_OUTPUT])

    async def aclose(self) -> None:
        async with self._lock:
            await self._stop()

    async def _ready(self) -> None:
        spec = self.sandbox.walls.spec()
        if self._process is not None and self._process.returncode is None and spec == self._spec:
            return
        await self._stop()
        read_fd, write_fd = os.pipe()
        try:
            argv = [sys.executable, "-I", "-S", str(READER)]
            started = await self.sandbox.start(
                argv, self.sandbox.walls.roots[0], process.child_env(), stdin=read_fd, errors=False
            )
        except BaseException:
            os.close(write_fd)
            raise
        finally:
            os.close(read_fd)
        assert started.stdout is not None
        self._process, self._requests, self._spec = started, write_fd, spec
        self._chunks = aiter(started.stdout)
        self._buffer.clear()

    async def _send(self, data: bytes) -> None:
        assert self._requests is not None
        view = memoryview(data)
        while view:
            await anyio.wait_writable(self._requests)
            view = view[os.write(self._requests, view) :]

    async def _more(self) -> None:
        assert self._chunks is not None
        try:
            self._buffer += await anext(self._chunks)
        except StopAsyncIteration:
            raise OSError("the reader inside the walls ended") from None

    async def _take_line(self) -> bytes:
        while (end := self._buffer.find(b"\n")) < 0:
            await self._more()
        line = bytes(self._buffer[:end])
        del self._buffer[: end + 1]
        return line

    async def _take(self, size: int) -> bytes:
        while len(self._buffer) < size:
            await self._more()
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data

    async def _stop(self) -> None:
        started, self._process = self._process, None
        if self._requests is not None:
            os.close(self._requests)
            self._requests = None
        if started is not None:
            await process.stop_group(started, grace=0.5)  # it ends at end of input; else it is ended


_readers: weakref.WeakKeyDictionary[CommandSandbox, WalledReader] = weakref.WeakKeyDictionary()


def run_sync(
    args: Sequence[str],
    *,
    root: Path,
    cwd: Path,
    input: bytes | None = None,
    timeout: float,
    blanked: Sequence[tuple[str, str]] = (),
    env: Mapping[str, str] | None = None,
    group: bool = False,
) -> bytes:
    """`git args` in `cwd` (inside the repository at `root`) from a blocking caller, outside any walls (see the
    module docstring): its stdout. `blanked` adds overrides after `OVERRIDES`, `env` variables on top of the
    environment; `group` runs it in a process group of its own (a git that starts gits). GitFailed naming the
    command and git's own words when it fails."""
    argv = [program(root), "--no-pager", *args]
    full = {**environment(root, blanked), **(env or {})}
    try:
        done = process.run_sync(argv, cwd=cwd, env=full, input=input, timeout=timeout, group=group)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitFailed(f"git {args[0]} failed in {cwd}: {exc}") from None
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
        raise GitFailed(f"git {args[0]} failed in {cwd}: {said[-1] if said else f'exit status {done.returncode}'}")
    return done.stdout
