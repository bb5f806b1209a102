"""Tests of coder_agent.store: round trips, atomic writes (including kill -9), corrupt files, listing and paging."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import coder_agent
from coder_agent.checkpoints import Checkpoints, FileBlobStore, blob_store_for
from coder_agent.store import (
    SCHEMA_VERSION,
    InvalidCursor,
    InvalidSessionId,
    SessionNotFound,
    SessionRecord,
    SessionStore,
    SessionSummary,
    StoreError,
    utc_now,
)
from coder_agent.store import files as store_files


def stamp(minute: int, second: int = 0) -> str:
    return f"2026-11-30T08:{minute:02d}:{second:02d}.000Z"


def make_record(
    session_id: str, *, cwd: str = "/project", updated_at: str | None = None, **fields: Any
) -> SessionRecord:
    """A record of a session that was prompted (`messages` default to one user message), so it is listed."""
    fields.setdefault("messages", [{"role": "user", "content": "hi"}])
    return SessionRecord(
        session_id=session_id,
        cwd=cwd,
        created_at=stamp(0),
        updated_at=updated_at or stamp(1),
        **fields,
    )


def files(root: Path) -> list[str]:
    return sorted(path.name for path in root.iterdir())


def all_pages(store: SessionStore, cwd: str | None = None, limit: int = 50) -> list[list[SessionSummary]]:
    pages: list[list[SessionSummary]] = []
    cursor: str | None = None
    while True:
        page, cursor = store.list(cwd=cwd, cursor=cursor, limit=limit)
        pages.append(page)
        if cursor is None:
            return pages


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    return SessionStore(tmp_path / "sessions")


# ---- round trip ---------------------------------------------------------------------------------------------------


def test_round_trip_keeps_every_field(store: SessionStore) -> None:
    record = SessionRecord(
        session_id="sess_0123abcd",
        cwd="/home/dev/project",
        additional_directories=["/home/dev/lib"],
        title="Fix the parser ✓",
        created_at="2026-11-30T08:00:00.123Z",
        updated_at="2026-11-30T08:05:00.456Z",
        mode="acceptEdits",
        model="openai/gpt-5",
        reasoning_effort="high",
        messages=[
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function"}]},
        ],
        events=[{"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}],
        cost=0.0123,
        context_tokens=4567,
        allow_rules=["Bash(git status)"],
        deny_rules=["Read(.env)"],
        checkpoints=[{"id": 1, "files": {"a.py": None}}],
    )
    store.save(record)
    assert store.load("sess_0123abcd") == record
    assert files(store.root) == ["sess_0123abcd.json", "sess_0123abcd.summary.json"]
    summary = json.loads((store.root / "sess_0123abcd.summary.json").read_text())
    assert summary == {
        "session_id": "sess_0123abcd",
        "cwd": "/home/dev/project",
        "title": "Fix the parser ✓",
        "updated_at": "2026-11-30T08:05:00.456Z",
        "additional_directories": ["/home/dev/lib"],
        "model": "openai/gpt-5",
        "prompted": True,
        "schema_version": SCHEMA_VERSION,
    }


def test_a_session_never_prompted_is_not_listed_but_loads(store: SessionStore) -> None:
    store.save(make_record("sess_empty", messages=[], updated_at=stamp(9)))
    store.save(make_record("sess_used", updated_at=stamp(2)))
    page, _ = store.list()
    assert [s.session_id for s in page] == ["sess_used"]
    assert store.load("sess_empty").session_id == "sess_empty"


def test_an_older_summary_without_the_prompted_field_is_listed(store: SessionStore) -> None:
    store.save(make_record("sess_old", messages=[]))
    sidecar = store.root / "sess_old.summary.json"
    written = json.loads(sidecar.read_text())
    del written["prompted"]
    sidecar.write_text(json.dumps(written))
    os.utime(sidecar, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))  # newer than the record: it is used
    page, _ = store.list()
    assert [s.session_id for s in page] == ["sess_old"]


def test_save_replaces_the_previous_version(store: SessionStore) -> None:
    store.save(make_record("sess_a", title="one"))
    store.save(make_record("sess_a", title="two", updated_at=stamp(2)))
    assert store.load("sess_a").title == "two"
    assert [s.title for s in store.list()[0]] == ["two"]


def test_root_is_created_on_first_write_only(tmp_path: Path) -> None:
    root = tmp_path / "deep" / "sessions"
    store = SessionStore(root)
    assert store.list() == ([], None)
    with pytest.raises(SessionNotFound):
        store.load("sess_a")
    store.delete("sess_a")
    assert not root.exists()
    store.save(make_record("sess_a"))
    assert root.is_dir()


def test_default_root_is_under_the_user_data_dir() -> None:
    root = SessionStore().root
    assert root.name == "sessions"
    assert root.parent.name == "coder-agent"


def test_timestamps_must_be_iso_8601() -> None:
    with pytest.raises(ValueError, match="ISO 8601"):
        make_record("sess_a", updated_at="yesterday")
    assert utc_now().endswith("Z")
    make_record("sess_a", updated_at=utc_now())


# ---- atomicity ----------------------------------------------------------------------------------------------------


def test_failed_replace_leaves_the_previous_version(store: SessionStore, monkeypatch: pytest.MonkeyPatch) -> None:
    store.save(make_record("sess_a", title="old"))

    def fail(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(StoreError, match=r"sess_a\.json.*No space left"):
        store.save(make_record("sess_a", title="new", updated_at=stamp(5)))
    monkeypatch.undo()

    assert store.load("sess_a").title == "old"
    assert [s.title for s in store.list()[0]] == ["old"]
    assert files(store.root) == ["sess_a.json", "sess_a.summary.json"]  # no temp file left behind


def test_failed_write_leaves_the_previous_version(store: SessionStore, monkeypatch: pytest.MonkeyPatch) -> None:
    store.save(make_record("sess_a", title="old"))

    def fail(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(StoreError, match="Input/output error"):
        store.save(make_record("sess_a", title="new"))
    monkeypatch.undo()
    assert store.load("sess_a").title == "old"
    assert files(store.root) == ["sess_a.json", "sess_a.summary.json"]


def test_leftover_temp_files_are_ignored_then_cleaned(store: SessionStore) -> None:
    store.save(make_record("sess_a", title="kept"))
    # What a write killed before its os.replace leaves: a partial temp file next to the real one.
    fresh = store.root / ".sess_a.json.k3j2h1.tmp"
    fresh.write_text('{"session_id": "sess_a", "cwd": "/pro')
    stale = store.root / ".sess_b.json.x8y7z6.tmp"
    stale.write_text('{"session_id": "sess_b"')
    an_hour_ago = time.time() - 3600
    os.utime(stale, (an_hour_ago, an_hour_ago))

    page, _ = store.list()
    assert [s.session_id for s in page] == ["sess_a"]
    assert store.load("sess_a").title == "kept"
    with pytest.raises(SessionNotFound):
        store.load("sess_b")
    assert not stale.exists()  # a dead write's leftover goes
    assert fresh.exists()  # a recent one may be another process's write in progress


def test_missing_summary_is_rebuilt(store: SessionStore, caplog: pytest.LogCaptureFixture) -> None:
    # A crash between writing a new session's record and its summary.
    store.save(make_record("sess_a", title="A"))
    (store.root / "sess_a.summary.json").unlink()
    with caplog.at_level(logging.WARNING, logger="coder_agent.store"):
        page, _ = store.list()
    assert [s.title for s in page] == ["A"]
    assert "missing" in caplog.text
    assert (store.root / "sess_a.summary.json").exists()


def test_stale_summary_is_rebuilt(store: SessionStore) -> None:
    # A crash between replacing the record and replacing its summary: the summary is older than the record.
    store.save(make_record("sess_a", title="old", updated_at=stamp(1)))
    old_summary = (store.root / "sess_a.summary.json").read_bytes()
    store.save(make_record("sess_a", title="new", updated_at=stamp(2)))
    summary_path = store.root / "sess_a.summary.json"
    summary_path.write_bytes(old_summary)
    record_mtime = (store.root / "sess_a.json").stat().st_mtime_ns
    os.utime(summary_path, ns=(record_mtime - 10**9, record_mtime - 10**9))
    page, _ = store.list()
    assert [(s.title, s.updated_at) for s in page] == [("new", stamp(2))]


def test_orphan_summary_is_dropped(store: SessionStore) -> None:
    # A crash in delete between removing the record and removing the summary.
    store.save(make_record("sess_a"))
    (store.root / "sess_a.json").unlink()
    assert store.list() == ([], None)
    assert files(store.root) == []


def test_concurrent_threads(store: SessionStore) -> None:
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for round_ in range(10):
                store.save(make_record(f"sess_{worker}_{round_ % 3}", title=f"{worker}/{round_}"))
                store.list()
                store.load(f"sess_{worker}_{round_ % 3}")
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    page, cursor = store.list()
    assert len(page) == 18
    assert cursor is None


# ---- kill -9 ------------------------------------------------------------------------------------------------------

WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from coder_agent.store import SessionRecord, SessionStore

    store = SessionStore(Path(sys.argv[1]))
    n = 0
    while True:
        n += 1
        size = 200 if n % 2 else 4000  # alternate sizes, so a torn write could not pass for a whole one
        messages = [{"role": "user", "content": f"message {i} of round {n} " + "x" * 200} for i in range(size)]
        store.save(SessionRecord(session_id="sess_kill", cwd="/p", created_at="2026-11-30T08:00:00.000Z",
                                 updated_at="2026-11-30T08:00:00.000Z", title=str(n), messages=messages))
        if n == 1:
            (Path(sys.argv[1]) / "started").touch()
    """
)


