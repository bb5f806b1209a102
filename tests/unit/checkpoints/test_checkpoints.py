"""Tests for coder_agent.checkpoints: snapshots, undo plans, the git and file blob stores, and git state left alone.

Git repositories are real ones created in tmp_path with gitpython; nothing is mocked.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import git
import pytest

from coder_agent.checkpoints import (
    REF_PREFIX,
    BlobStore,
    CheckpointError,
    Checkpoints,
    FileBlobStore,
    FileRestore,
    FileSnapshot,
    GitBlobStore,
    TurnCheckpoint,
    UndoPlan,
    blob_store_for,
    release_session,
)

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _no_enclosing_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep git from finding a repository above tmp_path, and from reading the user's git config."""
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


def make_repo(path: Path) -> git.Repo:
    path.mkdir(parents=True, exist_ok=True)
    repo = git.Repo.init(path)
    with repo.config_writer() as config:
        config.set_value("user", "name", "Test")
        config.set_value("user", "email", "test@example.com")
        config.set_value("commit", "gpgsign", "false")
    (path / "a.txt").write_text("a0\n", encoding="utf-8")
    (path / "b.txt").write_text("b0\n", encoding="utf-8")
    repo.git.add("a.txt", "b.txt")
    repo.git.commit("-m", "init")
    return repo


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[git.Repo]:
    repo = make_repo(tmp_path / "repo")
    yield repo
    repo.close()


@pytest.fixture(params=["git", "plain"])
def workspace(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, BlobStore]]:
    """A project folder and the store it gets: inside a git repository, or outside any."""
    if request.param == "git":
        repo = make_repo(tmp_path / "project")
        yield tmp_path / "project", GitBlobStore(tmp_path / "project")
        repo.close()
    else:
        project = tmp_path / "project"
        project.mkdir()
        (project / "a.txt").write_text("a0\n", encoding="utf-8")
        (project / "b.txt").write_text("b0\n", encoding="utf-8")
        yield project, FileBlobStore(tmp_path / "data" / "blobs")


async def write(checkpoints: Checkpoints, path: Path, text: str) -> None:
    """What a file-writing tool does: snapshot, write, note what it wrote."""
    await checkpoints.before_change(path, read_or_none(path))
    write_file(path, text)
    checkpoints.after_change(path, text)


