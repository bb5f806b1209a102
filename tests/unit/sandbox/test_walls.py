"""The walls as data: what of the home folder is readable, what stays out, the sessions' folders and caches, and the
Seatbelt profile built from them (macOS cannot run here: the profile's rules and their order are checked as text)."""

from __future__ import annotations

import os
import re
import stat
import sys
import sysconfig
from pathlib import Path

import pytest

from coder_agent import installation
from coder_agent.sandbox import seatbelt
from coder_agent.sandbox.command import project_cache, sessions_folder
from coder_agent.sandbox.settings import DEFAULT_DENY_READ, HOME_READABLE, SandboxConfig
from coder_agent.sandbox.walls import Unwallable, Walls, build_walls


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    for name in (".gitconfig", ".config/git/config", ".config/git/credentials", ".gem/credentials", ".env"):
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text("x")
    for folder in (".rustup/toolchains", ".cargo/bin", ".gem/ruby", ".nvm/versions/node/v20/etc", "code/.x"):
        (home / folder).mkdir(parents=True, exist_ok=True)
    (home / ".nvm/versions/node/v20/etc/npmrc").write_text("//registry:_authToken=x")
    (home / "code/.python-version").write_text("3.12")
    (home / "dotfiles").mkdir()
    (home / "dotfiles/tool-versions").write_text("python 3.12")
    (home / ".tool-versions").symlink_to(home / "dotfiles/tool-versions")
    return home


def _walls(tmp_path: Path, home: Path, work: Path | None = None, **settings: list[str]) -> Walls:
    work = work or tmp_path / "work"
    work.mkdir(parents=True, exist_ok=True)
    temp = tmp_path / "t"
    temp.mkdir(exist_ok=True)
    return build_walls((work,), SandboxConfig(**settings), temp=temp, cache=temp, proxy_socket=None, home=home)


def test_the_home_folder_is_kept_out_but_for_what_builds_need(tmp_path: Path) -> None:
    home = _home(tmp_path)
    walls = _walls(tmp_path, home)
    spec = walls.spec()
    assert spec["home"] == [str(home)]
    readable = set(spec["read"])
    assert {str(home / p) for p in (".gitconfig", ".config/git/config", ".rustup", ".cargo/bin", ".gem")} <= readable
    assert str(home / ".env") not in readable and str(home / "code") not in readable
    assert str(home / "dotfiles/tool-versions") in readable  # a link in the list is read where it leads, only that
    assert str(home / "dotfiles") not in readable
    denied = set(spec["deny"])
    assert {str(home / ".config/git/credentials"), str(home / ".gem/credentials")} <= denied  # inside readable ones
    assert str(home / ".nvm/versions/node/v20/etc/npmrc") in denied  # a pattern, matched when the session opens


def test_version_files_between_the_home_folder_and_the_project_are_readable(tmp_path: Path) -> None:
    home = _home(tmp_path)
    walls = _walls(tmp_path, home, work=home / "code" / "project")
    assert str(home / "code/.python-version") in walls.spec()["read"]
    assert str(home / "code") not in walls.spec()["read"]


def test_allow_read_widens_the_home_folder_but_never_past_the_kept_out_paths(tmp_path: Path) -> None:
    home = _home(tmp_path)
    walls = _walls(tmp_path, home, allow_read=["~", "~/.gem/credentials"])
    spec = walls.spec()
    assert str(home) in spec["read"]  # all of it, as option (b) would: the credential list still holds inside
    assert str(home / ".config/git/credentials") in spec["deny"]
    assert str(home / ".gem/credentials") not in spec["deny"]  # let through by name


def test_a_readable_path_inside_a_kept_out_one_is_left_out(tmp_path: Path) -> None:
    home = _home(tmp_path)
    (home / ".ssh").mkdir()
    (home / ".ssh/config").write_text("Host x")
    walls = _walls(tmp_path, home, allow_read=["~/.ssh/config"])
    assert str(home / ".ssh/config") not in walls.spec()["read"]


def test_the_agents_own_files_and_other_sessions_are_kept_out(tmp_path: Path) -> None:
    home = _home(tmp_path)
    own = (home / ".local/state/coder-agent", tmp_path / "agent.log", tmp_path / "sessions")
    (tmp_path / "work").mkdir()
    walls = build_walls(
        (tmp_path / "work",),
        SandboxConfig(),
        temp=tmp_path / "sessions" / "mine" / "tmp",
        cache=tmp_path / "c",
        proxy_socket=None,
        agent_paths=own,
        home=home,
    )
    spec = walls.spec()
    assert {str(p) for p in own} <= set(spec["deny"])
    assert str(tmp_path / "sessions" / "mine" / "tmp") in spec["write"]  # its own, inside the kept-out folder


