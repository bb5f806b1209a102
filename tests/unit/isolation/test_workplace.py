"""Workplaces for real, on repositories made here: what a child starts from (uncommitted changes included, the parent's
index and HEAD untouched), what it changed, and nothing left after; none of the programs a repository plants (hooks,
filter drivers, an fsmonitor, Git LFS) runs; the odd repositories (no commits, a detached HEAD, a dirty index, a
submodule, LFS pointers, a session in a subfolder); the size cap; a copy of a folder that is not a repository."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from coder_agent.isolation import places
from coder_agent.isolation.workplace import Change, IsolationFailed, Workplace, make

GIB = 1 << 30


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def repository(path: Path) -> Path:
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "dev@example.com")
    git(path, "config", "user.name", "Dev")
    (path / "a.txt").write_text("one\ntwo\n")
    (path / "sub").mkdir()
    (path / "sub" / "b.txt").write_text("bee\n")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "start")
    return path


def owner(tmp_path: Path) -> places.Owner:
    return places.owner(tmp_path / "private")


def leftovers(repo: Path, made: Workplace) -> tuple[int, str, bool]:
    worktrees = git(repo, "worktree", "list", "--porcelain").count("worktree ")
    return worktrees, git(repo, "branch", "--list", "coder-agent/*"), made.folder.exists()


def by_path(changes: list[Change]) -> dict[str, Change]:
    return {change.path: change for change in changes}


def plant(repo: Path, ran: Path) -> None:
    """Hooks, filter and diff drivers, an fsmonitor and Git LFS's filter, each leaving a mark in `ran` if it runs."""
    ran.mkdir()
    hooks = repo / ".git" / "hooks"
    for hook in ("post-checkout", "reference-transaction", "post-index-change", "pre-commit", "post-commit"):
        (hooks / hook).write_text(f"#!/bin/sh\ntouch {ran}/{hook}\n")
        (hooks / hook).chmod(0o755)
    script = ran.parent / "program.sh"
    script.write_text(f'#!/bin/sh\ntouch {ran}/"$1"\ncat\n')
    script.chmod(0o755)
    for key, mark in (
        ("filter.evil.smudge", "smudge"),
        ("filter.evil.clean", "clean"),
        ("filter.lfs.smudge", "lfs-smudge"),
        ("filter.lfs.clean", "lfs-clean"),
        ("diff.evil.textconv", "textconv"),
        ("core.fsmonitor", "fsmonitor"),
    ):
        git(repo, "config", key, f"{script} {mark}")
    git(repo, "config", "filter.evil.required", "true")
    (repo / ".gitattributes").write_text("*.txt filter=evil diff=evil\n*.bin filter=lfs\n")


def test_a_worktree_starts_from_the_uncommitted_state_and_runs_nothing_the_repository_planted(tmp_path: Path) -> None:
    repo = repository(tmp_path / "repo")
    ran = tmp_path / "ran"
    (repo / "a.txt").write_text("one\ntwo\nstaged\n")
    git(repo, "add", "a.txt")
    plant(repo, ran)
    (repo / "a.txt").write_text("one\ntwo\nstaged\nand changed after\n")
    (repo / "untracked.txt").write_text("new\n")
    (repo / "big.bin").write_text("version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 3\n")
    index_before, head_before = (repo / ".git" / "index").read_bytes(), git(repo, "rev-parse", "HEAD")
    made = make(owner(tmp_path), repo, name="general-1", cap=GIB)
    try:
        assert made.kind == "worktree" and made.branch is not None and made.branch.startswith("coder-agent/ca-")
        assert (made.tree / "a.txt").read_text() == "one\ntwo\nstaged\nand changed after\n"
        assert (made.tree / "untracked.txt").read_text() == "new\n"
        assert not made.tree.is_relative_to(repo), "never inside the workspace"
        (made.tree / "a.txt").write_text("ONE\ntwo\nstaged\nand changed after\n")
        (made.tree / "sub" / "b.txt").unlink()
        (made.tree / "c.txt").write_text("sea\n")
        (made.tree / "big.bin").write_text("version https://git-lfs.github.com/spec/v1\noid sha256:11\nsize 3\n")
        os.symlink("/etc/passwd", made.tree / "link")
        (made.tree / "untracked.txt").chmod(0o755)
        changes = by_path(made.changes())
        assert (repo / ".git" / "index").read_bytes() == index_before and git(repo, "rev-parse", "HEAD") == head_before
    finally:
        made.remove()
    before = b"one\ntwo\nstaged\nand changed after\n"
    assert changes["a.txt"] == Change("a.txt", before, before.replace(b"one", b"ONE"))
    assert changes["sub/b.txt"] == Change("sub/b.txt", b"bee\n", None)
    assert changes["c.txt"] == Change("c.txt", None, b"sea\n")
    assert changes["link"].note == "a symlink" and changes["big.bin"].note is not None
    assert changes["untracked.txt"].note == "its mode changed (100644 to 100755)"
    assert leftovers(repo, made) == (1, "", False)
    assert sorted(os.listdir(ran)) == [], "no hook, filter, textconv, fsmonitor or LFS program ran"
    assert (repo / "a.txt").read_text() == "one\ntwo\nstaged\nand changed after\n"


