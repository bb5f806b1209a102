"""What the system prompt says about where the agent works: cwd, OS, date, git state, AGENTS.md files, skills.

Git is read by running `git` (status with the branch, and the last commits: two processes at once,
bounded in time), and only ever read: no index, branch or stash is touched (`GIT_OPTIONAL_LOCKS=0` keeps
`git status` from refreshing the index). This runs before every turn, so it is kept to one process's
latency, and to none outside a repository (found on disk, as git finds it: the nearest `.git` above the
folder). A repository git refuses to read, or no `git` at all, only leaves git out.
"""

from __future__ import annotations

import datetime
import logging
import os
import platform
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from coder_agent.extensions import Skill, load_catalog, skills_text

log = logging.getLogger(__name__)

AGENTS_FILE = "AGENTS.md"
MAX_AGENTS_CHARS = 20_000
GIT_TIMEOUT = 5.0
RECENT_COMMITS = 5


@dataclass(frozen=True)
class GitInfo:
    branch: str
    status: str
    recent_commits: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class AgentsFile:
    path: str
    text: str


@dataclass(frozen=True)
class Environment:
    cwd: Path
    additional_directories: list[Path]
    os_name: str
    date: str
    git: GitInfo | None
    agents_files: list[AgentsFile]
    skills: list[Skill] = field(default_factory=list)
    """The skills of the user and the project (`extensions`): names and descriptions only."""

    def template_values(self) -> dict[str, Any]:
        return {
            "cwd": str(self.cwd),
            "additional_directories": [str(p) for p in self.additional_directories],
            "os_name": self.os_name,
            "date": self.date,
            "git": self.git,
            "agents_files": self.agents_files,
            "skills": self.skills,
            "skills_text": skills_text(self.skills),
        }


async def describe(cwd: Path, additional_directories: list[Path]) -> Environment:
    """Gather the environment for the system prompt; git problems only leave git out."""
    git_root: Path | None = None
    git: GitInfo | None = None
    with anyio.move_on_after(GIT_TIMEOUT):
        git_root, git = await _read_git(cwd)
    catalog = await anyio.to_thread.run_sync(load_catalog, cwd)
    return Environment(
        cwd=cwd,
        additional_directories=additional_directories,
        os_name=f"{platform.system()} {platform.release()}".strip(),
        date=datetime.date.today().isoformat(),
        git=git,
        agents_files=_agents_files(cwd, git_root),
        skills=catalog.skills,
    )


async def _read_git(cwd: Path) -> tuple[Path | None, GitInfo | None]:
    """The repository root and its state, or (None, None) when `cwd` is not in a repository."""
    root = _repository_root(cwd)
    if root is None:
        return None, None
    out: dict[str, str | None] = {}

    async def run(name: str, args: list[str]) -> None:
        out[name] = await _git(cwd, args)

    async with anyio.create_task_group() as group:
        group.start_soon(run, "status", ["status", "--porcelain=v1", "--branch", "--untracked-files=normal"])
        group.start_soon(run, "log", ["log", f"-{RECENT_COMMITS}", "--format=%H%x00%s"])
    status = out.get("status")
    if status is None:
        return None, None
    commits = [line.split("\0", 1) for line in (out.get("log") or "").splitlines() if "\0" in line]
    first, _, rest = status.partition("\n")
    branch = _branch(first, commits[0][0] if commits else "")
    recent = [f"{sha[:8]} {summary}" for sha, summary in commits]
    return root, GitInfo(branch=branch, status=_summarize_status(rest), recent_commits=recent)


def _repository_root(cwd: Path) -> Path | None:
    """The nearest folder at or above `cwd` with a `.git` entry (as git finds it); None outside repositories.

    Looked up on disk, so a folder outside any repository costs no process at all."""
    for folder in (cwd, *cwd.parents):
        if (folder / ".git").exists():
            return folder
    return None


async def _git(cwd: Path, args: list[str]) -> str | None:
    """`git args` in `cwd`: its output, or None when it fails (not a repository, no commits, no git)."""
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
    try:
        done = await anyio.run_process(["git", "-C", str(cwd), *args], check=False, env=env)
    except OSError as exc:
        log.info("could not run git: %s", exc)
        return None
    if done.returncode != 0:
        return None
    return done.stdout.decode("utf-8", errors="replace")


def _branch(header: str, head_sha: str) -> str:
    """The branch from `git status --branch`'s first line (`## main...origin/main [ahead 1]`)."""
    name = header.removeprefix("## ").strip()
    if name.startswith(("No commits yet on ", "Initial commit on ")):
        return "(no commits yet)"
    if name.startswith("HEAD (no branch)"):
        return f"detached at {head_sha[:10]}"
    return name.split("...", 1)[0].split(" ", 1)[0]


def _summarize_status(porcelain: str) -> str:
    staged = modified = untracked = 0
    for line in porcelain.splitlines():
        if line.startswith("??"):
            untracked += 1
            continue
        if line[:1] not in (" ", "?"):
            staged += 1
        if line[1:2] not in (" ", ""):
            modified += 1
    parts = [f"{n} {label}" for n, label in ((staged, "staged"), (modified, "modified"), (untracked, "untracked")) if n]
    return ", ".join(parts) if parts else "clean"


def _agents_files(cwd: Path, git_root: Path | None) -> list[AgentsFile]:
    """AGENTS.md files from the repository root (or cwd) down to cwd, outermost first."""
    top = git_root if git_root is not None and cwd.is_relative_to(git_root) else cwd
    chain = [cwd, *cwd.parents]
    folders = list(reversed(chain[: chain.index(top) + 1])) if top in chain else [cwd]
    found = []
    for folder in folders:
        path = folder / AGENTS_FILE
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if len(text) > MAX_AGENTS_CHARS:
            text = text[:MAX_AGENTS_CHARS] + "\n[… truncated …]"
        found.append(AgentsFile(path=str(path), text=text.strip()))
    return found
