"""The git that isolation runs for itself (snapshots, worktrees, the changes of a child), through one function, `git`,
on the agent's own git runner (`own_git`).

A repository's config, its attributes and its hooks are written by whoever wrote the workspace: a cloned repository,
or a sandboxed command. None of it may make this git run a program. So every call gets `own_git`'s environment (no
keys, none of the user's `GIT_*` variables, a work tree pinned to the folder given, no transport) and its overrides at
the command line's precedence (no hook: `post-checkout` runs on `worktree add`; no fsmonitor, pager, editor, signing
or external diff), and on top of them:

- the filter, diff and merge drivers the config names (`filter.<name>.smudge`, …) blanked for every command, read
  first with `git config --list` (which runs nothing): a checkout, an `add`, even a `write-tree` (which may run a
  clean filter to settle an index entry git cannot trust by its time) converts nothing through a program;
- Git LFS's drivers blanked by name and `GIT_LFS_SKIP_SMUDGE` (a driver set up later, or in a file git reads only
  for some commands, still runs nothing), and no split index (the copy of an index isolation takes is whole).

It runs outside the walls: it writes the repository's object database and worktree list, and the agent's private
folder, where no sandboxed command may.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from coder_agent import own_git
from coder_agent.own_git import GitFailed

__all__ = ["IDENTITY", "GitFailed", "git", "installed"]

EXTRA_OVERRIDES: tuple[tuple[str, str], ...] = (
    ("core.splitIndex", "false"),
    ("filter.lfs.smudge", ""),
    ("filter.lfs.clean", ""),
    ("filter.lfs.process", ""),
    ("filter.lfs.required", "false"),
)
EXTRA_ENVIRONMENT = {"GIT_LFS_SKIP_SMUDGE": "1"}
IDENTITY = {
    "GIT_AUTHOR_NAME": "coder-agent",
    "GIT_AUTHOR_EMAIL": "coder-agent@localhost",
    "GIT_COMMITTER_NAME": "coder-agent",
    "GIT_COMMITTER_EMAIL": "coder-agent@localhost",
}
"""Who the snapshot commits of a child's branch are by (the user may have set no identity)."""
TIMEOUT = 600.0


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
    thread: its stdout. `env` adds to the environment (`GIT_INDEX_FILE`). GitFailed on failure."""
    listed = _run(["config", "-z", "--list"], root, root, None, {}, [], 60.0)
    blanked = own_git.blanked_keys(listed)
    return _run(args, root, cwd or root, input, env or {}, blanked, timeout)


def installed(root: Path) -> bool:
    """Whether there is a `git` to run for the repository at `root` (on PATH, outside it)."""
    return os.path.isabs(own_git.program(root))


def _run(
    args: Sequence[str],
    root: Path,
    cwd: Path,
    input: bytes | None,
    env: Mapping[str, str],
    blanked: Sequence[tuple[str, str]],
    timeout: float,
) -> bytes:
    overrides = [*EXTRA_OVERRIDES, *blanked]
    extra = {**EXTRA_ENVIRONMENT, **env}
    # in a group of its own: a worktree's checkout starts gits
    return own_git.run_sync(
        args, root=root, cwd=cwd, input=input, timeout=timeout, blanked=overrides, env=extra, group=True
    )
