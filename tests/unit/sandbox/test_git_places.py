"""Git's files as the walls see them: config files read as git reads them, gitlinks read from an index, the places
the walls pin, protect and watch in real repositories, and what a command's guard undoes when it ends (the
command's writes are made here directly, as a command inside the walls could make them; `tests/sandbox/` runs
the same through the real walls)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from coder_agent.sandbox import gitconfig
from coder_agent.sandbox.command import CommandGuard
from coder_agent.sandbox.gitindex import GitlinkCache, gitlinks
from coder_agent.sandbox.gitundo import DISABLED
from coder_agent.sandbox.settings import SandboxConfig
from coder_agent.sandbox.walls import Walls, build_walls

IDENTITY = ["-c", "user.name=t", "-c", "user.email=t@t", "-c", "protocol.file.allow=always"]


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *IDENTITY, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin:/usr/local/bin", "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1"},
    )
    return done.stdout.strip()


def repo(path: Path) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "commit", "-q", "--allow-empty", "-m", "first")
    return path


def walls(tmp_path: Path, *roots: Path) -> Walls:
    (tmp_path / "t").mkdir(exist_ok=True)
    return build_walls(
        roots, SandboxConfig(), temp=tmp_path / "t", cache=tmp_path / "t", proxy_socket=None, home=tmp_path / "home"
    )


def guard(w: Walls) -> CommandGuard:
    places = w.git_places()
    return CommandGuard(w, places, places.snapshot())


# ---- config files ----------------------------------------------------------------------------------------------


def test_config_is_read_as_git_reads_it() -> None:
    text = (
        "# a comment\n[core] fsmonitor = one\n"
        '[Include]\n\tpath = "a b.cfg" ; trailing\n\tPATH = c\\\n.cfg\n'
        '[includeIf "gitdir:~/x/"]\n\tpath = ~/d.cfg\n'
        "[alias.x]\n\tbare\n"
        '[remote "o\\"r"]\n\turl = "q\\tq"  # done\n'
    )
    entries = gitconfig.parse(text)
    assert [(e.name, e.value) for e in entries] == [
        ("core.fsmonitor", "one"),
        ("include.path", "a b.cfg"),
        ("include.path", "c.cfg"),
        ("includeif.gitdir:~/x/.path", "~/d.cfg"),
        ("alias.x.bare", None),
        ('remote.o"r.url', "q\tq"),
    ]


@pytest.mark.parametrize("text", ["key = x\n", "[core\n", '[a "b]\n', "[a]\n1key = x\n", '[a]\nk = "open\n'])
def test_malformed_config_is_refused(text: str) -> None:
    with pytest.raises(gitconfig.Malformed):
        gitconfig.parse(text)


def test_what_is_written_back_reads_the_same() -> None:
    entries = gitconfig.parse('[user]\n\tname = "A \\"B\\" \\\\ C"\n[remote "x y"]\n\tfetch = +a:b\n[core]\n\tbare\n')
    assert gitconfig.parse(gitconfig.render(entries)) == entries


def test_includes_are_followed_whatever_their_condition(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (tmp_path / "a").write_text('[include]\n\tpath = sub/b\n[includeIf "onbranch:x"]\n\tpath = ~/c\n')
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b").write_text("[include]\n\tpath = ../a\n")  # a loop: bounded
    found = list(gitconfig.includes(tmp_path / "a", home))
    assert tmp_path / "sub" / "b" in found and home / "c" in found
    assert len(found) <= 2 * gitconfig.MAX_INCLUDE_DEPTH


@pytest.mark.parametrize(
    ("name", "safe"),
    [
        ("core.fsmonitor", False),
        ("core.hookspath", False),
        ("core.sshcommand", False),
        ("core.worktree", False),
        ("include.path", False),
        ("alias.co", False),
        ("remote.origin.uploadpack", False),
        ("submodule.x.update", False),
        ("diff.external", False),
        ("core.filemode", True),
        ("remote.origin.url", True),
        ("branch.main.merge", True),
        ("user.email", True),
    ],
)
def test_only_settings_that_run_nothing_are_safe(name: str, safe: bool) -> None:
    section, _, rest = name.partition(".")
    subsection, _, key = rest.rpartition(".")
    entry = gitconfig.Entry(section, subsection or None, key, "x")
    assert gitconfig.safe(entry) is safe


# ---- gitlinks ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["2", "3", "4"])
def test_gitlinks_are_read_from_every_index_version(tmp_path: Path, version: str) -> None:
    work = repo(tmp_path / "w")
    for name in ("a/b", "deep/er/c"):
        repo(work / name)
    (work / "file.txt").write_text("x")
    git(work, "add", "a/b", "deep/er/c", "file.txt")
    git(work, "update-index", "--index-version", version)
    assert sorted(gitlinks(work / ".git" / "index") or ()) == ["a/b", "deep/er/c"]


def test_an_index_without_gitlinks_or_not_an_index(tmp_path: Path) -> None:
    work = repo(tmp_path / "w")
    (work / "f").write_text("x")
    git(work, "add", "f")
    assert gitlinks(work / ".git" / "index") == ()
    (tmp_path / "junk").write_bytes(b"DIRC\x00\x00\x00\x09")
    assert gitlinks(tmp_path / "junk") is None
    assert gitlinks(tmp_path / "missing") == ()


def test_gitlinks_are_read_again_only_when_the_index_changes(tmp_path: Path) -> None:
    work = repo(tmp_path / "w")
    cache = GitlinkCache()
    assert cache.get(work / ".git" / "index") == ()
    repo(work / "sub")
    git(work, "add", "sub")
    assert cache.get(work / ".git" / "index") == ("sub",)


# ---- the places ----------------------------------------------------------------------------------------------------


def test_what_the_repository_config_names_is_protected_or_watched(tmp_path: Path) -> None:
    work = repo(tmp_path / "w")
    (work / ".githooks").mkdir()
    (work / "team.gitconfig").write_text("[include]\n\tpath = more.gitconfig\n")
    git(work, "config", "core.hooksPath", ".githooks")
    git(work, "config", "include.path", "../team.gitconfig")
    git(work, "config", "includeIf.gitdir:**.path", "../local.gitconfig")
    git(work, "config", "--add", "include.path", str(tmp_path / "elsewhere.gitconfig"))
    places = walls(tmp_path, work).git_places()
    assert {work / ".githooks", work / "team.gitconfig", work / ".git/hooks", work / ".git/config"} <= set(
        places.protected
    )
    assert {work / "more.gitconfig", work / "local.gitconfig", work / ".git/config.worktree"} <= set(places.absent)
    assert tmp_path / "elsewhere.gitconfig" not in {*places.protected, *places.absent}  # not writable anyway


def test_submodules_other_worktrees_and_gitlinked_repositories_are_found(tmp_path: Path) -> None:
    source = repo(tmp_path / "lib")
    work = repo(tmp_path / "w")
    git(work, "submodule", "add", "-q", str(source), "lib")
    repo(work / "vendor" / "dep")
    git(work, "add", "vendor/dep")
    git(work, "worktree", "add", "-q", "-b", "other", str(tmp_path / "other"))
    places = walls(tmp_path, work).git_places()
    module = work / ".git" / "modules" / "lib"
    nested = work / "vendor" / "dep" / ".git"
    assert {work / ".git", module, nested} <= set(places.pinned)
    assert {module / "hooks", module / "config", work / "lib" / ".git", nested / "hooks", nested / "config"} <= set(
        places.protected
    )
    admin = work / ".git" / "worktrees" / "other"
    assert {admin / "commondir", admin / "gitdir", module / "commondir"} <= set(places.watched)
    assert admin / "config.worktree" in places.absent
    assert {work / ".git", module, nested, admin} <= set(places.repositories)


def test_a_nested_git_file_naming_a_folder_outside_opens_nothing(tmp_path: Path) -> None:
    elsewhere = repo(tmp_path / "elsewhere")
    work = repo(tmp_path / "w")
    nested = work / "n"
    nested.mkdir()
    (nested / ".git").write_text(f"gitdir: {elsewhere / '.git'}\n")
    git(work, "add", "n")
    w = walls(tmp_path, work)
    places = w.git_places()
    assert elsewhere / ".git" not in {*places.pinned, *places.writable, *places.protected}
    assert str(elsewhere / ".git") not in w.spec()["write"]


# ---- what the guard undoes ---------------------------------------------------------------------------------------


def test_a_repository_made_in_a_folder_that_was_none_is_cut_to_safe_settings(tmp_path: Path) -> None:
    work = tmp_path / "w"
    work.mkdir()
    w = walls(tmp_path, work)
    watching = guard(w)
    git(work, "init", "-q", "-b", "main")  # as the command would
    git(work, "config", "core.fsmonitor", "touch pwned")
    git(work, "config", "remote.origin.url", "https://example.invalid/x.git")
    hook = work / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\ntouch pwned\n")
    hook.chmod(0o755)
    notes = watching.undo()
    config = (work / ".git" / "config").read_text()
    assert "fsmonitor" not in config and "example.invalid" in config and "repositoryformatversion" in config
    assert "fsmonitor" in (work / ".git" / f"config{DISABLED}").read_text()
    assert not hook.exists() and hook.with_name("pre-commit" + DISABLED).exists()
    assert any("core.fsmonitor" in note for note in notes) and any("pre-commit" in note for note in notes)
    git(work, "status")  # still a repository
    assert not (work / "pwned").exists()
    assert guard(w).undo() == []  # and nothing more to say the next time


def test_a_repository_that_was_there_is_left_as_it_is(tmp_path: Path) -> None:
    work = repo(tmp_path / "w")
    git(work, "config", "core.fsmonitor", "the user's own")
    w = walls(tmp_path, work)
    assert guard(w).undo() == []
    assert "the user's own" in (work / ".git" / "config").read_text()


def test_other_worktrees_redirects_are_put_back_and_a_new_worktree_keeps_its_own(tmp_path: Path) -> None:
    work = repo(tmp_path / "w")
    git(work, "worktree", "add", "-q", "-b", "other", str(tmp_path / "other"))
    admin = work / ".git" / "worktrees" / "other"
    before = (admin / "commondir").read_bytes()
    w = walls(tmp_path, work)
    watching = guard(w)
    (admin / "commondir").write_text(str(tmp_path / "evil") + "\n")
    git(work, "worktree", "add", "-q", "-b", "inside", str(work / "inside"))  # ordinary work
    (work / ".git" / "modules").mkdir()
    notes = watching.undo()
    assert (admin / "commondir").read_bytes() == before
    assert any("put back" in note for note in notes)
    assert git(work / "inside", "rev-parse", "--abbrev-ref", "HEAD") == "inside"  # its commondir and gitdir stay


def test_a_file_made_where_git_would_read_it_is_set_aside(tmp_path: Path) -> None:
    work = repo(tmp_path / "w")
    git(work, "config", "include.path", "../local.gitconfig")
    w = walls(tmp_path, work)
    watching = guard(w)
    (work / "local.gitconfig").write_text("[core]\n\tfsmonitor = touch pwned\n")
    notes = watching.undo()
    assert not (work / "local.gitconfig").exists() and (work / f"local.gitconfig{DISABLED}").exists()
    assert notes and "renamed" in notes[0]


def test_a_new_gitlink_to_a_planted_repository_is_cut(tmp_path: Path) -> None:
    work = repo(tmp_path / "w")
    w = walls(tmp_path, work)
    watching = guard(w)
    nested = repo(work / "nested")
    git(nested, "config", "core.fsmonitor", "touch pwned")
    git(work, "add", "nested")
    watching.undo()
    assert "fsmonitor" not in (nested / ".git" / "config").read_text()


# ---- what the guard undoes, when the command tried to make the agent write elsewhere -----------------------------


def test_a_redirect_swapped_for_a_link_is_put_back_without_writing_through_it(tmp_path: Path) -> None:
    work = repo(tmp_path / "w")
    git(work, "worktree", "add", "-q", "-b", "other", str(tmp_path / "other"))
    admin = work / ".git" / "worktrees" / "other"
    before = (admin / "commondir").read_bytes()
    victim = tmp_path / "bashrc"
    victim.write_text("the user's shell startup\n")
    watching = guard(walls(tmp_path, work))
    (admin / "commondir").unlink()
    (admin / "commondir").symlink_to(victim)
    watching.undo()
    assert victim.read_text() == "the user's shell startup\n"
    assert not (admin / "commondir").is_symlink() and (admin / "commondir").read_bytes() == before


def test_a_redirects_folder_swapped_for_a_link_is_set_aside(tmp_path: Path) -> None:
    work = repo(tmp_path / "w")
    git(work, "worktree", "add", "-q", "-b", "other", str(tmp_path / "other"))
    admin = work / ".git" / "worktrees" / "other"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "commondir").write_text("the user's file\n")
    watching = guard(walls(tmp_path, work))
    admin.rename(work / ".git" / "moved")
    admin.symlink_to(elsewhere)
    notes = watching.undo()
    assert (elsewhere / "commondir").read_text() == "the user's file\n"
    assert not admin.exists() and any("link" in note for note in notes)


def test_a_new_repository_swapped_for_a_link_gets_nothing_written_there(tmp_path: Path) -> None:
    work = tmp_path / "w"
    work.mkdir()
    elsewhere = repo(tmp_path / "elsewhere")
    git(elsewhere, "config", "core.fsmonitor", "the user's own")
    watching = guard(walls(tmp_path, work))
    (work / ".git").symlink_to(elsewhere / ".git")
    watching.undo()
    assert "the user's own" in (elsewhere / ".git" / "config").read_text()
    assert not (elsewhere / ".git" / f"config{DISABLED}").exists()


def test_hostile_git_files_cost_bounded_work(tmp_path: Path) -> None:
    work = repo(tmp_path / "w")
    lines = "".join("[include]\n\tpath = ../loop.gitconfig\n" for _ in range(500))
    (work / "loop.gitconfig").write_text(lines)
    git(work, "config", "include.path", "../loop.gitconfig")
    for index in range(50):
        (work / ".git" / "modules" / f"m{index}" / "deeper").mkdir(parents=True)
    assert len(gitconfig.includes(work / ".git" / "config", tmp_path)) <= gitconfig.MAX_INCLUDES
    places = walls(tmp_path, work).git_places()
    assert work / "loop.gitconfig" in places.protected


def test_a_git_file_a_command_writes_makes_nothing_writable(tmp_path: Path) -> None:
    elsewhere = repo(tmp_path / "elsewhere")
    work = tmp_path / "w"
    work.mkdir()
    w = walls(tmp_path, work)  # the session opens: not a worktree of anything
    (work / ".git").write_text(f"gitdir: {elsewhere / '.git'}\n")  # then a command writes this
    assert str(elsewhere / ".git") not in w.spec()["write"]


def test_a_git_link_a_command_makes_is_removed_and_its_repository_cut(tmp_path: Path) -> None:
    work = tmp_path / "w"
    work.mkdir()
    watching = guard(walls(tmp_path, work))
    evil = repo(work / "evil")
    git(evil, "config", "core.fsmonitor", "touch pwned")
    (work / ".git").symlink_to(evil / ".git")
    notes = watching.undo()
    assert not (work / ".git").exists() and "fsmonitor" not in (evil / ".git" / "config").read_text()
    assert len(notes) >= 2


def test_an_included_file_that_is_a_link_is_watched_and_put_back(tmp_path: Path) -> None:
    work = repo(tmp_path / "w")
    (work / "shared.gitconfig").write_text("[user]\n\tname = team\n")
    (work / "link.gitconfig").symlink_to("shared.gitconfig")
    git(work, "config", "include.path", "../link.gitconfig")
    w = walls(tmp_path, work)
    places = w.git_places()
    assert work / "shared.gitconfig" in places.protected and work / "link.gitconfig" in places.watched
    watching = guard(w)
    (work / "evil.gitconfig").write_text("[core]\n\tfsmonitor = touch pwned\n")
    (work / "link.gitconfig").unlink()
    (work / "link.gitconfig").symlink_to("evil.gitconfig")
    watching.undo()
    assert os.readlink(work / "link.gitconfig") == "shared.gitconfig"