def test_no_commits_a_detached_head_and_a_commit_made_in_the_worktree(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    (empty / "first.txt").write_text("1\n")
    made = make(owner(tmp_path), empty, name="general-1", cap=GIB)
    try:
        assert (made.tree / "first.txt").read_text() == "1\n"
    finally:
        made.remove()
    assert leftovers(empty, made) == (1, "", False)

    repo = repository(tmp_path / "repo")
    git(repo, "checkout", "-q", "--detach", "HEAD")
    made = make(owner(tmp_path), repo, name="general-2", cap=GIB)
    try:
        (made.tree / "a.txt").write_text("committed by the child\n")
        git(made.tree, "-c", "core.hooksPath=/dev/null", "commit", "-qam", "a child's commit")
        git(made.tree, "reset", "-q", "--soft", "HEAD~1")
        assert by_path(made.changes())["a.txt"].after == b"committed by the child\n", "its work tree, however it got so"
    finally:
        made.remove()
    assert leftovers(repo, made) == (1, "", False)
    assert git(repo, "status", "--porcelain") == "" and "HEAD detached" in git(repo, "status")


def test_a_submodule_stays_an_empty_folder_and_a_session_in_a_subfolder_sees_its_own_changes(tmp_path: Path) -> None:
    library = repository(tmp_path / "library")
    repo = repository(tmp_path / "repo")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(library), "vendor/library")
    git(repo, "commit", "-qm", "a submodule")
    made = make(owner(tmp_path), repo / "sub", name="general-1", cap=GIB)
    try:
        assert made.subpath == "sub" and made.cwd == made.tree / "sub"
        assert (made.tree / "vendor" / "library").is_dir() and not list((made.tree / "vendor" / "library").iterdir())
        (made.cwd / "b.txt").write_text("changed\n")
        (made.tree / "a.txt").write_text("outside the session's folder\n")
        assert made.changes() == [Change("b.txt", b"bee\n", b"changed\n")]
    finally:
        made.remove()
    assert leftovers(repo, made) == (1, "", False)


def test_over_the_cap_nothing_is_made_and_nothing_is_left(tmp_path: Path) -> None:
    repo = repository(tmp_path / "repo")
    (repo / "large.txt").write_text("x" * 5000)
    private = owner(tmp_path)
    with pytest.raises(IsolationFailed, match="over the cap"):
        make(private, repo, name="general-1", cap=4096)
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert git(repo, "branch", "--list", "coder-agent/*") == ""
    assert [p.name for p in private.folder.iterdir()] == ["lock"]


