"""Escape attempts through git's files: what a command could plant for git, run later outside the walls by the user
(or the agent), to run or to read. Same table and checks as `test_escapes` (every row also checks that nothing
outside the walls changed), plus, where the victim is the next step, the user's own `git status` and `git commit`
run outside the walls afterwards, which must run nothing the command planted (`_users_git_runs_nothing`).

A row that fails is one the walls stop outright (the file is read-only to the command); a row with `fails=False` is
one a command can do inside the walls, undone when it ends (a redirect put back, a file made where git would read
it renamed aside, a repository made where git outside will open it cut to settings that run nothing).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from coder_agent.sandbox.gitundo import DISABLED
from coder_agent.sandbox.settings import SandboxConfig
from tests.sandbox.conftest import MakeLayout
from tests.sandbox.test_escapes import NOBODY, ROOT, Escape, World, _attempt, _give
from tests.sandbox.walled import Ran, Walled, git

pytestmark = pytest.mark.sandbox

PLANT = "#!/bin/sh\\ntouch {out}/pwned\\n"
"""A hook that leaves a mark outside the walls when it runs."""
FSMONITOR = "[core]\\n\\tfsmonitor = touch {out}/pwned\\n"
"""A config that runs a program (leaving the same mark) whenever git looks at the worktree."""


def _users_git_runs_nothing(world: World, ran: Ran) -> None:
    """The user's next steps outside the walls: `git status`, `git add -A` and a commit, in the workspace and in
    the other worktrees and submodules of the layout; none may run what the command planted."""
    places = [world.layout.workspace, *(p for p in world.also_guarded if (p / ".git").exists())]
    for place in places:
        git(place, "status", check=False)
        git(place, "add", "-A", check=False)
        git(place, "commit", "-q", "--allow-empty", "-m", "the user's", check=False)
    assert not (world.layout.outside / "pwned").exists(), "the user's git ran what the command planted"


def _both(*checks: Callable[[World, Ran], None]) -> Callable[[World, Ran], None]:
    def check(world: World, ran: Ran) -> None:
        for each in checks:
            each(world, ran)

    return check


def _gone(relative: str) -> Callable[[World, Ran], None]:
    def check(world: World, ran: Ran) -> None:
        path = world.layout.workspace / relative
        assert not os.path.lexists(path), f"{relative} is still there for git to use"
        assert os.path.lexists(path.with_name(path.name + DISABLED)), f"{relative} was not kept aside"
        assert "coder-agent:" in ran.output, "the output does not say what was undone"

    return check


def _all_given(world: World, *paths: Path) -> None:
    for top in paths:
        for path in (top, *top.rglob("*")):
            _give(world, path)


def _hooks_path(world: World, *, make: bool = True) -> None:
    ws = world.layout.workspace
    git(ws, "config", "core.hooksPath", ".githooks")
    if make:
        (ws / ".githooks").mkdir()
        (ws / ".githooks" / "pre-commit").write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
        (ws / ".githooks" / "pre-commit").chmod(0o755)
        _all_given(world, ws / ".githooks")
        world.also_guarded.append(ws / ".githooks")


def _include(world: World, *, make: bool = True, conditional: bool = False) -> None:
    ws = world.layout.workspace
    key = "includeIf.gitdir:**.path" if conditional else "include.path"
    git(ws, "config", key, "../project.gitconfig")
    if make:
        (ws / "project.gitconfig").write_text("[user]\n\tname = The Project\n", encoding="utf-8")
        _give(world, ws / "project.gitconfig")
        world.also_guarded.append(ws / "project.gitconfig")


def _worktree_config(world: World) -> None:
    ws = world.layout.workspace
    git(ws, "config", "core.repositoryformatversion", "1")
    git(ws, "config", "extensions.worktreeConfig", "true")


def _existing_worktree_config(world: World) -> None:
    _worktree_config(world)
    config = world.layout.workspace / ".git" / "config.worktree"
    config.write_text("[user]\n\tname = The Worktree\n", encoding="utf-8")
    _give(world, config)
    world.also_guarded.append(config)


def _other_worktree(world: World) -> None:
    """A linked worktree of the workspace's repository elsewhere (outside the walls), which the user works in."""
    other = world.layout.base / "other"
    git(world.layout.workspace, "worktree", "add", "-q", "-b", "other", str(other))
    _all_given(world, other, world.layout.workspace / ".git" / "worktrees")
    world.also_guarded.append(other)