def read_or_none(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.exists() else None


def write_file(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def carry_out(plan: UndoPlan) -> None:
    """What `/undo` does with a plan (through the editor there): write each file back, or delete it."""
    for restore in plan.files:
        path = Path(restore.path)
        if restore.text is None:
            path.unlink(missing_ok=True)
        else:
            write_file(path, restore.text)


def private_refs(repo: git.Repo) -> list[str]:
    return [line for line in repo.git.for_each_ref(REF_PREFIX).splitlines() if line]


# --- undo, in and out of git ----------------------------------------------------------------------------------------


async def test_snapshot_and_undo_restores_content(workspace: tuple[Path, BlobStore]) -> None:
    cwd, store = workspace
    checkpoints = Checkpoints(cwd, store, session_id="s1")
    checkpoints.begin_turn("t1")
    await write(checkpoints, cwd / "a.txt", "a1\n")
    checkpoint = checkpoints.end_turn()
    assert checkpoint is not None
    assert checkpoint.turn_id == "t1"
    assert [f.path for f in checkpoint.files] == [str(cwd / "a.txt")]
    assert checkpoints.history == [checkpoint]

    plan = await checkpoints.undo_last()
    assert plan is not None
    assert plan.turn_id == "t1"
    assert plan.files == (FileRestore(str(cwd / "a.txt"), "a0\n", changed_since=False),)
    assert plan.changed_since == []
    assert (cwd / "a.txt").read_text(encoding="utf-8") == "a1\n"  # a plan, not a write
    assert checkpoints.history == []

    carry_out(plan)
    assert (cwd / "a.txt").read_text(encoding="utf-8") == "a0\n"
    assert await checkpoints.undo_last() is None


async def test_file_created_by_the_turn_is_planned_for_deletion(workspace: tuple[Path, BlobStore]) -> None:
    cwd, store = workspace
    checkpoints = Checkpoints(cwd, store)
    checkpoints.begin_turn("t1")
    await write(checkpoints, cwd / "new" / "made.py", "print('hi')\n")
    checkpoint = checkpoints.end_turn()
    assert checkpoint is not None
    assert checkpoint.files[0].blob is None

    plan = await checkpoints.undo_last()
    assert plan is not None
    assert plan.files == (FileRestore(str(cwd / "new" / "made.py"), None),)
    assert plan.files[0].delete
    carry_out(plan)
    assert not (cwd / "new" / "made.py").exists()


async def test_multiple_files_and_changes_keep_the_first_snapshot(workspace: tuple[Path, BlobStore]) -> None:
    cwd, store = workspace
    checkpoints = Checkpoints(cwd, store)
    checkpoints.begin_turn("t1")
    await write(checkpoints, cwd / "b.txt", "b1\n")
    await write(checkpoints, cwd / "a.txt", "a1\n")
    await write(checkpoints, cwd / "b.txt", "b2\n")
    await write(checkpoints, cwd / "c.txt", "c1\n")
    await write(checkpoints, cwd / "a.txt", "a2\n")
    await write(checkpoints, cwd / "c.txt", "c2\n")
    checkpoint = checkpoints.end_turn()
    assert checkpoint is not None
    assert [Path(f.path).name for f in checkpoint.files] == ["b.txt", "a.txt", "c.txt"]

    plan = await checkpoints.undo_last()
    assert plan is not None
    assert [(Path(f.path).name, f.text) for f in plan.files] == [("b.txt", "b0\n"), ("a.txt", "a0\n"), ("c.txt", None)]
    assert plan.changed_since == []
    carry_out(plan)
    assert (cwd / "a.txt").read_text(encoding="utf-8") == "a0\n"
    assert (cwd / "b.txt").read_text(encoding="utf-8") == "b0\n"
    assert not (cwd / "c.txt").exists()


async def test_two_turns_undo_in_lifo_order(workspace: tuple[Path, BlobStore]) -> None:
    cwd, store = workspace
    checkpoints = Checkpoints(cwd, store)
    checkpoints.begin_turn("t1")
    await write(checkpoints, cwd / "a.txt", "a1\n")
    checkpoints.end_turn()
    checkpoints.begin_turn("quiet")
    assert checkpoints.end_turn() is None  # a turn that changed nothing leaves no checkpoint
    checkpoints.begin_turn("t2")
    await write(checkpoints, cwd / "a.txt", "a2\n")
    await write(checkpoints, cwd / "d.txt", "d1\n")
    checkpoints.end_turn()
    assert [c.turn_id for c in checkpoints.history] == ["t1", "t2"]

    second = await checkpoints.undo_last()
    assert second is not None
    assert second.turn_id == "t2"
    assert [(Path(f.path).name, f.text) for f in second.files] == [("a.txt", "a1\n"), ("d.txt", None)]
    carry_out(second)

    first = await checkpoints.undo_last()
    assert first is not None
    assert first.turn_id == "t1"
    assert [(Path(f.path).name, f.text, f.changed_since) for f in first.files] == [("a.txt", "a0\n", False)]
    carry_out(first)
    assert (cwd / "a.txt").read_text(encoding="utf-8") == "a0\n"
    assert not (cwd / "d.txt").exists()
    assert await checkpoints.undo_last() is None


async def test_file_edited_by_the_user_after_the_turn_is_flagged(workspace: tuple[Path, BlobStore]) -> None:
    cwd, store = workspace
    checkpoints = Checkpoints(cwd, store)
    checkpoints.begin_turn("t1")
    await write(checkpoints, cwd / "a.txt", "a1\n")
    await write(checkpoints, cwd / "b.txt", "b1\n")
    await write(checkpoints, cwd / "new.txt", "n1\n")
    checkpoints.end_turn()
    (cwd / "a.txt").write_text("a1 and the user's line\n", encoding="utf-8")
    (cwd / "new.txt").unlink()

    plan = await checkpoints.undo_last()
    assert plan is not None
    assert plan.changed_since == [str(cwd / "a.txt"), str(cwd / "new.txt")]
    by_name = {Path(f.path).name: f for f in plan.files}
    assert by_name["a.txt"].text == "a0\n"  # still restores the content from before the turn
    assert not by_name["b.txt"].changed_since


async def test_undo_reads_current_content_through_the_callers_reader(workspace: tuple[Path, BlobStore]) -> None:
    cwd, store = workspace
    checkpoints = Checkpoints(cwd, store)
    checkpoints.begin_turn("t1")
    await write(checkpoints, cwd / "a.txt", "a1\n")
    await write(checkpoints, cwd / "b.txt", "b1\n")
    checkpoints.end_turn()
    editor_buffers = {str(cwd / "a.txt"): "a1 edited in an unsaved buffer\n", str(cwd / "b.txt"): "b1\n"}
    read_paths: list[Path] = []

    async def read_current(path: Path) -> str | None:
        read_paths.append(path)
        return editor_buffers.get(str(path))

    plan = await checkpoints.undo_last(read_current)
    assert plan is not None
    assert read_paths == [cwd / "a.txt", cwd / "b.txt"]
    assert plan.changed_since == [str(cwd / "a.txt")]


async def test_unrecorded_after_state_is_not_flagged(workspace: tuple[Path, BlobStore]) -> None:
    cwd, store = workspace
    checkpoints = Checkpoints(cwd, store)
    checkpoints.begin_turn("t1")
    await checkpoints.before_change(cwd / "a.txt", "a0\n")  # the write then failed: no after_change
    checkpoints.end_turn()
    plan = await checkpoints.undo_last()
    assert plan is not None
    assert plan.files == (FileRestore(str(cwd / "a.txt"), "a0\n", changed_since=False),)


async def test_relative_paths_are_resolved_against_cwd(workspace: tuple[Path, BlobStore]) -> None:
    cwd, store = workspace
    checkpoints = Checkpoints(cwd, store)
    checkpoints.begin_turn("t1")
    await checkpoints.before_change(Path("sub/../a.txt"), "a0\n")
    await checkpoints.before_change(cwd / "a.txt", "a1\n")
    checkpoints.after_change(Path("a.txt"), "a2\n")
    checkpoint = checkpoints.end_turn()
    assert checkpoint is not None
    assert len(checkpoint.files) == 1
    assert checkpoint.files[0].path == str(cwd / "a.txt")
    assert checkpoint.files[0].after is not None


async def test_undo_ends_an_open_turn_first(workspace: tuple[Path, BlobStore]) -> None:
    cwd, store = workspace
    checkpoints = Checkpoints(cwd, store)
    checkpoints.begin_turn("t1")
    await write(checkpoints, cwd / "a.txt", "a1\n")
    plan = await checkpoints.undo_last()
    assert plan is not None
    assert plan.turn_id == "t1"
    with pytest.raises(CheckpointError, match="outside a turn"):  # the turn was ended
        await checkpoints.before_change(cwd / "a.txt", "a1\n")


async def test_before_change_outside_a_turn_is_refused(tmp_path: Path) -> None:
    checkpoints = Checkpoints(tmp_path, FileBlobStore(tmp_path / "blobs"))
    with pytest.raises(CheckpointError, match="begin_turn"):
        await checkpoints.before_change(tmp_path / "a.txt", "x")


async def test_text_round_trips_exactly(workspace: tuple[Path, BlobStore]) -> None:
    cwd, store = workspace
    texts = ["", "\n\n\n", "no newline", "crlf\r\nline\r\n", "ünïcødé ✓ 🎉\n", "bad byte \udcff kept\n"]
    for index, text in enumerate(texts):
        checkpoints = Checkpoints(cwd, store)
        checkpoints.begin_turn(f"t{index}")
        await checkpoints.before_change(cwd / "a.txt", text)
        checkpoints.end_turn()
        plan = await checkpoints.undo_last()
        assert plan is not None
        assert plan.files[0].text == text


# --- git state left alone ---------------------------------------------------------------------------------------------


def index_file(repo: git.Repo) -> tuple[bytes, int]:
    index = Path(repo.git_dir) / "index"
    return index.read_bytes(), index.stat().st_mtime_ns


def git_state(repo: git.Repo) -> dict[str, object]:
    """What the user sees of the repository (reading it may refresh the index's stat data, so that is apart)."""
    return {
        "head": repo.git.rev_parse("HEAD"),
        "symbolic_head": repo.git.symbolic_ref("HEAD"),
        "branches": repo.git.branch("--all", "--verbose", "--no-abbrev"),
        "tags": repo.git.tag(),
        "stash": repo.git.stash("list"),
        "cached": repo.git.diff("--cached"),
        "diff": repo.git.diff(),
        "status": repo.git.status("--porcelain=v1", "--untracked-files=all"),
        "log_all": repo.git.log("--all", "--oneline", "--graph"),
        "heads_and_tags": repo.git.for_each_ref("refs/heads", "refs/tags", "refs/stash"),
    }


async def test_snapshotting_leaves_index_head_branches_stash_and_status_alone(repo: git.Repo) -> None:
    cwd = Path(repo.working_tree_dir or "")
    repo.git.branch("feature")
    (cwd / "a.txt").write_text("a stashed\n", encoding="utf-8")
    repo.git.stash("push", "-m", "user's stash")
    (cwd / "a.txt").write_text("a staged\n", encoding="utf-8")
    repo.git.add("a.txt")
    (cwd / "a.txt").write_text("a staged, then edited\n", encoding="utf-8")
    (cwd / "untracked.txt").write_text("u\n", encoding="utf-8")
    before = git_state(repo)
    index_before = index_file(repo)

    checkpoints = Checkpoints(cwd, session_id="s1")  # the store is chosen: git, here
    checkpoints.begin_turn("t1")
    await checkpoints.before_change(cwd / "a.txt", (cwd / "a.txt").read_text(encoding="utf-8"))
    await checkpoints.before_change(cwd / "a.txt", "ignored: not the first change")
    await checkpoints.before_change(cwd / "b.txt", "b0\n")
    await checkpoints.before_change(cwd / "untracked.txt", "u\n")
    await checkpoints.before_change(cwd / "created.txt", None)
    checkpoint = checkpoints.end_turn()
    assert checkpoint is not None
    assert len(checkpoint.files) == 4

    assert index_file(repo) == index_before
    assert git_state(repo) == before
    refs = private_refs(repo)
    assert refs == [f"{repo.git.rev_parse(REF_PREFIX + 's1')} tree\t{REF_PREFIX}s1"]

    index_before = index_file(repo)  # `git status` above may have refreshed it
    plan = await checkpoints.undo_last()
    assert plan is not None
    assert plan.files[0].text == "a staged, then edited\n"
    assert index_file(repo) == index_before
    assert git_state(repo) == before


async def test_blobs_survive_gc_because_of_the_private_ref(repo: git.Repo) -> None:
    cwd = Path(repo.working_tree_dir or "")
    store = GitBlobStore(cwd)
    unprotected = store.put("s1", b"nobody keeps me\n")
    checkpoints = Checkpoints(cwd, store, session_id="s1")
    checkpoints.begin_turn("t1")
    await write(checkpoints, cwd / "a.txt", "a1\n")
    await write(checkpoints, cwd / "brand-new.txt", "fresh content that only the snapshot knows\n")
    checkpoints.end_turn()
    checkpoints.begin_turn("t2")
    await write(checkpoints, cwd / "brand-new.txt", "second\n")
    checkpoints.end_turn()
    blobs = [f.blob for c in checkpoints.history for f in c.files if f.blob is not None]
    assert len(blobs) == 2

    repo.git.reflog("expire", "--expire=now", "--all")
    repo.git.gc("--prune=now", "--quiet")

    with pytest.raises(git.GitCommandError):
        repo.git.cat_file("-e", unprotected)  # the control: an unreferenced blob is pruned
    for blob in blobs:
        repo.git.cat_file("-e", blob)
    second = await checkpoints.undo_last()
    assert second is not None
    assert second.files[0].text == "fresh content that only the snapshot knows\n"
    first = await checkpoints.undo_last()
    assert first is not None
    assert [f.text for f in first.files] == ["a0\n", None]


async def test_undo_releases_blobs_and_deleting_the_session_drops_the_ref(repo: git.Repo) -> None:
    cwd = Path(repo.working_tree_dir or "")
    checkpoints = Checkpoints(cwd, GitBlobStore(cwd), session_id="s1")
    checkpoints.begin_turn("t1")
    await write(checkpoints, cwd / "a.txt", "a1\n")
    checkpoints.end_turn()
    checkpoints.begin_turn("t2")
    await write(checkpoints, cwd / "b.txt", "b1\n")
    checkpoints.end_turn()
    ref = REF_PREFIX + "s1"
    a_blob, b_blob = checkpoints.history[0].files[0].blob, checkpoints.history[1].files[0].blob
    assert set(repo.git.ls_tree("--name-only", ref).split()) == {a_blob, b_blob}

    await checkpoints.undo_last()
    assert repo.git.ls_tree("--name-only", ref).split() == [a_blob]
    release_session("s1", str(cwd))
    assert private_refs(repo) == []


async def test_sessions_in_one_repository_keep_separate_refs(repo: git.Repo) -> None:
    cwd = Path(repo.working_tree_dir or "")
    one, two = Checkpoints(cwd, session_id="one"), Checkpoints(cwd, session_id="two/odd name")
    for checkpoints in (one, two):
        checkpoints.begin_turn("t1")
        await write(checkpoints, cwd / "a.txt", f"{checkpoints.session_id}\n")
        checkpoints.end_turn()
    refs = [line.split("\t")[1] for line in private_refs(repo)]
    assert refs == [REF_PREFIX + "one", GitBlobStore.ref_for("two/odd name")]
    assert GitBlobStore.ref_for("two/odd name").startswith(REF_PREFIX + "two_odd_name-")
    release_session("one", str(cwd))
    assert [line.split("\t")[1] for line in private_refs(repo)] == [GitBlobStore.ref_for("two/odd name")]


def test_git_blob_ids_are_git_object_ids(repo: git.Repo) -> None:
    store = GitBlobStore(Path(repo.working_tree_dir or ""))
    data = b"trailing newlines kept\n\n"
    blob = store.put("s1", data)
    assert blob == hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
    assert repo.git.cat_file("-t", blob) == "blob"
    assert store.get("s1", blob) == data
    with pytest.raises(CheckpointError):
        store.get("s1", "HEAD")
    with pytest.raises(CheckpointError):
        store.get("s1", "0" * 40)


# --- the file store -------------------------------------------------------------------------------------------------


def test_file_store_is_content_addressed_and_atomic(tmp_path: Path) -> None:
    store = FileBlobStore(tmp_path / "blobs")
    first = store.put("s1", b"same\r\n")
    assert store.put("s1", b"same\r\n") == first
    assert len(first) == 64
    files = [p for p in (tmp_path / "blobs").rglob("*") if p.is_file()]
    assert files == [tmp_path / "blobs" / "sessions" / "s1" / first]
    assert store.get("s1", first) == b"same\r\n"
    assert store.get("s1", store.put("s1", b"")) == b""


def test_file_store_refuses_bad_ids_and_reports_missing_or_corrupt_blobs(tmp_path: Path) -> None:
    store = FileBlobStore(tmp_path / "blobs")
    for bad in ["../../etc/passwd", "a" * 40, "A" * 64, ""]:
        with pytest.raises(CheckpointError, match="not a snapshot id"):
            store.get("s1", bad)
    with pytest.raises(CheckpointError, match="gone"):
        store.get("s1", "0" * 64)
    blob = store.put("s1", b"original")
    (tmp_path / "blobs" / "sessions" / "s1" / blob).write_bytes(b"tampered")
    with pytest.raises(CheckpointError, match="corrupt"):
        store.get("s1", blob)


def age(path: Path, seconds: float = 2 * 3600) -> None:
    """Make a file look `seconds` old (older than the hour a released blob is kept)."""
    then = time.time() - seconds
    os.utime(path, (then, then))


def blob_files(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()} if folder.exists() else set()


async def test_blobs_that_fall_out_of_history_are_deleted_once_an_hour_old(tmp_path: Path) -> None:
    project = tmp_path / "project"
    write_file(project / "a.txt", "a0\n")
    write_file(project / "b.txt", "b0\n")
    store = FileBlobStore(tmp_path / "blobs")
    folder = store.folder("s1")
    checkpoints = Checkpoints(project, store, session_id="s1")
    for turn, name in (("t1", "a.txt"), ("t2", "b.txt")):
        checkpoints.begin_turn(turn)
        await write(checkpoints, project / name, f"{name} changed\n")
        checkpoints.end_turn()
    a_blob, b_blob = (c.files[0].blob for c in checkpoints.history)
    assert blob_files(folder) == {a_blob, b_blob}

    assert await checkpoints.undo_last() is not None  # t2 leaves the history: b's snapshot is released ...
    assert blob_files(folder) == {a_blob, b_blob}  # ... but kept while it is young
    age(folder / str(a_blob))
    age(folder / str(b_blob))
    checkpoints.begin_turn("t3")  # the next change of the history collects it
    await write(checkpoints, project / "c.txt", "c1\n")  # (a new file: no snapshot, so nothing is put) ...
    await write(checkpoints, project / "b.txt", "b changed again\n")  # ... this one is put, and retains
    checkpoints.end_turn()
    b_again = checkpoints.history[-1].files[1].blob
    assert blob_files(folder) == {a_blob, b_again}  # the old released one is gone; a's is still needed
    assert b_again != b_blob

    age(folder / str(b_again))
    assert await checkpoints.undo_last() is not None
    assert await checkpoints.undo_last() is not None
    assert not folder.exists()  # nothing left: the session's folder goes too


def test_file_store_retain_is_bounded_by_its_owner(tmp_path: Path) -> None:
    store = FileBlobStore(tmp_path / "blobs")
    mine = store.put("mine", b"shared content")
    theirs = store.put("theirs", b"shared content")
    assert mine == theirs
    age(store.folder("mine") / mine)
    age(store.folder("theirs") / theirs)
    assert store.put("mine", b"shared content") == mine  # kept again: young again
    store.retain("mine", ())
    assert blob_files(store.folder("mine")) == {mine}  # another process may be about to name it
    age(store.folder("mine") / mine)
    store.retain("mine", ())
    assert not store.folder("mine").exists()
    assert store.get("theirs", theirs) == b"shared content"  # the other session's copy is untouched


def test_blobs_of_earlier_versions_are_still_read(tmp_path: Path) -> None:
    data = b"written by an earlier version\n"
    blob = hashlib.sha256(data).hexdigest()
    legacy = tmp_path / "blobs" / blob[:2] / blob[2:]
    write_file(legacy, data.decode())
    store = FileBlobStore(tmp_path / "blobs")
    assert store.get("s1", blob) == data
    store.retain("s1", ())
    assert legacy.exists()  # shared by unknown sessions: never deleted


def test_release_session_deletes_its_snapshots_only(tmp_path: Path, repo: git.Repo) -> None:
    data_dir = tmp_path / "data"
    store = FileBlobStore(data_dir / "blobs")
    store.put("gone", b"one")
    store.put("gone", b"two")
    kept = store.put("kept", b"one")
    cwd = Path(repo.working_tree_dir or "")
    git_store = GitBlobStore(cwd)
    for owner in ("gone", "kept"):
        git_store.retain(owner, [git_store.put(owner, owner.encode())])

    release_session("gone", str(cwd), data_dir=data_dir)
    assert not store.folder("gone").exists()
    assert blob_files(store.folder("kept")) == {kept}
    assert [line.split("\t")[1] for line in private_refs(repo)] == [REF_PREFIX + "kept"]
    release_session("gone", str(cwd), data_dir=data_dir)  # again, or for a session that kept nothing: no error
    release_session("never", str(tmp_path / "no-such-folder"), data_dir=data_dir)
    release_session("never", str(tmp_path), data_dir=data_dir)  # not a repository


def test_blob_store_for_picks_git_inside_a_work_tree_and_files_outside(tmp_path: Path, repo: git.Repo) -> None:
    cwd = Path(repo.working_tree_dir or "")
    (cwd / "sub").mkdir()
    assert isinstance(blob_store_for(cwd), GitBlobStore)
    assert isinstance(blob_store_for(cwd / "sub"), GitBlobStore)
    plain = tmp_path / "plain"
    plain.mkdir()
    store = blob_store_for(plain, data_dir=tmp_path / "data")
    assert isinstance(store, FileBlobStore)
    assert store.root == tmp_path / "data" / "blobs"
    assert isinstance(blob_store_for(Path(repo.git_dir), data_dir=tmp_path / "data"), FileBlobStore)


async def test_default_store_outside_git_uses_the_data_dir(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    checkpoints = Checkpoints(project, data_dir=tmp_path / "data")
    checkpoints.begin_turn("t1")
    await write(checkpoints, project / "a.txt", "a1\n")
    checkpoints.end_turn()
    assert len([p for p in (tmp_path / "data" / "blobs").rglob("*") if p.is_file()]) == 0  # a new file: no blob
    checkpoints.begin_turn("t2")
    await write(checkpoints, project / "a.txt", "a2\n")
    checkpoints.end_turn()
    assert len([p for p in (tmp_path / "data" / "blobs").rglob("*") if p.is_file()]) == 1


# --- serialization --------------------------------------------------------------------------------------------------


async def test_checkpoint_round_trips_through_json_and_a_new_recorder_can_undo(
    workspace: tuple[Path, BlobStore],
) -> None:
    cwd, store = workspace
    checkpoints = Checkpoints(cwd, store, session_id="s1")
    checkpoints.begin_turn("t1")
    await write(checkpoints, cwd / "a.txt", "a1\n")
    await write(checkpoints, cwd / "made.txt", "m1\n")
    checkpoints.end_turn()
    record = json.dumps([c.to_dict() for c in checkpoints.history])

    restored = [TurnCheckpoint.from_dict(d) for d in json.loads(record)]
    assert restored == checkpoints.history
    assert restored[0].files[1] == FileSnapshot(str(cwd / "made.txt"), None, restored[0].files[1].after)

    later = Checkpoints(cwd, store, session_id="s1")  # e.g. after the agent restarted and loaded the session
    later.history = restored
    (cwd / "a.txt").write_text("a1, then the user\n", encoding="utf-8")
    plan = await later.undo_last()
    assert plan is not None
    assert [(Path(f.path).name, f.text) for f in plan.files] == [("a.txt", "a0\n"), ("made.txt", None)]
    assert plan.changed_since == [str(cwd / "a.txt")]


async def test_a_fork_keeps_its_own_copies_of_the_blobs_its_history_needs(workspace: tuple[Path, BlobStore]) -> None:
    cwd, store = workspace
    parent = Checkpoints(cwd, store, session_id="parent")
    for turn, text in (("t1", "a1\n"), ("t2", "a2\n")):
        parent.begin_turn(turn)
        await write(parent, cwd / "a.txt", text)
        parent.end_turn()
    fork = Checkpoints(cwd, store, session_id="fork")
    fork.restore(parent.history[:1])
    await fork.copy_blobs_from(parent)
    if isinstance(store, FileBlobStore):  # the parent is deleted: what it kept goes
        store.release("parent")
    else:
        store.retain("parent", ())
    plan = await fork.undo_last()
    assert plan is not None and plan.turn_id == "t1"
    assert plan.files[0].text == "a0\n", "read from the fork's own copy"
    assert len(parent.history) == 2, "the parent's history is its own"


async def test_a_forked_checkpoint_whose_snapshot_is_gone_is_left_out(tmp_path: Path) -> None:
    store = FileBlobStore(tmp_path / "blobs")
    cwd = tmp_path / "project"
    cwd.mkdir()
    (cwd / "a.txt").write_text("a0\n", encoding="utf-8")
    parent = Checkpoints(cwd, store, session_id="parent")
    parent.begin_turn("t1")
    await write(parent, cwd / "a.txt", "a1\n")
    parent.end_turn()
    for blob in store.folder("parent").iterdir():
        blob.unlink()
    fork = Checkpoints(cwd, store, session_id="fork")
    fork.restore(list(parent.history))
    await fork.copy_blobs_from(parent)
    assert fork.history == []


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"turn_id": "t", "created_at": "now", "files": "nope"},
        {"turn_id": "t", "created_at": "now", "files": [{"blob": None}]},
        {"turn_id": "t", "created_at": "now", "files": [{"path": "/p", "blob": "../../x"}]},
        {"turn_id": "t", "created_at": "now", "files": [{"path": "/p", "blob": None, "after": 3}]},
        {"turn_id": "t", "created_at": "now", "files": ["/p"]},
    ],
)
def test_malformed_records_are_refused(data: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=r"."):
        TurnCheckpoint.from_dict(data)
