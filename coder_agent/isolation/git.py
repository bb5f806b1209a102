"""The git that isolation runs for itself (snapshots, worktrees, the changes of a child), through one function, `git`.

A repository's config, its attributes and its hooks are written by whoever wrote the workspace: a cloned repository,
or a sandboxed command. None of it may make this git run a program. So every call here gets, at the command line's
precedence (which beats every config file git reads):

- `OVERRIDES`: no fsmonitor, no hooks (`post-checkout` runs on `worktree add`), no pager, editor, askpass, ssh,
  credential helper, external diff or signing program, no submodule recursion, no automatic gc, no bare repository
  found by discovery (`safe.bareRepository=explicit`), no transport at all;
- the filter, diff and merge drivers the config names (`filter.<name>.smudge`, …) blanked, read first with `git
  config --list` (which runs nothing), plus Git LFS's by name and `GIT_LFS_SKIP_SMUDGE`: a checkout or an `add`
  converts nothing through a program;
- the children's environment (`secrets.child_environ`: no keys) without the user's own `GIT_*` variables, a work tree
  pinned to the folder given (`GIT_WORK_TREE`, `GIT_CEILING_DIRECTORIES`), and `git` looked up outside that folder.

It runs outside the walls: it writes the repository's object database and worktree list, and the agent's private
folder, where no sandboxed command may. When the agent's own git runner (`own_git`) is on main, `git` becomes a call
of it; nothing else here needs to change.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from coder_agent import process, secrets

NO_PROGRAM = "/dev/null"
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
    ("credential.helper", ""),
    ("diff.external", NO_PROGRAM),
    ("gpg.program", NO_PROGRAM),
    ("gpg.openpgp.program", NO_PROGRAM),
    ("gpg.x509.program", NO_PROGRAM),
    ("gpg.ssh.program", NO_PROGRAM),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("submodule.recurse", "false"),
    ("diff.ignoreSubmodules", "all"),
    ("safe.bareRepository", "explicit"),
    ("protocol.allow", "never"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("core.splitIndex", "false"),
    ("filter.lfs.smudge", ""),
    ("filter.lfs.clean", ""),
    ("filter.lfs.process", ""),
    ("filter.lfs.required", "false"),
)
NAMED_PROGRAMS: dict[tuple[str, str], str] = {
    ("filter", "clean"): "",
    ("filter", "smudge"): "",
    ("filter", "process"): "",
    ("filter", "required"): "false",
    ("diff", "textconv"): "",
    ("diff", "command"): "",
    ("merge", "driver"): "",
}
"""(section, key) of the keys under a name the config chooses, and what each one found is set to."""
ENVIRONMENT = {
    "GIT_ALLOW_PROTOCOL": "none",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_LFS_SKIP_SMUDGE": "1",
    "LC_ALL": "C",
}
IDENTITY = {
    "GIT_AUTHOR_NAME": "coder-agent",
    "GIT_AUTHOR_EMAIL": "coder-agent@localhost",
    "GIT_COMMITTER_NAME": "coder-agent",
    "GIT_COMMITTER_EMAIL": "coder-agent@localhost",
}
"""Who the snapshot commits of a child's branch are by (the user may have set no identity)."""
TIMEOUT = 600.0


class GitFailed(Exception):
    """Git could not run, or failed; the message says which command and git's last words."""


def git(
    args: Sequence[str],
    *,
    root: Path,
    cwd: Path | None = None,
    input: bytes | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = TIMEOUT,
) -> bytes:
    """`git args` in the repository whose work tree is `root` (run in `cwd`, by default `root`), from a worker
    thread: its stdout. `env` adds to the environment (`GIT_INDEX_FILE`). The drivers the config names are blanked
    for every command: even `write-tree` may run a clean filter (to settle an index entry git cannot trust by its
    time). GitFailed on failure."""
    blanked = blanks(root)
    return _run(args, root=root, cwd=cwd or root, input=input, env=env, blanked=blanked, timeout=timeout)


def blanks(root: Path) -> list[tuple[str, str]]:
    """An override for every key under a name of the config's choosing that names a program (`NAMED_PROGRAMS`)."""
    listing = _run(["config", "-z", "--list"], root=root, cwd=root, input=None, env=None, blanked=[], timeout=60)
    found: dict[str, str] = {}
    for entry in listing.split(b"\0"):
        key = entry.split(b"\n", 1)[0].decode("utf-8", errors="surrogateescape")
        section, dot, rest = key.partition(".")
        subsection, _, name = rest.rpartition(".")
        value = NAMED_PROGRAMS.get((section.lower(), name.lower()))
        if dot and subsection and value is not None:
            found[key] = value
    return list(found.items())


def environment(root: Path, blanked: Sequence[tuple[str, str]] = ()) -> dict[str, str]:
    """The environment of a git run in the repository at `root` (see the module docstring)."""
    env = {name: value for name, value in secrets.child_environ().items() if not name.startswith("GIT_")}
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


def program(root: Path) -> str | None:
    """The `git` to run: the first on PATH's absolute entries outside `root` (a `git` planted in the project's
    `.venv/bin` is never run); None when there is none."""
    real_root = os.path.realpath(root).rstrip(os.sep) + os.sep
    for entry in os.environ.get("PATH", os.defpath).split(os.pathsep):
        found = shutil.which("git", path=entry) if os.path.isabs(entry) else None
        if found is not None and not os.path.realpath(found).startswith(real_root):
            return found
    return None


def _run(
    args: Sequence[str],
    *,
    root: Path,
    cwd: Path,
    input: bytes | None,
    env: Mapping[str, str] | None,
    blanked: Sequence[tuple[str, str]],
    timeout: float,
) -> bytes:
    found = program(root)
    if found is None:
        raise GitFailed("git is not installed (no `git` on PATH)")
    full = {**environment(root, blanked), **(env or {})}
    argv = [found, "--no-pager", *args]
    try:
        with subprocess.Popen(
            argv,
            cwd=cwd,
            env=process.owner_marked(full),
            stdin=subprocess.DEVNULL if input is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        ) as git_process:
            try:
                out, err = git_process.communicate(input, timeout=timeout)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.killpg(git_process.pid, signal.SIGKILL)
                raise
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitFailed(f"git {args[0]} failed in {cwd}: {exc}") from None
    if git_process.returncode != 0:
        said = err.decode("utf-8", errors="replace").strip().splitlines()
        last = said[-1] if said else f"exit status {git_process.returncode}"
        raise GitFailed(f"git {args[0]} failed in {cwd}: {last}")
    return out