def test_the_agents_own_installation_in_the_session_folder_stays_read_only(tmp_path: Path) -> None:
    """The agent started from the project's `.venv` (or a checkout of itself): it runs and imports that outside the
    walls, so commands may not write it; a session opened inside it gets no walls at all."""
    home, work = _home(tmp_path), tmp_path / "work"
    venv = work / ".venv"
    (venv / "bin").mkdir(parents=True)
    elsewhere = tmp_path / "usr" / "lib"
    elsewhere.mkdir(parents=True)
    temp = tmp_path / "t"
    temp.mkdir()
    walls = build_walls(
        (work,), SandboxConfig(), temp=temp, cache=temp, proxy_socket=None, home=home, own=(venv, elsewhere)
    )
    assert walls.own == (venv,)
    assert str(venv) in walls.spec()["protect"] and str(elsewhere) not in walls.spec()["protect"]
    assert any(".venv (the agent's own)" in line for line in walls.describe())
    with pytest.raises(Unwallable, match="coder-agent's own installation"):
        build_walls((venv / "bin",), SandboxConfig(), temp=temp, cache=temp, proxy_socket=None, own=(venv,))


def test_the_agent_stops_importing_from_a_session_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder on `sys.path` inside a session's folder (an editable install of the project, `python -m`'s working
    folder): a module first imported later would be found there, so it is taken off; one outside stays."""
    work, other = tmp_path / "work", tmp_path / "other"
    (work / "src").mkdir(parents=True)
    other.mkdir()
    monkeypatch.setattr(sys, "path", [*sys.path, str(work / "src"), str(other)])
    assert installation.stop_importing_from([work]) == [str(work / "src")]
    assert str(work / "src") not in sys.path and str(other) in sys.path
    packages = sysconfig.get_path("purelib")
    assert installation.stop_importing_from([packages]) == [] and packages in sys.path  # its own stay, read-only


def test_the_default_lists_are_home_paths_or_absolute(tmp_path: Path) -> None:
    for raw in (*HOME_READABLE, *DEFAULT_DENY_READ):
        assert raw.startswith(("~/", "/")), raw
    assert not set(HOME_READABLE) & set(DEFAULT_DENY_READ)


def test_the_walls_say_what_they_read(tmp_path: Path) -> None:
    home = _home(tmp_path)
    lines = _walls(tmp_path, home).describe()
    reads = next(line for line in lines if line.startswith("reads:"))
    assert "only what builds need" in reads and "~/.rustup" in reads
    never = next(line for line in lines if line.startswith("never:"))
    assert "~/.config/git/credentials" in never


def test_sessions_temp_folders_share_one_folder_of_their_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = sessions_folder()
    assert folder == (tmp_path / "cache" / "coder-agent" / "sessions").resolve()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    folder.chmod(0o755)
    assert stat.S_IMODE(sessions_folder().stat().st_mode) == 0o700  # tightened again
    if os.getuid() == 0:
        os.chown(folder, 4242, 4242)
        with pytest.raises(OSError, match="not a folder of yours"):
            sessions_folder()
    folder.rmdir()
    folder.symlink_to(tmp_path)
    with pytest.raises(OSError, match="not a folder of yours"):
        sessions_folder()


def test_each_project_has_caches_of_its_own(tmp_path: Path) -> None:
    one, other = project_cache((tmp_path / "a",)), project_cache((tmp_path / "b",))
    assert one != other and one.parent == other.parent
    assert project_cache((tmp_path / "a",)) == one
    assert project_cache((tmp_path / "a", tmp_path / "b")) not in (one, other)


# ---- the Seatbelt profile --------------------------------------------------------------------------------------


def _rules(text: str) -> list[str]:
    return [line for line in text.splitlines() if "(param " in line]


def test_the_seatbelt_profile_orders_its_rules_so_the_right_one_wins() -> None:
    spec = {
        "home": ["/Users/u"],
        "read": ["/Users/u/.rustup"],
        "deny": ["/Users/u/.ssh", "/T/sessions", "/Users/u/project/secret"],
        "write": ["/Users/u/project", "/T/sessions/mine/tmp"],
        "protect": ["/Users/u/project/.git/hooks"],
        "pin": ["/Users/u/project/.git"],
    }
    text, params = seatbelt.profile(spec, proxy=False)
    rules = _rules(text)
    kinds = [re.sub(r'\(param "([A-Z]+)\d+"\)', r"\1", rule) for rule in rules]
    assert kinds == [
        "(deny file-read-data (subpath HOME))",  # names and attributes stay visible: paths through it resolve
        "(allow file-read* (subpath READ))",
        "(deny file-read* file-write* (subpath DENY) (subpath DENY) (subpath DENY))",
        "(allow file-read* file-write* (subpath WRITE) (subpath WRITE))",  # its own temp, inside a kept-out one
        "(deny file-write* (subpath PROTECT))",
        "(deny file-write* (literal PIN))",  # the .git folder itself: not renamed away, not removed
        "(deny file-read* file-write* (subpath DENYIN))",  # a kept-out path inside a writable place stays out
    ]
    assert params["DENYIN0"] == "/Users/u/project/secret" and params["PIN0"] == "/Users/u/project/.git"


def test_no_path_of_any_kind_is_spliced_into_the_profile() -> None:
    hostile = '/x") (allow default) (deny file-read* (literal "'
    spec = {kind: [hostile + kind] for kind in ("home", "read", "deny", "write", "protect", "pin")}
    text, params = seatbelt.profile(spec, proxy=True)
    assert hostile not in text and "(allow default)" not in text
    assert sorted(params.values()) == sorted(hostile + kind for kind in spec)
