"""The sandbox's pure parts: the spec's encoding, the seccomp program, the walls built from folders and settings,
the Seatbelt profile, and what counts as a command hitting the walls."""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import pytest
from pydantic import ValidationError

from coder_agent.sandbox import seatbelt, seccomp
from coder_agent.sandbox.command import hit_walls
from coder_agent.sandbox.settings import REGISTRY_HOSTS, SandboxConfig
from coder_agent.sandbox.spec import decode, encode
from coder_agent.sandbox.walls import Unwallable, build_walls


def test_the_spec_survives_any_path() -> None:
    spec = {"write": ["/a b", "/100%/x", "/new\nline", "/=eq"], "deny": ["/%0A"], "max_processes": ["64"]}
    assert decode(encode(spec)) == spec


def test_a_malformed_spec_is_refused() -> None:
    with pytest.raises(ValueError, match="malformed"):
        decode("write=/a\nnonsense")


@pytest.mark.parametrize("arch", sorted(seccomp.SYSCALLS))
def test_the_seccomp_program_is_well_formed(arch: str) -> None:
    program = seccomp.filter_program(arch, frozenset({seccomp.AF_INET}))
    assert len(program) % 8 == 0
    instructions = [struct.unpack_from("=HBBI", program, i) for i in range(0, len(program), 8)]
    for index, (code, jt, jf, _) in enumerate(instructions):
        if code & 0x07 == 0x05:  # a jump: both targets inside the program, forward only (BPF)
            assert index + 1 + max(jt, jf) < len(instructions)
    returns = {k for code, _, _, k in instructions if code == 0x06}
    assert instructions[-1][0] == 0x06  # every path ends in a return
    assert returns == {
        seccomp.RET_ALLOW,
        seccomp.RET_ERRNO | seccomp.EPERM,
        seccomp.RET_ERRNO | seccomp.ENOSYS,
        seccomp.RET_ERRNO,
    }
    assert instructions[1][3] == seccomp.AUDIT_ARCH[arch]  # the architecture is checked first
    denied = {k for code, _, _, k in instructions if code == 0x15}
    assert {seccomp.SYSCALLS[arch][name] for name in ("mount", "unshare", "ptrace", "bpf")} <= denied


def test_no_filter_for_an_unknown_architecture() -> None:
    with pytest.raises(seccomp.Unsupported):
        seccomp.filter_program("sparc64")


def test_settings_spell_out_presets_and_refuse_nonsense() -> None:
    settings = SandboxConfig(allow_hosts=["@registries", "Example.COM.", "*.github.com"])
    assert set(REGISTRY_HOSTS) <= set(settings.hosts())
    assert "example.com" in settings.hosts() and "*.github.com" in settings.hosts()
    for bad in (["@everything"], ["http://x"], [" "], ["a b"]):
        with pytest.raises(ValidationError):
            SandboxConfig(allow_hosts=bad)


def _repo(root: Path) -> Path:
    work = root / "work"
    work.mkdir()
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    (work / ".coder-agent").mkdir()
    return work


def test_walls_of_a_repository(tmp_path: Path) -> None:
    work = _repo(tmp_path)
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".npmrc").write_text("token")
    settings = SandboxConfig(
        writable=[str(tmp_path), "/does/not/exist"], deny_read=["~/secret", "~/later"], allow_read=["~/.npmrc"]
    )
    (home / "secret").write_text("x")
    walls = build_walls((work,), settings, temp=tmp_path, cache=tmp_path, proxy_socket=None, home=home)
    spec = walls.spec()
    assert str(work) in spec["write"] and str(tmp_path) in spec["write"]
    assert str(work / ".git") in spec["pin"]
    assert {str(work / ".git/hooks"), str(work / ".git/config"), str(work / ".coder-agent")} <= set(spec["protect"])
    assert str(home / ".ssh") in spec["deny"] and str(home / "secret") in spec["deny"]
    assert str(home / "later") in spec["deny"] and str(home / ".aws") in spec["deny"]  # kept out should they appear
    assert str(home / ".npmrc") not in spec["deny"]  # allowed back
    assert walls.missing == ("/does/not/exist",)
    assert walls.environment()["TMPDIR"] == str(tmp_path)
    assert walls.environment()["HTTPS_PROXY"] == ""  # no proxy: the user's own is no way out either
    assert any("network: none" in line for line in walls.describe())


