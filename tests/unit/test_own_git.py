"""The agent's own git (`own_git`, and the blob store on it) runs no program a repository names and hands git no
secret, whatever the workspace holds: a config that sets every key that runs a program, filter and diff drivers
named in `.gitattributes`, hooks, a signed commit, a partial clone's lazy fetch, an include, a `.git` file and a
`commondir` that lead elsewhere, a bare repository's layout in a folder, a nested repository behind a gitlink,
a `git` planted on PATH inside the repository. Each attack is first shown to work on a plain `git`, so a test that
passes is not one whose trap never springs. Real git, real repositories, a temporary HOME (the conftest's)."""

from __future__ import annotations

import os
import shutil
import zlib
from pathlib import Path

import pytest

from coder_agent import own_git
from coder_agent.checkpoints import REF_PREFIX, CheckpointError, GitBlobStore, blob_store_for
from tests.support.git_traps import lay_out_bare, make_repo, plain_git

pytestmark = pytest.mark.anyio

SECRETS = {
    "GH_TOKEN": "ghp_own_git_0123456789",
    "NPM_TOKEN": "npm_own_git_0123456789",
    "OPENAI_API_KEY": "sk-own-git-0123456789",
    "REMOTE_URL": "https://u:p4ss-own-git@example.com/r.git",
}


class Trap:
    """Programs that leave a marker (and their environment) when run, under `folder`."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        (folder / "bin").mkdir(parents=True)

    def program(self, label: str) -> str:
        label = label.replace("/", "_").replace(":", "_")
        path = self.folder / "bin" / label
        path.write_text(f'#!/bin/sh\nenv > "{self.folder}/{label}.ran"\nexit 0\n')
        path.chmod(0o755)
        return str(path)

    def sprung(self) -> list[str]:
        return sorted(p.name for p in self.folder.glob("*.ran"))

    def reset(self) -> None:
        for path in self.folder.glob("*.ran"):
            path.unlink()


def plant_everything(repo: Path, trap: Trap, git_dir: Path | None = None) -> None:
    """Every key that makes git run a program, in the repository's own config (and its hooks, attributes, a signed
    commit, an include)."""
    git_dir = git_dir or repo / ".git"
    keys = [
        "core.fsmonitor", "core.pager", "pager.status", "pager.log", "core.editor", "sequence.editor",
        "core.askPass", "core.sshCommand", "core.gitProxy", "core.alternateRefsCommand", "credential.helper",
        "diff.external", "gpg.program", "gpg.openpgp.program", "gpg.x509.program", "gpg.ssh.program",
        "filter.evil.clean", "filter.evil.smudge", "filter.evil.process", "diff.evil.textconv", "diff.evil.command",
        "merge.evil.driver", "credential.https://example.com.helper", "filter.a=b.clean",
    ]  # fmt: skip
    for key in keys:
        plain_git("config", "--file", str(git_dir / "config"), key, trap.program(key), cwd=repo)
    hooks = trap.folder / "hooks"
    hooks.mkdir()
    for hook in ("reference-transaction", "post-index-change", "pre-auto-gc", "post-checkout"):
        shutil.copy(trap.program(f"hook-{hook}"), hooks / hook)
        shutil.copy(trap.program(f"default-hook-{hook}"), git_dir / "hooks" / hook)
    included = trap.folder / "included.config"
    included.write_text(f"[core]\n\tfsmonitor = {trap.program('included.fsmonitor')}\n")
    for key, value in (
        ("core.hooksPath", str(hooks)),
        ("log.showSignature", "true"),
        ("status.submoduleSummary", "true"),
        ("filter.evil.required", "true"),
        ("include.path", str(included)),
    ):
        plain_git("config", "--file", str(git_dir / "config"), key, value, cwd=repo)
    (repo / ".gitattributes").write_text("* filter=evil diff=evil merge=evil\nb.txt filter=a=b\n")
    signed = plain_git("cat-file", "commit", "HEAD", cwd=repo).stdout.replace(
        "\n\n", "\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n x\n -----END PGP SIGNATURE-----\n\n", 1
    )
    made = plain_git("hash-object", "-t", "commit", "-w", "--stdin", cwd=repo, input=signed)
    plain_git("update-ref", "HEAD", made.stdout.strip(), cwd=repo)
    (repo / "a.txt").write_text("b\n")  # the same size, another time: status must read it (the clean filter)
    os.utime(repo / "a.txt", (1, 1))


@pytest.fixture
def trap(tmp_path: Path) -> Trap:
    return Trap(tmp_path / "trap")


@pytest.fixture(autouse=True)
def agent_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("GIT_DIR", "/nonexistent/gitdir")  # the user's GIT_ variables are not ours
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'core.fsmonitor=/bin/false'")


async def read_all(repo: Path, cwd: Path | None = None) -> dict[str, own_git.Ran]:
    """What the agent reads every turn, and the blob store's whole round."""
    cwd = cwd or repo
    root = own_git.find_root(cwd)
    assert root is not None
    blanked = await own_git.blanks(root, cwd, None)
    found = {
        "status": await own_git.run(
            ["status", "--porcelain=v1", "--branch", "--ignore-submodules=all"],
            root=root,
            cwd=cwd,
            sandbox=None,
            blanked=blanked,
        ),
        "log": await own_git.run(["log", "-5", "--format=%H%x00%s"], root=root, cwd=cwd, sandbox=None),
    }
    store = GitBlobStore(cwd, root)
    blob = store.put("s1", b"snapshot\n")
    assert store.get("s1", blob) == b"snapshot\n"
    store.retain("s1", [blob])
    store.retain("s1", [])
    return found


