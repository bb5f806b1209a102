"""The session's language servers, driven with a real server built with pygls (`tests/support/lsp_servers`), which
publishes its diagnostics: what counts as new after an edit, and what happens when a server misbehaves."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from coder_agent.lsp.pool import LanguageServers
from coder_agent.lsp.settings import LspConfig, ServerConfig
from tests.support.lsp_servers import MARKED
from tests.support.processes import alive, wait_gone

pytestmark = pytest.mark.anyio


def marked_config(**fields: object) -> LspConfig:
    server = ServerConfig(command=[sys.executable, str(MARKED)], extensions=["mk"])
    return LspConfig.model_validate({"servers": {"marked": server.model_dump()}, **fields})


@pytest.fixture
def mode(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    """Set how the test server misbehaves (it reads `MARKED_MODE` from the environment the agent gives it)."""
    return lambda name: monkeypatch.setenv("MARKED_MODE", name)


@asynccontextmanager
async def servers(
    tmp_path: Path, config: LspConfig | None = None
) -> AsyncIterator[tuple[LanguageServers, list[tuple[str, str]]]]:
    told: list[tuple[str, str]] = []

    async def tell(title: str, description: str) -> None:
        told.append((title, description))

    async with anyio.create_task_group() as tasks:
        pool = LanguageServers(config or marked_config(), [tmp_path], tasks, wrap=None, sandboxed=True, tell=tell)
        try:
            yield pool, told
        finally:
            await pool.aclose()


async def test_only_what_the_edit_introduced_is_new(tmp_path: Path) -> None:
    async with servers(tmp_path) as (pool, told):
        path = tmp_path / "a.mk"
        found = await pool.after_edit(path, "DEF a\nUSES a\nERROR\n", "ERROR\nUSES a\nUSES b\nWARN\n")
        assert found is not None
        assert [(d.line, d.code, d.severity_name) for d in found.new] == [
            (2, "E2", "error"),
            (3, "E2", "error"),
            (4, "W1", "warning"),
        ]
        assert found.baseline
        assert not told
        again = await pool.after_edit(path, "ERROR\nUSES a\nUSES b\nWARN\n", "\n\nERROR\nUSES a\nUSES b\nWARN\n")
        assert again is not None
        assert again.new == [], "problems that only moved down are not new"
        assert len(again.after) == 4


async def test_a_new_file_has_no_before_and_a_deleted_one_is_forgotten(tmp_path: Path) -> None:
    async with servers(tmp_path) as (pool, _):
        path = tmp_path / "new.mk"
        found = await pool.after_edit(path, None, "ERROR\n")
        assert found is not None
        assert [d.code for d in found.new] == ["E1"]
        assert path in pool.known()
        pool.forget(path)
        assert path not in pool.known()


async def test_files_no_server_checks_start_nothing(tmp_path: Path) -> None:
    async with servers(tmp_path) as (pool, told):
        assert await pool.after_edit(tmp_path / "notes.txt", "a", "b") is None
        assert await pool.after_edit(tmp_path / "a.mk", "", "x" * 3_000_000) is None, "too long to send"
        assert await pool.after_edit(tmp_path / "a.mk", "", "ERROR\0binary") is None
        assert await pool.after_edit(tmp_path.parent / "elsewhere.mk", "", "ERROR") is None, "outside the roots"
        assert pool.running() == []
        assert not told


async def test_a_missing_server_is_told_once(tmp_path: Path) -> None:
    config = LspConfig.model_validate({"servers": {"marked": {"command": ["no-such-server"], "extensions": ["mk"]}}})
    async with servers(tmp_path, config) as (pool, told):
        assert await pool.after_edit(tmp_path / "a.mk", "", "ERROR") is None
        assert await pool.after_edit(tmp_path / "b.mk", "", "ERROR") is None
        assert len(told) == 1
        title, description = told[0]
        assert "No marked language server" in title
        assert "no-such-server" in description
        assert "[lsp.servers.marked]" in description


async def test_a_server_that_never_answers_initialize_costs_one_bounded_wait(
    tmp_path: Path, mode: Callable[[str], None]
) -> None:
    mode("silent-start")
    config = marked_config(start_timeout=1.0)
    async with servers(tmp_path, config) as (pool, told):
        assert await pool.after_edit(tmp_path / "a.mk", "", "ERROR") is None
        assert await pool.after_edit(tmp_path / "a.mk", "ERROR", "ERROR\nERROR") is None
        assert len(told) == 1
        assert "did not answer initialize within 1 s" in told[0][1]


async def test_a_server_that_dies_mid_request_is_told_and_leaves_nothing(
    tmp_path: Path, mode: Callable[[str], None]
) -> None:
    mode("die-later")
    async with servers(tmp_path) as (pool, told):
        first = await pool.after_edit(tmp_path / "a.mk", None, "ERROR")
        assert first is not None
        [server] = pool.running()
        pid = server.pid
        assert pid is not None
        assert await pool.after_edit(tmp_path / "a.mk", "ERROR", "WARN") is None
        assert len(told) == 1
        assert "stopped" in told[0][0]
        assert "dying as asked" in told[0][1], "its last stderr lines say why"
        await wait_gone(pid)
        assert await pool.after_edit(tmp_path / "b.mk", None, "ERROR") is None, "not started again"
        assert len(told) == 1


async def test_garbage_on_stdout_does_not_stop_the_diagnostics(tmp_path: Path, mode: Callable[[str], None]) -> None:
    mode("garbage")
    async with servers(tmp_path) as (pool, told):
        found = await pool.after_edit(tmp_path / "a.mk", "", "ERROR\n")
        assert found is not None
        assert [d.code for d in found.new] == ["E1"]
        assert not told


async def test_a_flood_of_diagnostics_is_bounded_and_the_last_word_counts(
    tmp_path: Path, mode: Callable[[str], None]
) -> None:
    mode("flood")
    async with servers(tmp_path, marked_config(start_timeout=120, wait=60)) as (pool, _):
        found = await pool.after_edit(tmp_path / "a.mk", "", "ERROR\n")
        assert found is not None
        assert [d.code for d in found.after] == ["E1"]


async def test_closing_ends_every_server(tmp_path: Path) -> None:
    async with servers(tmp_path) as (pool, _):
        await pool.after_edit(tmp_path / "a.mk", None, "ERROR")
        await pool.after_edit(tmp_path / "sub" / "b.mk", None, "ERROR")
        pids = [server.pid for server in pool.running()]
        assert pids
        assert all(pid is not None and alive(pid) for pid in pids)
    await wait_gone(*[pid for pid in pids if pid is not None])


async def test_the_server_gets_no_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: Callable[[str], None]
) -> None:
    mode("env")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-for-servers")
    monkeypatch.setenv("CODER_AGENT_API_KEY", "sk-test-not-for-servers-either")
    async with servers(tmp_path) as (pool, _):
        found = await pool.after_edit(tmp_path / "a.mk", None, "fine\n")
        assert found is not None
        [said] = [d.message for d in found.after if d.code == "ENV"]
        assert "OPENAI_API_KEY" not in said
        assert "CODER_AGENT_API_KEY" not in said


async def test_a_slow_answer_costs_the_edit_its_diagnostics_not_more(
    tmp_path: Path, mode: Callable[[str], None]
) -> None:
    mode("slow-later")
    async with servers(tmp_path, marked_config(wait=0.5)) as (pool, told):
        assert await pool.after_edit(tmp_path / "a.mk", None, "ERROR") is not None
        assert await pool.after_edit(tmp_path / "a.mk", "ERROR", "WARN") is None, "no answer within the wait"
        assert not told, "a late answer is not a failure of the server"
        assert pool.running(), "the server is kept"


async def test_a_workspace_of_20000_files_changes_nothing(tmp_path: Path) -> None:
    for folder in range(100):
        sub = tmp_path / f"pkg{folder}"
        sub.mkdir()
        for number in range(200):
            (sub / f"m{number}.mk").write_text("DEF x\n")
    async with servers(tmp_path) as (pool, told):
        found = await pool.after_edit(tmp_path / "pkg7" / "m3.mk", "DEF x\n", "USES y\n")
        assert found is not None
        assert [d.code for d in found.new] == ["E2"]
        assert not told


async def test_a_server_outside_the_walls_is_never_a_program_on_a_path_entry_inside_the_session_s_folders(
    tmp_path: Path,
) -> None:
    """With `without_sandbox` (no walls here), a server runs with the user's rights: its program is never taken from
    a PATH entry the session's commands may write (a planted `node_modules/.bin` or `.venv/bin`), as the agent's git,
    ripgrep and MCP servers are not; the same program outside is started."""
    work, outside = tmp_path / "work", tmp_path / "tools"
    for folder in (work / "node_modules" / ".bin", outside):
        folder.mkdir(parents=True)
        program = folder / "marked-server"
        program.write_text(f"#!/bin/sh\necho ran > {folder}/ran\nexit 1\n")
        program.chmod(0o755)
    config = LspConfig.model_validate(
        {"without_sandbox": True, "servers": {"marked": {"command": ["marked-server"], "extensions": ["mk"]}}}
    )
    told: list[tuple[str, str]] = []

    async def tell(title: str, description: str) -> None:
        told.append((title, description))

    for path_entries in ([work / "node_modules" / ".bin"], [work / "node_modules" / ".bin", outside]):
        async with anyio.create_task_group() as tasks:
            environ = {"PATH": ":".join(map(str, path_entries))}
            pool = LanguageServers(config, [work], tasks, wrap=None, sandboxed=False, tell=tell, environ=environ)
            try:
                assert await pool.after_edit(work / "a.mk", None, "ERROR\n") is None
            finally:
                await pool.aclose()
    assert not (work / "node_modules" / ".bin" / "ran").exists(), "the planted server ran with the user's rights"
    assert (outside / "ran").exists(), "the one outside the session's folders is the server"
    assert "node_modules" in told[0][1], "the notice names where the one found lies"