def test_a_missing_hooks_folder_is_made_before_it_is_protected(tmp_path: Path) -> None:
    work = _repo(tmp_path)
    subprocess.run(["rm", "-rf", str(work / ".git/hooks")], check=True)
    walls = build_walls((work,), SandboxConfig(), temp=tmp_path, cache=tmp_path, proxy_socket=None, home=tmp_path / "h")
    assert str(work / ".git/hooks") in walls.spec()["protect"]
    assert (work / ".git/hooks").is_dir()


def test_a_worktree_writes_its_main_repository_but_not_its_hooks(tmp_path: Path) -> None:
    main = _repo(tmp_path)
    git = ["git", "-C", str(main), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    tree = tmp_path / "tree"
    subprocess.run([*git, "worktree", "add", "-q", str(tree)], check=True)
    spec = build_walls(
        (tree,), SandboxConfig(), temp=tmp_path, cache=tmp_path, proxy_socket=None, home=tmp_path / "h"
    ).spec()
    assert str(main / ".git") in spec["write"] and str(main / ".git") in spec["pin"]
    assert {str(main / ".git/hooks"), str(main / ".git/config"), str(tree / ".git")} <= set(spec["protect"])


@pytest.mark.parametrize("root", ["home", "parent-of-home", "/"])
def test_a_folder_holding_the_home_folder_cannot_be_walled(tmp_path: Path, root: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    folder = {"home": home, "parent-of-home": tmp_path, "/": Path("/")}[root]
    with pytest.raises(Unwallable, match="home folder"):
        build_walls((folder,), SandboxConfig(), temp=tmp_path, cache=tmp_path, proxy_socket=None, home=home)


def test_the_seatbelt_profile_takes_paths_as_parameters_only() -> None:
    hostile = '/x") (allow default) ("'
    spec = {"write": [hostile], "protect": ["/w/.git/hooks"], "deny": ["/h/.ssh"], "pin": ["/w/.git"]}
    text, params = seatbelt.profile(spec, proxy=False)
    assert hostile not in text and params["WRITE0"] == hostile
    assert "(deny default)" in text and '(allow file-read* file-write* (subpath (param "WRITE0")))' in text
    assert '(deny file-write* (subpath (param "PROTECT0")))' in text
    assert '(deny file-read* file-write* (subpath (param "DENY0")))' in text
    assert "unix-socket" not in text
    proxied, _ = seatbelt.profile({**spec, "unix_sockets": ["yes"]}, proxy=True, proxy_port=40123)
    assert '(allow network-outbound (remote ip "localhost:40123"))' in proxied and "(remote unix-socket)" in proxied
    assert "localhost:*" not in proxied and "network-bind" not in proxied
    no_port, _ = seatbelt.profile(spec, proxy=True)  # the proxy has no port: no network at all
    assert "network-outbound" not in no_port and "network-bind" not in no_port
    argv = seatbelt.argv(spec, ["bash", "-c", "true"], proxy=False)
    assert argv[:2] == [seatbelt.SANDBOX_EXEC, "-p"] and argv[-3:] == ["bash", "-c", "true"]
    assert f"WRITE0={hostile}" in argv


@pytest.mark.parametrize(
    ("output", "code", "launcher"),
    [
        ("touch: cannot touch '/etc/x': Read-only file system", 1, False),
        ("bash: /home/u/.bashrc: Permission denied", 1, False),
        ("curl: (6) Could not resolve host: example.com", 6, False),
        ("ERROR: Could not install packages due to an OSError: Tunnel connection failed: 403 Forbidden", 1, False),
        ("coder-agent sandbox: mount on /w/.git failed: Permission denied; the command was not run", 125, True),
    ],
)
def test_what_hitting_the_walls_looks_like(output: str, code: int, launcher: bool) -> None:
    hit = hit_walls(f"some output\n{output}\nmore", code)
    assert hit is not None and hit.launcher is launcher and hit.evidence == output


def test_a_success_or_an_ordinary_failure_is_not_a_hit() -> None:
    assert hit_walls("Permission denied", 0) is None
    assert hit_walls("FAILED tests/test_a.py::test_x - assert 1 == 2", 1) is None
