"""What the system prompt says about where the agent works: cwd, OS, date, git state, AGENTS.md files, skills.

Git is read by running `git` through `own_git` (with config that beats the repository's, without secrets): the
last commits while the config's program names are read, then the status with the branch inside the session's walls,
all bounded in time; and only ever read: no index, branch or stash is touched (`GIT_OPTIONAL_LOCKS=0`
keeps `git status` from refreshing the index). This runs before every turn, so it is kept to two processes'
latency, and to none outside a repository (found on disk, as git finds it: the nearest `.git` above the
folder). A repository git refuses to read, or no `git` at all, only leaves git out.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import logging
import os
import platform
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from coder_agent import nofollow, own_git
from coder_agent.extensions import Skill, load_catalog, skills_text

if TYPE_CHECKING:
    from coder_agent.sandbox.command import CommandSandbox

log = logging.getLogger(__name__)

AGENTS_FILE = "AGENTS.md"
MAX_AGENTS_CHARS = 20_000
MAX_AGENTS_BYTES = 1_000_000
"""An AGENTS.md bigger than this is not read at all (the first `MAX_AGENTS_CHARS` of a smaller one are kept)."""
GIT_TIMEOUT = 5.0
RECENT_COMMITS = 5
STATUS = ["status", "--porcelain=v1", "--branch", "--untracked-files=normal", "--ignore-submodules=all"]


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


async def describe(
    cwd: Path,
    additional_directories: list[Path],
    *,
    sandbox: CommandSandbox | None = None,
    refuse: nofollow.Refuse | None = None,
) -> Environment:
    """Gather the environment for the system prompt; git problems only leave git out. `sandbox`: the session's,
    inside whose walls git runs; `refuse`: why a file of the workspace must not be read (`_agents_files`)."""
    git_root: Path | None = None
    git: GitInfo | None = None
    with anyio.move_on_after(GIT_TIMEOUT):
        git_root, git = await _read_git(cwd, sandbox)
    catalog = await anyio.to_thread.run_sync(functools.partial(load_catalog, cwd, refuse=refuse))
    roots = (cwd, *additional_directories)
    agents = await anyio.to_thread.run_sync(_agents_files, cwd, git_root, roots, refuse)
    return Environment(
        cwd=cwd,
        additional_directories=additional_directories,
        os_name=f"{platform.system()} {platform.release()}".strip(),
        date=datetime.date.today().isoformat(),
        git=git,
        agents_files=agents,
        skills=catalog.skills,
    )


async def _read_git(cwd: Path, sandbox: CommandSandbox | None) -> tuple[Path | None, GitInfo | None]:
    """The repository root and its state, or (None, None) when `cwd` is not in a repository (or git will not read
    it). The log and the config's program names (`own_git.blanks`) are read at once, outside the walls: they read
    only config files and the object database, and with `own_git`'s overrides run nothing. The status, which reads
    the work tree (where a clean filter a config names would run), comes next with those names blanked, inside the
    session's walls when its commands can write the repository: one running meanwhile could add a name between the
    two reads."""
    root = own_git.find_root(cwd)
    if root is None:
        return None, None
    out: dict[str, own_git.Ran] = {}

    async def read_log() -> None:
        with contextlib.suppress(own_git.GitFailed):
            out["log"] = await own_git.run(
                ["log", f"-{RECENT_COMMITS}", "--format=%H%x00%s"], root=root, cwd=cwd, sandbox=None
            )

    status: own_git.Ran | None = None
    async with anyio.create_task_group() as group:
        group.start_soon(read_log)
        try:
            blanked = await own_git.blanks(root, cwd, None)
            walled = sandbox if sandbox is not None and _commands_write(root, sandbox) else None
            status = await own_git.run(STATUS, root=root, cwd=cwd, sandbox=walled, blanked=blanked)
        except own_git.GitFailed as exc:
            log.info("git state left out: %s", exc)
    if status is None or not status.ok:
        return None, None
    found = out.get("log")
    text = found.out.decode("utf-8", errors="replace") if found is not None and found.ok else ""
    commits = [line.split("\0", 1) for line in text.splitlines() if "\0" in line]
    first, _, rest = status.out.decode("utf-8", errors="replace").partition("\n")
    branch = _branch(first, commits[0][0] if commits else "")
    recent = [f"{sha[:8]} {summary}" for sha, summary in commits]
    return root, GitInfo(branch=branch, status=_summarize_status(rest), recent_commits=recent)


def _commands_write(root: Path, sandbox: CommandSandbox) -> bool:
    """Whether the session's commands may write the repository at `root` (it lies in the walls' writable places),
    so that one running meanwhile could add a program to its config. A repository above the session's folders is
    out of their reach (and of their reads: the walls keep the home folder out), so its status runs outside."""
    real = Path(os.path.realpath(root))
    return any(real.is_relative_to(folder) for folder in sandbox.walls.writable)


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


def _agents_files(
    cwd: Path, git_root: Path | None, roots: tuple[Path, ...], refuse: nofollow.Refuse | None
) -> list[AgentsFile]:
    """AGENTS.md files from the repository root (or cwd) down to cwd, outermost first, read as a file tool reads
    (`nofollow.read_confined`): one that leads out of the session's folders and the repository, or that `refuse`
    names, is left out (and logged once), never followed."""
    top = git_root if git_root is not None and cwd.is_relative_to(git_root) else cwd
    chain = [cwd, *cwd.parents]
    folders = list(reversed(chain[: chain.index(top) + 1])) if top in chain else [cwd]
    within = (*roots, top)
    found = []
    for folder in folders:
        path = folder / AGENTS_FILE
        try:
            data = nofollow.read_confined(path, within, limit=MAX_AGENTS_BYTES, refuse=refuse)
        except nofollow.Refused as exc:
            _refused_once(path, str(exc))
            continue
        except OSError:
            continue
        text = data.decode("utf-8", errors="replace")
        if len(text) > MAX_AGENTS_CHARS:
            text = text[:MAX_AGENTS_CHARS] + "\n[… truncated …]"
        found.append(AgentsFile(path=str(path), text=text.strip()))
    return found


_told: set[tuple[Path, str]] = set()


def _refused_once(path: Path, why: str) -> None:
    """One log line per file and reason in this process (the environment is gathered every turn)."""
    if (path, why) not in _told:
        _told.add((path, why))
        log.warning("%s left out of the instructions: %s", path, why)