def _other_worktree_configured(world: World) -> None:
    _worktree_config(world)
    _other_worktree(world)


def _other_worktree_unchanged(world: World, ran: Ran) -> None:
    other = world.layout.base / "other"
    common = git(other, "rev-parse", "--path-format=absolute", "--git-common-dir")
    assert Path(common) == world.layout.workspace / ".git", f"the other worktree's git now uses {common}"


def _submodule(world: World) -> None:
    source = world.layout.base / "libsrc"
    source.mkdir()
    git(source, "init", "-q", "-b", "main")
    git(source, "commit", "-q", "--allow-empty", "-m", "lib")
    ws = world.layout.workspace
    git(ws, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(source), "lib")
    git(ws, "commit", "-q", "-m", "a submodule")
    _all_given(world, ws / "lib", ws / ".git" / "modules")
    world.also_guarded += [ws / ".git" / "modules" / "lib" / "hooks", ws / ".git" / "modules" / "lib" / "config"]


def _submodule_unchanged(world: World, ran: Ran) -> None:
    lib = world.layout.workspace / "lib"
    git_dir = git(lib, "rev-parse", "--path-format=absolute", "--git-common-dir")
    assert Path(git_dir) == world.layout.workspace / ".git" / "modules" / "lib", f"lib's git now uses {git_dir}"
    _users_git_runs_nothing(world, ran)


def _gitlinked(world: World) -> None:
    """A repository nested in the workspace and committed as a gitlink (no `.gitmodules`): git looks into it."""
    ws = world.layout.workspace
    nested = ws / "vendor" / "dep"
    nested.mkdir(parents=True)
    git(nested, "init", "-q", "-b", "main")
    git(nested, "commit", "-q", "--allow-empty", "-m", "dep")
    git(ws, "add", "vendor/dep")
    git(ws, "commit", "-q", "-m", "a nested repository")
    _all_given(world, ws / "vendor")
    world.also_guarded += [nested / ".git" / "hooks", nested / ".git" / "config"]


def _nested_config_cut(world: World, ran: Ran) -> None:
    config = (world.layout.workspace / "nested" / ".git" / "config").read_text(encoding="utf-8")
    assert "fsmonitor" not in config, f"the planted setting is still there:\n{config}"
    assert (world.layout.workspace / "nested" / ".git" / f"config{DISABLED}").exists()
    _users_git_runs_nothing(world, ran)