async def test_plain_git_springs_the_traps_and_ours_springs_none(tmp_path: Path, trap: Trap) -> None:
    repo = make_repo(tmp_path / "repo", "a.txt")
    plant_everything(repo, trap)
    plain_git("-c", "gc.auto=1", "status", cwd=repo)
    plain_git("log", "-1", cwd=repo)
    plain_git("update-ref", "refs/x", "HEAD", cwd=repo)
    sprung = trap.sprung()
    for expected in ("filter.evil.process", "hook-reference-transaction", "gpg.openpgp.program", "included.fsmonitor"):
        assert f"{expected}.ran" in sprung, sprung  # the traps work (the included fsmonitor wins over the repo's)
    trap.reset()

    found = await read_all(repo)
    assert found["status"].ok and found["log"].ok
    assert b"## main" in found["status"].out and b"\x00work" in found["log"].out
    assert trap.sprung() == []


async def test_a_partial_clones_lazy_fetch_reaches_no_transport(tmp_path: Path, trap: Trap) -> None:
    repo = make_repo(tmp_path / "repo", "a.txt")
    fetch = trap.program("lazy-fetch")
    for key, value in (
        ("core.repositoryformatversion", "1"),
        ("extensions.partialClone", "origin"),
        ("remote.origin.promisor", "true"),
        ("remote.origin.url", f"ext::{fetch}"),
        ("protocol.ext.allow", "always"),
        ("protocol.allow", "always"),
    ):
        plain_git("config", key, value, cwd=repo)
    missing = "1" * 40
    plain_git("cat-file", "blob", missing, cwd=repo)
    assert trap.sprung() == ["lazy-fetch.ran"]
    trap.reset()
    with pytest.raises(CheckpointError):
        GitBlobStore(repo).get("s", missing)
    assert trap.sprung() == []


async def test_a_bare_layout_in_a_folder_is_refused_not_used(tmp_path: Path, trap: Trap) -> None:
    """HEAD, config, objects/ and refs/ committed in a folder of a repository: a session opened there."""
    repo = make_repo(tmp_path / "repo", "a.txt")
    pkg = repo / "pkg"
    lay_out_bare(pkg, trap.program("fs"))
    plain_git("add", "pkg", cwd=repo)
    plain_git("commit", "-qm", "a bare layout", cwd=repo)
    plain_git("status", cwd=pkg)
    assert trap.sprung() == ["fs.ran"]
    trap.reset()

    root = own_git.find_root(pkg)
    assert root == repo
    listed = await own_git.run(["config", "--list"], root=repo, cwd=pkg, sandbox=None)
    status = await own_git.run(["status", "--porcelain=v1"], root=repo, cwd=pkg, sandbox=None)
    assert b"worktree" not in listed.out and not status.ok  # refused: git says "cannot use bare repository"
    assert blob_store_for(pkg, tmp_path / "data").__class__.__name__ == "FileBlobStore"
    assert trap.sprung() == []


