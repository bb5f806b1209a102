"""The sweep of what an agent that died left behind: a child's worktree, branch and folder made by a process that was
killed are removed by the next sweep (also when its worktree folder is already gone); a live agent's are not."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from coder_agent.isolation import places
from coder_agent.isolation.workplace import make, sweep_left_behind
from tests.unit.isolation.test_workplace import git, repository

KILLED = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from coder_agent.isolation import places
    from coder_agent.isolation.workplace import make
    made = make(places.owner(Path(sys.argv[1])), Path(sys.argv[2]), name="general-1", cap=1 << 30)
    print(made.tree, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


def made_by_a_killed_agent(private: Path, repo: Path) -> Path:
    done = subprocess.run([sys.executable, "-c", KILLED, str(private), str(repo)], capture_output=True, text=True)
    assert done.returncode == -signal.SIGKILL, done.stderr
    return Path(done.stdout.strip())


def test_a_killed_agents_worktree_and_branch_are_swept_and_a_live_ones_are_not(tmp_path: Path) -> None:
    repo = repository(tmp_path / "repo")
    private = tmp_path / "private"
    dead = made_by_a_killed_agent(private, repo)
    half = made_by_a_killed_agent(private, repo)
    shutil.rmtree(half)  # a removal that stopped halfway
    live = make(places.owner(private), repo, name="general-2", cap=1 << 30)
    assert dead.is_dir() and git(repo, "branch", "--list", "coder-agent/*").count("coder-agent/") == 3
    swept = sweep_left_behind(private)
    try:
        assert sorted(s.source for s in swept) == [str(repo), str(repo)]
        assert all(s.what.startswith("the worktree and branch coder-agent/ca-") for s in swept)
        assert not dead.exists()
        worktrees = git(repo, "worktree", "list", "--porcelain")
        assert worktrees.count("worktree ") == 2 and str(live.tree) in worktrees
        assert git(repo, "branch", "--list", "coder-agent/*").strip() == f"+ {live.branch}"
        assert [p.name for p in private.iterdir()] == [places.owner(private).folder.name], "the dead agents' folders"
        assert sweep_left_behind(private) == []
    finally:
        live.remove()
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