GIT_ESCAPES: list[Escape] = [
    # ---- what the repository's config names inside the workspace: read-only -------------------------------------
    Escape(
        "plant-hook-in-hooks-path-folder",
        f"printf '{PLANT}' > .githooks/pre-commit",
        setup=_hooks_path,
        check=_users_git_runs_nothing,
        nobody=True,
    ),
    Escape(
        "add-hook-to-hooks-path-folder",
        f"printf '{PLANT}' > .githooks/post-commit && chmod +x .githooks/post-commit",
        setup=_hooks_path,
        check=_users_git_runs_nothing,
    ),
    Escape(
        "replace-hooks-path-folder",
        f"mv .githooks old && mkdir .githooks && printf '{PLANT}' > .githooks/pre-commit",
        setup=_hooks_path,
        check=_users_git_runs_nothing,
    ),
    Escape(
        "make-missing-hooks-path-folder",
        f"mkdir .githooks && printf '{PLANT}' > .githooks/pre-commit && chmod +x .githooks/pre-commit",
        setup=lambda world: _hooks_path(world, make=False),
        fails=False,  # made inside the walls, renamed aside when the command ends
        check=_both(_gone(".githooks"), _users_git_runs_nothing),
    ),
    Escape(
        "write-included-config",
        f"printf '{FSMONITOR}' >> project.gitconfig",
        setup=_include,
        check=_users_git_runs_nothing,
        nobody=True,
    ),
    Escape(
        "replace-included-config",
        f"rm project.gitconfig; printf '{FSMONITOR}' > project.gitconfig",
        setup=_include,
        check=_users_git_runs_nothing,
    ),
    Escape(
        "make-missing-included-config",
        f"printf '{FSMONITOR}' > project.gitconfig",
        setup=lambda world: _include(world, make=False),
        fails=False,
        check=_both(_gone("project.gitconfig"), _users_git_runs_nothing),
    ),
    Escape(
        "make-missing-conditionally-included-config",
        f"printf '{FSMONITOR}' > project.gitconfig",
        setup=lambda world: _include(world, make=False, conditional=True),
        fails=False,
        check=_both(_gone("project.gitconfig"), _users_git_runs_nothing),
    ),
    Escape(
        "write-config-worktree",
        f"printf '{FSMONITOR}' >> .git/config.worktree",
        setup=_existing_worktree_config,
        check=_users_git_runs_nothing,
        nobody=True,
    ),
    Escape(
        "make-missing-config-worktree",
        f"printf '{FSMONITOR}' > .git/config.worktree",
        setup=_worktree_config,
        fails=False,
        check=_both(_gone(".git/config.worktree"), _users_git_runs_nothing),
    ),
    # ---- other worktrees of the repository ---------------------------------------------------------------------
    Escape(
        "redirect-other-worktree-commondir",
        "mkdir evil && cp -r .git/objects .git/refs .git/HEAD evil/ "
        f"&& printf '{FSMONITOR}' > evil/config "
        '&& echo "$PWD/evil" > .git/worktrees/other/commondir',
        setup=_other_worktree,
        fails=False,  # changed inside the walls, put back when the command ends
        check=_both(_other_worktree_unchanged, _users_git_runs_nothing),
    ),
    Escape(
        "plant-other-worktree-config-worktree",
        f"printf '{FSMONITOR}' > .git/worktrees/other/config.worktree",
        setup=_other_worktree_configured,
        fails=False,
        check=_both(_gone(".git/worktrees/other/config.worktree"), _users_git_runs_nothing),
    ),
    # ---- submodules ---------------------------------------------------------------------------------------------
    Escape("plant-submodule-hook", f"printf '{PLANT}' > .git/modules/lib/hooks/pre-commit", setup=_submodule),
    Escape("set-submodule-fsmonitor", "git -C lib config core.fsmonitor 'touch {out}/pwned'", setup=_submodule),
    Escape(
        "rename-submodule-git-folder-and-rebuild",
        "mv .git/modules/lib .git/modules/old && cp -r .git/modules/old .git/modules/lib "
        f"&& printf '{FSMONITOR}' >> .git/modules/lib/config",
        setup=_submodule,
        check=_submodule_unchanged,
    ),
    Escape(
        "rewrite-submodule-git-file",
        "mkdir evil && cp -r .git/modules/lib/* evil/ && printf '[core]\\n\\tfsmonitor = touch {out}/pwned\\n' "
        ">> evil/config && echo 'gitdir: ../evil' > lib/.git",
        setup=_submodule,
        check=_submodule_unchanged,
    ),
    Escape(
        "redirect-submodule-commondir",
        "mkdir evil && cp -r .git/modules/lib/objects .git/modules/lib/refs .git/modules/lib/HEAD evil/ "
        f"&& printf '{FSMONITOR}' > evil/config && echo ../../../evil > .git/modules/lib/commondir",
        setup=_submodule,
        fails=False,
        check=_submodule_unchanged,
    ),
    # ---- repositories the index links (gitlinks) -----------------------------------------------------------------
    Escape(
        "plant-gitlinked-repository-hook",
        f"printf '{PLANT}' > vendor/dep/.git/hooks/pre-commit",
        setup=_gitlinked,
        check=_users_git_runs_nothing,
        nobody=True,
    ),
    Escape(
        "set-gitlinked-repository-fsmonitor",
        "git -C vendor/dep config core.fsmonitor 'touch {out}/pwned'",
        setup=_gitlinked,
        check=_users_git_runs_nothing,
    ),
    Escape(
        "new-gitlink-to-a-planted-repository",
        "git init -q nested && git -C nested config core.fsmonitor 'touch {out}/pwned' "
        "&& git -C nested commit -q --allow-empty -m x && git add nested",
        fails=False,  # made inside the walls; cut to settings that run nothing when the command ends
        check=_nested_config_cut,
    ),
]