def python_with_the_package() -> dict[str, str]:
    """An environment in which a child `python -c` imports this checkout's coder_agent."""
    package_parent = str(Path(coder_agent.__file__).resolve().parent.parent)
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_parent, os.environ.get("PYTHONPATH")]))}


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
@pytest.mark.parametrize("delay", [0.05, 0.13, 0.21, 0.34, 0.55])
def test_kill_9_during_saves_leaves_a_loadable_file(tmp_path: Path, delay: float) -> None:
    root = tmp_path / "sessions"
    child = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(root)], env=python_with_the_package(), stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 30
        while not (root / "started").exists():
            assert child.poll() is None, child.stderr.read().decode() if child.stderr else ""
            assert time.monotonic() < deadline, "the writer never saved"
            time.sleep(0.01)
        time.sleep(delay)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        if child.stderr:
            child.stderr.close()
    assert child.returncode == -signal.SIGKILL

    store = SessionStore(root)
    record = store.load("sess_kill")
    n = int(record.title or "0")
    assert n >= 1
    assert len(record.messages) == (200 if n % 2 else 4000)
    assert record.messages[-1]["content"].startswith(f"message {len(record.messages) - 1} of round {n} ")
    page, _ = store.list()
    assert [s.session_id for s in page] == ["sess_kill"]