async def test_a_git_file_or_commondir_leading_elsewhere_runs_nothing(tmp_path: Path, trap: Trap) -> None:
    elsewhere = make_repo(tmp_path / "elsewhere", "a.txt")
    plant_everything(elsewhere, trap)
    trap.reset()
    by_file = make_repo(tmp_path / "by-file", "a.txt")
    shutil.rmtree(by_file / ".git")
    (by_file / ".git").write_text(f"gitdir: {elsewhere / '.git'}\n")
    by_commondir = make_repo(tmp_path / "by-commondir", "a.txt")
    (by_commondir / ".git" / "commondir").write_text(f"{elsewhere / '.git'}\n")
    for repo in (by_file, by_commondir):
        plain_git("status", cwd=repo)
        assert trap.sprung(), f"the redirect in {repo.name} does not lead to the planted config"
        trap.reset()
        await read_all(repo)
        assert trap.sprung() == [], repo.name


async def test_a_nested_repository_behind_a_gitlink_is_not_entered(tmp_path: Path, trap: Trap) -> None:
    repo = make_repo(tmp_path / "repo", "a.txt")
    nested = make_repo(repo / "sub", "a.txt")
    plain_git("config", "core.fsmonitor", trap.program("nested-fsmonitor"), cwd=nested)
    (nested / "a.txt").write_text("dirty\n")
    plain_git("add", "sub", cwd=repo)
    plain_git("status", cwd=repo)
    assert trap.sprung() == ["nested-fsmonitor.ran"]
    trap.reset()
    await read_all(repo)
    assert trap.sprung() == []


async def test_git_gets_no_secret_and_none_of_the_users_git_variables(
    tmp_path: Path, trap: Trap, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `git` first on PATH (outside the repository) that writes down the environment it was given."""
    repo = make_repo(tmp_path / "repo", "a.txt")
    bin_folder = tmp_path / "fake-bin"
    bin_folder.mkdir()
    fake = bin_folder / "git"
    fake.write_text(f'#!/bin/sh\nenv > "{tmp_path}/git.env"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_folder}{os.pathsep}{os.environ['PATH']}")
    await own_git.run(["status"], root=repo, cwd=repo, sandbox=None)
    env = dict(line.split("=", 1) for line in (tmp_path / "git.env").read_text().splitlines() if "=" in line)
    for name, value in SECRETS.items():
        assert name not in env and all(value not in v for v in env.values()), name
    assert "GIT_DIR" not in env and "GIT_CONFIG_PARAMETERS" not in env
    assert env["GIT_ALLOW_PROTOCOL"] == "none" and env["GIT_WORK_TREE"] == str(repo)


def test_a_git_planted_on_path_inside_the_repository_is_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo", "a.txt")
    venv_bin = repo / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "git").write_text("#!/bin/sh\nexit 0\n")
    (venv_bin / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{venv_bin}{os.pathsep}relative/bin{os.pathsep}{os.environ['PATH']}")
    chosen = own_git.program(repo)
    assert chosen != str(venv_bin / "git") and Path(chosen).is_absolute()


def test_a_rewritten_or_replaced_snapshot_is_not_handed_back(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", "a.txt")
    store = GitBlobStore(repo)
    blob = store.put("s", b"what the file was\n")
    other = store.put("s", b"what an attacker wants written back\n")
    plain_git("replace", blob, other, cwd=repo)
    assert store.get("s", blob) == b"what the file was\n"  # replace refs are ignored
    loose = repo / ".git" / "objects" / blob[:2] / blob[2:]
    loose.unlink()
    loose.write_bytes(zlib.compress(b"blob 7\0forged\n"))
    with pytest.raises(CheckpointError, match="not what was stored"):
        store.get("s", blob)


def test_the_private_ref_made_a_symbolic_ref_moves_no_branch(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", "a.txt")
    store = GitBlobStore(repo)
    blob = store.put("s", b"x\n")
    head = plain_git("rev-parse", "main", cwd=repo).stdout.strip()
    plain_git("symbolic-ref", f"{REF_PREFIX}s", "refs/heads/main", cwd=repo)
    store.retain("s", [blob])
    assert plain_git("rev-parse", "main", cwd=repo).stdout.strip() == head
