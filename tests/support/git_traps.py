"""Git as a user runs it, for tests that plant something in a repository and show that a plain `git` falls for it
before showing that the agent's own git does not (`tests/unit/test_own_git.py`, `tests/protocol/test_own_processes.py`).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

IDENTITY = ["-c", "user.name=T", "-c", "user.email=t@example.com", "-c", "commit.gpgSign=false"]


def plain_git(*args: str, cwd: Path, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """git as the user runs it in a terminal: none of the agent's overrides, none of the test's GIT_ variables, the
    test's environment (secrets included) otherwise."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(
        ["git", *IDENTITY, *args], cwd=cwd, env=env, input=input, capture_output=True, text=True, check=False
    )


def commit_all(repo: Path) -> None:
    plain_git("add", "-A", cwd=repo)
    plain_git("commit", "-qm", "work", cwd=repo)


def make_repo(path: Path, file: str = "README.md") -> Path:
    """A repository on `main` with one commit of one file."""
    path.mkdir(parents=True, exist_ok=True)
    plain_git("init", "-q", "-b", "main", cwd=path)
    (path / file).write_text("a\n")
    commit_all(path)
    return path


def lay_out_bare(folder: Path, program: str | Path) -> None:
    """What makes `folder` a bare repository to git's discovery (HEAD, config, objects/, refs/, each with a file so
    it can be committed), its config sending the work tree to the parent folder and naming `program` for fsmonitor."""
    for name in ("objects", "refs"):
        (folder / name).mkdir(parents=True)
        (folder / name / ".keep").write_text("")
    (folder / "HEAD").write_text("ref: refs/heads/main\n")
    (folder / "config").write_text(
        f"[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n\tfsmonitor = {program}\n"
    )