PARALLEL_WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from coder_agent.store import SessionRecord, SessionStore

    store = SessionStore(Path(sys.argv[1]))
    name = sys.argv[2]
    for round_ in range(3):
        for n in range(20):
            store.save(SessionRecord(session_id=f"sess_{name}_{n}", cwd=f"/{name}", title=f"{round_}",
                                     created_at="2026-11-30T08:00:00Z", updated_at=f"2026-11-30T08:{n:02d}:00Z",
                                     messages=[{"role": "user", "content": "y" * 1000}] * 20))
            store.list()
            store.list(cwd=f"/{name}")
    """
)


def test_two_processes_writing_different_sessions(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    children = [
        subprocess.Popen([sys.executable, "-c", PARALLEL_WRITER, str(root), name], env=python_with_the_package())
        for name in ("left", "right")
    ]
    assert [child.wait(timeout=120) for child in children] == [0, 0]
    store = SessionStore(root)
    for name in ("left", "right"):
        page, cursor = store.list(cwd=f"/{name}")
        assert len(page) == 20
        assert cursor is None
        assert {store.load(s.session_id).title for s in page} == {"2"}
    assert not [path for path in root.iterdir() if path.name.startswith(".")]


# ---- corrupt and future files -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "not valid JSON"),
        (b'{"session_id": "sess_bad", "cwd": "/pro', "not valid JSON"),
        (b"\xff\xfe garbage", "not valid JSON"),
        (b"[1, 2, 3]", "expected a JSON object"),
        (b'{"session_id": "sess_bad", "cwd": 7}', "not a valid session record"),
        (b'{"schema_version": "one", "session_id": "sess_bad"}', "bad schema_version"),
    ],
)
def test_corrupt_record_fails_alone(store: SessionStore, content: bytes, message: str) -> None:
    store.save(make_record("sess_good", updated_at=stamp(1)))
    store.save(make_record("sess_bad", updated_at=stamp(2)))
    path = store.root / "sess_bad.json"
    path.write_bytes(content)

    with pytest.raises(StoreError, match=message) as caught:
        store.load("sess_bad")
    assert not isinstance(caught.value, SessionNotFound)
    assert str(path) in str(caught.value)
    assert store.load("sess_good").session_id == "sess_good"
    assert {s.session_id for s in store.list()[0]} == {"sess_good", "sess_bad"}  # its summary is still fine


def test_record_of_another_session_is_corrupt(store: SessionStore) -> None:
    store.save(make_record("sess_a"))
    (store.root / "sess_b.json").write_bytes((store.root / "sess_a.json").read_bytes())
    with pytest.raises(StoreError, match="holds session 'sess_a'"):
        store.load("sess_b")


def test_future_schema_is_refused_clearly(store: SessionStore) -> None:
    store.save(make_record("sess_good"))
    store.save(make_record("sess_new", updated_at=stamp(3)))
    path = store.root / "sess_new.json"
    data = json.loads(path.read_text())
    data["schema_version"] = 7
    data["messages"] = {"format": "something new"}
    path.write_text(json.dumps(data))

    with pytest.raises(StoreError) as caught:
        store.load("sess_new")
    assert str(caught.value) == (
        f"session file {path} was written by a newer coder-agent (schema 7; this one reads {SCHEMA_VERSION}); "
        "upgrade coder-agent to open it"
    )
    assert store.load("sess_good").session_id == "sess_good"
    assert [s.session_id for s in store.list()[0]] == ["sess_new", "sess_good"]


def test_corrupt_summary_is_rebuilt_from_the_record(store: SessionStore, caplog: pytest.LogCaptureFixture) -> None:
    store.save(make_record("sess_a", title="A", updated_at=stamp(1)))
    store.save(make_record("sess_b", title="B", updated_at=stamp(2)))
    (store.root / "sess_b.summary.json").write_text("{not json")
    with caplog.at_level(logging.WARNING, logger="coder_agent.store"):
        page, _ = store.list()
    assert [s.title for s in page] == ["B", "A"]
    assert "sess_b.summary.json" in caplog.text
    assert json.loads((store.root / "sess_b.summary.json").read_text())["title"] == "B"


def test_corrupt_summary_and_record_are_skipped(store: SessionStore, caplog: pytest.LogCaptureFixture) -> None:
    store.save(make_record("sess_a", title="A", updated_at=stamp(1)))
    store.save(make_record("sess_b", title="B", updated_at=stamp(2)))
    (store.root / "sess_b.json").write_text("{not json")
    (store.root / "sess_b.summary.json").write_text('{"session_id": "sess_b"}')
    with caplog.at_level(logging.WARNING, logger="coder_agent.store"):
        page, cursor = store.list()
        assert [s.title for s in page] == ["A"]
        assert cursor is None
        assert caplog.text.count("sess_b") >= 1
        caplog.clear()
        store.list()
        assert "sess_b" not in caplog.text  # logged once per broken file, not on every listing
    with pytest.raises(StoreError, match="not valid JSON"):
        store.load("sess_b")


# ---- list ---------------------------------------------------------------------------------------------------------


def test_list_is_newest_first_with_ties_by_id(store: SessionStore) -> None:
    store.save(make_record("sess_old", updated_at=stamp(1)))
    store.save(make_record("sess_b", updated_at=stamp(5)))
    store.save(make_record("sess_a", updated_at=stamp(5)))
    store.save(make_record("sess_new", updated_at=stamp(9)))
    # Mixed precisions and offsets still order by instant.
    store.save(make_record("sess_offset", updated_at="2026-11-30T09:07:00+01:00"))  # 08:07 UTC
    store.save(make_record("sess_frac", updated_at="2026-11-30T08:05:00.5Z"))
    page, cursor = store.list()
    assert [s.session_id for s in page] == ["sess_new", "sess_offset", "sess_frac", "sess_b", "sess_a", "sess_old"]
    assert cursor is None


def test_list_filters_by_exact_cwd(store: SessionStore) -> None:
    store.save(make_record("sess_1", cwd="/projects/app", updated_at=stamp(1)))
    store.save(make_record("sess_2", cwd="/projects/app/sub", updated_at=stamp(2)))
    store.save(make_record("sess_3", cwd="/projects/app", updated_at=stamp(3)))
    store.save(make_record("sess_4", cwd="/projects/other", updated_at=stamp(4)))
    assert [s.session_id for s in store.list(cwd="/projects/app")[0]] == ["sess_3", "sess_1"]
    assert [s.session_id for s in store.list(cwd="/projects/app/sub")[0]] == ["sess_2"]
    assert store.list(cwd="/projects") == ([], None)
    assert len(store.list()[0]) == 4


def test_paging_over_120_sessions(store: SessionStore) -> None:
    for n in range(120):
        store.save(make_record(f"sess_{n:03d}", updated_at=stamp(n // 10, n % 60)))
    pages = all_pages(store, limit=50)
    assert [len(page) for page in pages] == [50, 50, 20]
    ids = [s.session_id for page in pages for s in page]
    assert len(set(ids)) == 120
    assert set(ids) == {f"sess_{n:03d}" for n in range(120)}
    orders = [(s.updated_at, s.session_id) for page in pages for s in page]
    assert orders == sorted(orders, reverse=True)


def test_paging_with_a_cwd_filter_and_an_exact_fit(store: SessionStore) -> None:
    for n in range(100):
        store.save(make_record(f"sess_{n:03d}", cwd=f"/p{n % 2}", updated_at=stamp(n % 60, n // 60)))
    pages = all_pages(store, cwd="/p0", limit=25)
    assert [len(page) for page in pages] == [25, 25]  # exactly two full pages: no empty third one
    assert {s.session_id for page in pages for s in page} == {f"sess_{n:03d}" for n in range(0, 100, 2)}


def test_paging_is_stable_when_sessions_change_between_pages(store: SessionStore) -> None:
    for n in range(10):
        store.save(make_record(f"sess_{n}", updated_at=stamp(n)))
    first, cursor = store.list(limit=4)
    assert [s.session_id for s in first] == ["sess_9", "sess_8", "sess_7", "sess_6"]
    store.save(make_record("sess_8", updated_at=stamp(30)))  # already seen, moves to the front
    store.delete("sess_5")
    store.save(make_record("sess_new", updated_at=stamp(40)))
    second, cursor = store.list(limit=4, cursor=cursor)
    assert [s.session_id for s in second] == ["sess_4", "sess_3", "sess_2", "sess_1"]
    third, cursor = store.list(limit=4, cursor=cursor)
    assert [s.session_id for s in third] == ["sess_0"]
    assert cursor is None


@pytest.mark.parametrize(
    "cursor",
    ["", "garbage!", "bm90IGpzb24", "WzEsMiwzXQ", "eyJ2IjoxLCJ1Ijoibm90IGEgZGF0ZSIsImkiOiJzZXNzX2EiLCJjIjpudWxsfQ"],
)
def test_invalid_cursor(store: SessionStore, cursor: str) -> None:
    store.save(make_record("sess_a"))
    with pytest.raises(InvalidCursor):
        store.list(cursor=cursor)


def test_cursor_is_bound_to_its_cwd_filter(store: SessionStore) -> None:
    for n in range(3):
        store.save(make_record(f"sess_{n}", cwd="/p", updated_at=stamp(n)))
    _, cursor = store.list(cwd="/p", limit=1)
    assert cursor is not None
    assert store.list(cwd="/p", cursor=cursor, limit=1)[1] is not None
    with pytest.raises(InvalidCursor):
        store.list(cwd="/q", cursor=cursor)
    with pytest.raises(InvalidCursor):
        store.list(cursor=cursor)


def test_limit_must_be_positive(store: SessionStore) -> None:
    with pytest.raises(ValueError, match="limit"):
        store.list(limit=0)


def test_list_reuses_parsed_summaries(store: SessionStore, monkeypatch: pytest.MonkeyPatch) -> None:
    for n in range(5):
        store.save(make_record(f"sess_{n}", updated_at=stamp(n)))
    store.list()
    parsed: list[str] = []
    real = store_files.parse_summary

    def counting(path: Path, session_id: str, data: bytes) -> SessionSummary:
        parsed.append(session_id)
        return real(path, session_id, data)

    monkeypatch.setattr(store_files, "parse_summary", counting)
    store.list()
    assert parsed == []
    store.save(make_record("sess_2", title="changed", updated_at=stamp(2)))
    page, _ = store.list()
    assert parsed == ["sess_2"]
    assert [s.title for s in page if s.session_id == "sess_2"] == ["changed"]
    # Another store instance (as another process would) sees the same.
    assert SessionStore(store.root).list() == (page, None)


def test_a_list_of_1000_sessions_pages_through_all_of_them(store: SessionStore) -> None:
    """How fast the first page comes is a figure of `bench/sessions_store.py`, not an assertion here."""
    store.root.mkdir(parents=True)
    for n in range(1000):  # written directly: a thousand fsynced saves would dominate the test
        record = make_record(f"sess_{n:04x}", cwd=f"/p{n % 7}", updated_at=stamp(n % 60, n // 60), title=f"t{n}")
        (store.root / f"sess_{n:04x}.json").write_text(record.model_dump_json())
        summary = {**SessionSummary.of(record).model_dump(), "schema_version": SCHEMA_VERSION}
        (store.root / f"sess_{n:04x}.summary.json").write_text(json.dumps(summary))
    cold = SessionStore(store.root)
    page, cursor = cold.list()
    assert len(page) == 50
    assert cursor is not None
    assert sum(len(page) for page in all_pages(cold)) == 1000


def set_mtime_ns(path: Path, mtime_ns: int) -> None:
    os.utime(path, ns=(mtime_ns, mtime_ns))


def rewrite_title_in_place(store: SessionStore, session_id: str, title: str) -> None:
    """Change a sidecar without a rename (nothing the store does): the folder's own mtime stays as it was."""
    path = store.root / f"{session_id}.summary.json"
    summary = json.loads(path.read_text())
    summary["title"] = title
    with path.open("r+b") as handle:
        handle.truncate()
        handle.write(json.dumps(summary).encode())


