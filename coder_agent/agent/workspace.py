"""What the system prompt says about where the agent works: cwd, OS, date, git state, AGENTS.md files.

Git is read with gitpython in a worker thread, bounded in time, and only ever read: no index, branch or
stash is touched.
"""

from __future__ import annotations

import datetime
import logging
import platform
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

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

    def template_values(self) -> dict[str, Any]:
        return {
            "cwd": str(self.cwd),
            "additional_directories": [str(p) for p in self.additional_directories],
            "os_name": self.os_name,
            "date": self.date,
            "git": self.git,
            "agents_files": self.agents_files,
        }


async def describe(cwd: Path, additional_directories: list[Path]) -> Environment:
    """Gather the environment for the system prompt; git problems only leave git out."""
    git_root: Path | None = None
    git: GitInfo | None = None
    with anyio.move_on_after(GIT_TIMEOUT):
        git_root, git = await anyio.to_thread.run_sync(_read_git, cwd, abandon_on_cancel=True)
    return Environment(
        cwd=cwd,
        additional_directories=additional_directories,
        os_name=f"{platform.system()} {platform.release()}".strip(),
        date=datetime.date.today().isoformat(),
        git=git,
        agents_files=_agents_files(cwd, git_root),
    )


def _read_git(cwd: Path) -> tuple[Path | None, GitInfo | None]:
    try:
        import git

        repo = git.Repo(cwd, search_parent_directories=True)
    except Exception:
        return None, None
    try:
        root = Path(repo.working_tree_dir or cwd)
        try:
            branch = repo.active_branch.name
        except TypeError:
            branch = f"detached at {repo.head.commit.hexsha[:10]}"
        except ValueError:
            branch = "(no commits yet)"
        porcelain = repo.git.status("--porcelain=v1", "--untracked-files=normal")
        commits: list[str] = []
        if repo.head.is_valid():
            commits = [f"{c.hexsha[:8]} {c.summary!s}" for c in repo.iter_commits(max_count=RECENT_COMMITS)]
        return root, GitInfo(branch=branch, status=_summarize_status(porcelain), recent_commits=commits)
    except Exception as exc:
        log.info("could not read git state: %s", exc)
        return None, None
    finally:
        repo.close()


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