def _ran_as(as_nobody: bool) -> list[object]:
    rows = [row for row in GIT_ESCAPES if row.nobody or not as_nobody]
    return [pytest.param(row, id=row.id) for row in rows]


@pytest.mark.parametrize("row", _ran_as(as_nobody=False))
def test_git_escape_is_stopped(row: Escape, make_world: MakeLayout, token: str) -> None:
    _attempt(row, make_world, token, None)


@pytest.mark.skipif(not ROOT or shutil.which("setpriv") is None, reason="dropping to another user needs root")
@pytest.mark.parametrize("row", _ran_as(as_nobody=True))
def test_git_escape_is_stopped_unprivileged(row: Escape, make_world: MakeLayout, token: str) -> None:
    _attempt(row, make_world, token, NOBODY)


# ---- the next command, and the user's next git, after a command made a repository --------------------------------


def _no_repository(make_world: MakeLayout) -> tuple[Walled, Path, Path]:
    layout = make_world()
    shutil.rmtree(layout.workspace / ".git")
    return Walled(layout, SandboxConfig()), layout.workspace, layout.outside


def test_a_repository_made_where_there_was_none_runs_nothing_planted(make_world: MakeLayout) -> None:
    """The issue's first case, for the user: a command turns a folder that was no repository into one, with a
    hook, an fsmonitor, a hooks folder and an include of its own; when it ends, the user's `git add` and
    `git commit` run none of it, and the next command can no longer change the repository's config."""
    walled, workspace, outside = _no_repository(make_world)
    plant = f"#!/bin/sh\ntouch {outside}/pwned\n"
    ran = walled.run(
        "git init -q -b main && git config core.fsmonitor 'touch {out}/pwned' "
        "&& git config core.hooksPath .githooks && git config include.path ../inc.gitconfig "
        f"&& printf '[core]\\n\\tpager = touch {outside}/pwned\\n' > inc.gitconfig "
        f"&& mkdir -p .githooks && printf '{plant}' > .githooks/pre-commit && printf '{plant}' > .git/hooks/pre-commit "
        "&& chmod +x .githooks/pre-commit .git/hooks/pre-commit".replace("{out}", str(outside))
    )
    assert ran.status == 0, ran.output
    assert "coder-agent:" in ran.output, "the output does not say what was undone"
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "the user's")
    git(workspace, "log", "-p", "-1")
    assert not (outside / "pwned").exists(), "the user's git ran what the command planted"
    again = walled.run("git config core.fsmonitor 'touch {out}/pwned'".replace("{out}", str(outside)))
    assert again.status != 0, "the next command could change the new repository's config"


def test_a_git_file_one_command_writes_opens_nothing_to_the_next(make_world: MakeLayout) -> None:
    walled, workspace, outside = _no_repository(make_world)
    victim = outside / "repo"
    victim.mkdir()
    git(victim, "init", "-q")
    assert walled.run(f"printf 'gitdir: {victim}/.git\\n' > .git").status == 0
    ran = walled.run(f"echo planted > {victim}/.git/description && echo x > {victim}/.git/objects/planted")
    assert ran.failed, f"the next command wrote the repository a .git file named:\n{ran.output}"
    assert not (victim / ".git" / "objects" / "planted").exists()


def test_a_git_link_a_command_makes_is_removed(make_world: MakeLayout) -> None:
    walled, workspace, outside = _no_repository(make_world)
    ran = walled.run(
        "mkdir evil && git -C evil init -q && git -C evil config core.fsmonitor 'touch {out}/pwned' "
        "&& ln -s evil/.git .git".replace("{out}", str(outside))
    )
    assert ran.status == 0, ran.output
    assert not os.path.lexists(workspace / ".git")
    git(workspace / "evil", "status", check=False)  # the user looking into what the command left
    assert not (outside / "pwned").exists()