def test_an_unchanged_folder_is_not_scanned_again(store: SessionStore) -> None:
    store.save(make_record("sess_a", title="A", updated_at=stamp(1)))
    store.save(make_record("sess_b", title="B", updated_at=stamp(2)))
    ten_seconds_ago = time.time_ns() - 10 * 10**9
    set_mtime_ns(store.root, ten_seconds_ago)  # the folder last changed ten seconds ago
    assert [s.title for s in store.list()[0]] == ["B", "A"]
    rewrite_title_in_place(store, "sess_a", "A, edited in place")
    set_mtime_ns(store.root, ten_seconds_ago)  # (on file systems that count a file's write as the folder's)
    assert [s.title for s in store.list()[0]] == ["B", "A"]  # served from the last scan
    store.save(make_record("sess_c", title="C", updated_at=stamp(3)))  # a rename: the folder changed
    assert [s.title for s in store.list()[0]] == ["C", "B", "A, edited in place"]


def test_a_folder_that_changed_moments_ago_is_scanned_every_time(store: SessionStore) -> None:
    # A change in the same tick of the file system's clock as the last one would leave the folder's mtime as it
    # was, so a scan is only reused once that mtime is safely in the past.
    store.save(make_record("sess_a", title="A"))
    in_a_second = time.time_ns() + 10**9
    set_mtime_ns(store.root, in_a_second)  # not in the past at all
    assert [s.title for s in store.list()[0]] == ["A"]
    rewrite_title_in_place(store, "sess_a", "A2")
    set_mtime_ns(store.root, in_a_second)
    assert [s.title for s in store.list()[0]] == ["A2"]
    # Whole-second mtimes may come from a file system that keeps only seconds (or two): 3 s must have passed.
    whole_second = (time.time_ns() // 10**9 - 2) * 10**9
    set_mtime_ns(store.root, whole_second)
    assert [s.title for s in store.list()[0]] == ["A2"]
    rewrite_title_in_place(store, "sess_a", "A3")
    set_mtime_ns(store.root, whole_second)
    assert [s.title for s in store.list()[0]] == ["A3"]


SAVER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from coder_agent.store import SessionRecord, SessionStore

    SessionStore(Path(sys.argv[1])).save(SessionRecord(session_id="sess_other", cwd="/p", title="from elsewhere",
                                         created_at="2026-11-30T08:00:00Z", updated_at="2026-11-30T09:00:00Z"))
    """
)


def test_a_save_by_another_process_is_listed_at_once(store: SessionStore) -> None:
    store.save(make_record("sess_a", title="A"))
    set_mtime_ns(store.root, time.time_ns() - 10 * 10**9)
    assert [s.title for s in store.list()[0]] == ["A"]  # a scan this store will reuse ...
    subprocess.run([sys.executable, "-c", SAVER, str(store.root)], env=python_with_the_package(), check=True)
    assert [s.title for s in store.list()[0]] == ["from elsewhere", "A"]  # ... until another process saves
    SessionStore(store.root).delete("sess_other")
    assert [s.title for s in store.list()[0]] == ["A"]


# ---- delete and ids -----------------------------------------------------------------------------------------------


def test_delete_is_idempotent(store: SessionStore) -> None:
    store.save(make_record("sess_a"))
    store.save(make_record("sess_b"))
    store.delete("sess_a")
    store.delete("sess_a")
    store.delete("sess_never")
    with pytest.raises(SessionNotFound, match="sess_a"):
        store.load("sess_a")
    assert [s.session_id for s in store.list()[0]] == ["sess_b"]
    assert files(store.root) == ["sess_b.json", "sess_b.summary.json"]


@pytest.mark.parametrize(
    "session_id",
    [
        "",
        "../escape",
        "..",
        "a/b",
        "a\\b",
        "/etc/passwd",
        "sess_1.summary",
        "sess 1",
        "sess\x00",
        "sess_é",
        "x" * 201,
    ],
)
def test_unsafe_ids_are_rejected(store: SessionStore, tmp_path: Path, session_id: str) -> None:
    with pytest.raises(InvalidSessionId):
        store.save(make_record(session_id))
    with pytest.raises(InvalidSessionId):
        store.load(session_id)
    with pytest.raises(InvalidSessionId):
        store.delete(session_id)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.anyio
async def test_deleting_a_session_deletes_its_undo_snapshots(store: SessionStore, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.txt").write_text("a0\n")
    folders = []
    for session_id in ("sess_gone", "sess_kept"):
        checkpoints = Checkpoints(project, session_id=session_id)  # outside git: the user data folder's file store
        checkpoints.begin_turn("t1")
        await checkpoints.before_change(project / "a.txt", "a0\n")
        checkpoints.end_turn()
        store.save(make_record(session_id, cwd=str(project), checkpoints=[c.to_dict() for c in checkpoints.history]))
        blobs = blob_store_for(project)  # the store those checkpoints used
        assert isinstance(blobs, FileBlobStore)
        folders.append(blobs.folder(session_id))
    assert all(folder.is_dir() for folder in folders)
    store.delete("sess_gone")
    assert not folders[0].exists()
    assert folders[1].is_dir()


def test_exceptions_share_a_base() -> None:
    for error in (SessionNotFound, InvalidCursor, InvalidSessionId):
        assert issubclass(error, StoreError)