def test_a_folder_that_is_not_a_repository_is_copied_within_the_cap(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    (folder / "src").mkdir(parents=True)
    (folder / "src" / "main.py").write_text("print('hi')\n")
    (folder / "keep.txt").write_text("keep\n")
    os.symlink("keep.txt", folder / "alias")
    os.mkfifo(folder / "pipe")
    made = make(owner(tmp_path), folder, name="general-1", cap=GIB)
    try:
        assert made.kind == "copy" and made.branch is None and "a copy of the folder" in made.how
        assert "special files left out: pipe" in made.how
        assert os.readlink(made.tree / "alias") == "keep.txt"
        (made.tree / "src" / "main.py").write_text("print('bye')\n")
        (made.tree / "keep.txt").unlink()
        (made.tree / "__pycache__").mkdir()
        (made.tree / "__pycache__" / "main.pyc").write_bytes(b"\0")
        (made.tree / "new.txt").write_text("new\n")
        changes = by_path(made.changes())
    finally:
        made.remove()
    assert sorted(changes) == ["keep.txt", "new.txt", "src/main.py"], "what tools leave behind is not a change"
    assert changes["src/main.py"] == Change("src/main.py", b"print('hi')\n", b"print('bye')\n")
    assert not made.folder.exists()
    with pytest.raises(IsolationFailed, match="more than 0 MiB"):
        make(owner(tmp_path), folder, name="general-2", cap=10)


def test_a_copy_s_changes_are_read_without_following_a_folder_swapped_for_a_symlink(tmp_path: Path) -> None:
    """Something still running in the child's copy (its language server, started there from its own files, ends only
    after the merge is read) flips a folder between a real one and a symlink to a folder outside. What the agent reads
    of the child's changes, outside the walls, must never come from there (it is shown in the merge's diff and, once
    applied, written into the session's folder)."""
    import threading

    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "keep.txt").write_text("keep\n")
    outside = tmp_path / "home" / ".ssh"
    outside.mkdir(parents=True)
    (outside / "id_rsa").write_text("PRIVATE KEY\n")
    made = make(owner(tmp_path), folder, name="general-1", cap=GIB)
    (made.tree / "a").mkdir()
    for number in range(100):  # read before d/: the time between the listing and d/id_rsa's read
        (made.tree / "a" / f"{number}.txt").write_text("new\n")
    stop = threading.Event()
    flips = 0

    def flip() -> None:
        nonlocal flips
        real, link, here = made.tree / "d.real", made.tree / "d.link", made.tree / "d"
        real.mkdir()
        (real / "id_rsa").write_text("planted\n")
        os.symlink(outside, link)
        while not stop.is_set():
            os.rename(real, here)
            os.rename(here, real)
            os.rename(link, here)
            os.rename(here, link)
            flips += 1

    flipper = threading.Thread(target=flip)
    switching = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # the two threads take turns often, as two processes would
    flipper.start()
    read: list[bytes] = []
    try:
        for _ in range(300):
            if any(b"PRIVATE" in data for data in read):
                break
            try:
                changes = made.changes()
            except OSError:
                continue  # a file gone while it was read: the merge says its changes could not be read
            read += [change.after for change in changes if change.after is not None]
    finally:
        stop.set()
        flipper.join()
        sys.setswitchinterval(switching)
        made.remove()
    assert flips > 0
    assert not [data for data in read if b"PRIVATE" in data], "a file outside was read as the child's change"


def test_an_index_a_command_swapped_for_a_symlink_is_not_copied(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Commands write `.git/index`; one made a symlink to a key outside is not followed into the agent's copy of it
    (git is left to read the work tree without it)."""
    repo = repository(tmp_path / "repo")
    secret = tmp_path / "id_rsa"
    secret.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    (repo / ".git" / "index").unlink()
    os.symlink(secret, repo / ".git" / "index")
    (repo / "a.txt").write_text("one\ntwo\nthree\n")
    made = make(owner(tmp_path), repo, name="general-1", cap=GIB)
    try:
        assert (made.tree / "a.txt").read_text() == "one\ntwo\nthree\n", "the uncommitted state, without the index"
        copied = [p for p in made.folder.rglob("*") if p.is_file() and b"PRIVATE KEY" in p.read_bytes()]
    finally:
        made.remove()
    assert copied == []
    assert "not copying the index" in caplog.text
