"""Tests for coder_agent.mcp.hub against real MCP servers (tests/support/mcp_servers), over stdio, HTTP and SSE.

Starting an SDK-based server costs ~1 s (the mcp import), so one `basic` server is shared by the read-only tests
(module-scoped hub); tests that change a server's state or kill it start their own.
"""

from __future__ import annotations

import base64
import io
import os
import re
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from coder_agent.mcp.hub import McpHub
from coder_agent.mcp.types import McpError, McpServerSpec
from tests.support.mcp_servers.basic_http import serve_http
from tests.support.processes import HAS_PROC, alive, group_members

ROOT = Path(__file__).resolve().parents[3]


def server(name: str, module: str, **env: str) -> McpServerSpec:
    return McpServerSpec(
        name=name,
        transport="stdio",
        command=sys.executable,
        args=["-m", f"tests.support.mcp_servers.{module}"],
        env=env,
        cwd=str(ROOT),
    )


needs_proc = pytest.mark.skipif(not HAS_PROC, reason="needs /proc")


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def basic_hub() -> AsyncIterator[McpHub]:
    """One `basic` server, shared by tests that do not change it."""
    async with McpHub(log_to=io.StringIO()) as hub:
        statuses = await hub.connect([server("basic", "basic", MCP_HUB_TEST_VAR="passed through")], timeout=30)
        assert [s.state for s in statuses] == ["connected"], statuses
        yield hub


def tool(hub: McpHub, name: str) -> Any:
    return next(t for t in hub.tools() if t.name == name)


# ---- stdio, shared server ------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_tools_are_listed_with_schemas_and_annotations(basic_hub: McpHub) -> None:
    names = {t.name for t in basic_hub.tools()}
    assert {"echo", "add", "image", "env_var", "delete_everything", "peek", "fail", "big"} <= names
    echo = tool(basic_hub, "echo")
    assert echo.qualified_name == "mcp__basic__echo"
    assert echo.server == "basic"
    assert echo.description == "Echo the text back."
    assert echo.input_schema["type"] == "object" and "text" in echo.input_schema["properties"]
    destructive = tool(basic_hub, "delete_everything")
    assert (destructive.destructive, destructive.read_only) == (True, False)
    peek = tool(basic_hub, "peek")
    assert (peek.read_only, peek.destructive, peek.title) == (True, None, "Peek at the state")
    assert (echo.read_only, echo.destructive) == (None, None)
    [status] = basic_hub.statuses()
    assert (status.state, status.transport, status.error) == ("connected", "stdio", None)
    assert status.tool_count == len(basic_hub.tools()) and status.pid


@pytest.mark.anyio
async def test_call_echo(basic_hub: McpHub) -> None:
    result = await basic_hub.call("mcp__basic__echo", {"text": "hello"})
    assert result.content == [{"type": "text", "text": "hello"}]
    assert result.display == [{"type": "text", "text": "hello"}]
    assert not result.is_error


@pytest.mark.anyio
async def test_env_is_passed_over_our_environment(basic_hub: McpHub) -> None:
    result = await basic_hub.call("mcp__basic__env_var", {"name": "MCP_HUB_TEST_VAR"})
    assert result.content[0]["text"] == "passed through"
    path = await basic_hub.call("mcp__basic__env_var", {"name": "PATH"})
    assert path.content[0]["text"] == os.environ["PATH"]  # merged over ours: PATH still works


@pytest.mark.anyio
async def test_image_result_maps_to_image_url_and_acp_image(basic_hub: McpHub) -> None:
    result = await basic_hub.call("mcp__basic__image", {})
    text, image = result.content
    assert text == {"type": "text", "text": "a red pixel"}
    assert image["type"] == "image_url"
    url = image["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]).startswith(b"\x89PNG")
    shown = result.display[1]
    assert shown["type"] == "image" and shown["mimeType"] == "image/png" and url.endswith(shown["data"])


@pytest.mark.anyio
async def test_structured_content(basic_hub: McpHub) -> None:
    added = await basic_hub.call("mcp__basic__add", {"a": 2, "b": 3})
    assert added.structured == {"sum": 5}
    assert added.content == [{"type": "text", "text": "2 + 3 = 5"}]  # it has text: no JSON added
    stats = await basic_hub.call("mcp__basic__stats", {})
    assert stats.structured == {"files": 3, "lines": 120}
    assert [p["type"] for p in stats.content] == ["text"]
    assert '"files": 3' in stats.content[0]["text"]


@pytest.mark.anyio
async def test_resources_map_to_text_for_the_model_and_acp_blocks(basic_hub: McpHub) -> None:
    result = await basic_hub.call("mcp__basic__resources", {})
    assert "remember the milk" in result.content[0]["text"]
    assert "file:///data.csv" in result.content[1]["text"]
    embedded, link = result.display
    assert embedded == {
        "type": "resource",
        "resource": {"uri": "file:///notes.txt", "mimeType": "text/plain", "text": "remember the milk"},
    }
    assert link == {"type": "resource_link", "uri": "file:///data.csv", "name": "data.csv", "mimeType": "text/csv"}


@pytest.mark.anyio
async def test_is_error_result(basic_hub: McpHub) -> None:
    result = await basic_hub.call("mcp__basic__fail", {"reason": "on purpose"})
    assert result.is_error
    assert "on purpose" in result.content[0]["text"]


@pytest.mark.anyio
async def test_big_result_is_truncated_with_a_note(basic_hub: McpHub) -> None:
    result = await basic_hub.call("mcp__basic__big", {})
    assert result.truncated
    body, note = result.content
    assert len(body["text"]) == 50_000
    assert "200,000" in note["text"] and "truncated" in note["text"]
    assert sum(len(p.get("text", "")) for p in result.display) < 51_000


@pytest.mark.anyio
async def test_unknown_tool_and_bad_arguments_are_mcp_errors(basic_hub: McpHub) -> None:
    with pytest.raises(McpError, match="unknown MCP tool"):
        await basic_hub.call("mcp__basic__nope", {})
    result_or_error: Any
    try:
        result_or_error = await basic_hub.call("mcp__basic__add", {"a": "x"})
    except McpError as exc:
        result_or_error = exc
    # the SDK answers invalid arguments either as a tool error or as a protocol error; both must be clear
    if isinstance(result_or_error, McpError):
        assert "add" in str(result_or_error)
    else:
        assert result_or_error.is_error


@pytest.mark.anyio
async def test_call_timeout_and_cancellation_leave_the_server_usable(basic_hub: McpHub) -> None:
    # The error names the deadline and the scope says it was cancelled: neither waited for the tool's 5 s.
    with pytest.raises(McpError, match=r"'timed' on MCP server 'basic' did not finish within 0.3 s"):
        await basic_hub.call("mcp__basic__timed", {"ms": 5000}, timeout=0.3)
    with anyio.move_on_after(0.3) as scope:  # a cancelled turn cancels its call
        await basic_hub.call("mcp__basic__timed", {"ms": 5000})
    assert scope.cancelled_caught
    result = await basic_hub.call("mcp__basic__echo", {"text": "still here"})
    assert result.content[0]["text"] == "still here"


@pytest.mark.anyio
async def test_prompts(basic_hub: McpHub) -> None:
    prompts = await basic_hub.list_prompts()
    review = next(p for p in prompts if p.name == "review")
    assert review.server == "basic" and review.description == "Review a file."
    assert [(a.name, a.required) for a in review.arguments] == [("file", True)]
    assert await basic_hub.get_prompt("basic", "review", {"file": "a.py"}) == "Please review a.py for bugs."


# ---- connecting ----------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_failing_servers_are_reported_while_the_others_connect() -> None:
    async with McpHub(log_to=io.StringIO()) as hub:
        statuses = await hub.connect(
            [
                server("good", "crashy"),
                McpServerSpec(name="missing", transport="stdio", command="no-such-mcp-server-command"),
                server("dies", "crashy", CRASHY_AT_START="7"),
                server("slowish", "slow_start", SLOW_START_SECONDS="0.5"),
            ],
            timeout=20,
        )
        good, missing, dies, slowish = statuses
        assert good.state == "connected" and good.tool_count == 3
        assert slowish.state == "connected"
        assert missing.state == "failed"
        assert missing.error is not None
        assert "'missing'" in missing.error and "command not found" in missing.error
        assert dies.state == "failed" and dies.error is not None
        assert "'dies'" in dies.error and "exited with code 7" in dies.error
        assert "refusing to start" in dies.error  # the last stderr lines
        assert {t.server for t in hub.tools()} == {"good", "slowish"}  # the failures said why, not the deadline


@pytest.mark.anyio
async def test_connect_timeout_fails_only_that_server_quickly() -> None:
    async with McpHub(log_to=io.StringIO()) as hub:
        [status] = await hub.connect([server("sleepy", "slow_start", SLOW_START_SECONDS="60")], timeout=1)
        assert status.state == "failed" and status.error is not None
        assert "'sleepy'" in status.error and "within 1 s" in status.error
        assert "sleeping 60 s" in status.error
        assert hub.tools() == []


@pytest.mark.anyio
@needs_proc
async def test_cancelled_connect_leaves_nothing_running() -> None:
    log = io.StringIO()
    async with anyio.create_task_group() as group:
        hub = McpHub(log_to=log, task_group=group)
        with anyio.move_on_after(0.5):
            await hub.connect([server("sleepy", "slow_start", SLOW_START_SECONDS="60")], timeout=30)
        assert hub.tools() == []

        async def close_elsewhere() -> None:  # connect and aclose from different tasks
            await hub.aclose()

        group.start_soon(close_elsewhere)
    found = re.search(r"pid (\d+) sleeping 60 s", log.getvalue())
    assert found, log.getvalue()
    assert not alive(int(found.group(1)))
    assert [s.state for s in hub.statuses()] == ["failed"]
    with pytest.raises(McpError, match="closed"):
        await hub.connect([server("late", "basic")])


@pytest.mark.anyio
async def test_repeated_names_and_a_2025_server_without_the_sdk() -> None:
    async with McpHub(log_to=io.StringIO()) as hub:
        first = await hub.connect([server("t", "tiny")])
        second = await hub.connect([server("t", "tiny")])  # connect may be called again; names stay unique
        assert [s.name for s in [*first, *second]] == ["t", "t-2"]
        assert first[0].protocol_version is not None and first[0].protocol_version < "2026"  # fell back to initialize
        assert [t.qualified_name for t in hub.tools()] == ["mcp__t__timed", "mcp__t-2__timed"]
        result = await hub.call("mcp__t-2__timed", {"ms": 1})
        assert set(result.structured) == {"start", "end"}


# ---- crashes, list_changed, shutdown --------------------------------------------------------------------------


@pytest.mark.anyio
async def test_crash_mid_session_then_one_restart(capfd: pytest.CaptureFixture[str]) -> None:
    log = io.StringIO()
    async with McpHub(log_to=log) as hub:
        [status] = await hub.connect([server("crashy", "crashy")])
        assert status.state == "connected"
        first_pid = status.pid
        with pytest.raises(McpError) as crash:
            await hub.call("mcp__crashy__die", {"code": 3})
        message = str(crash.value)
        assert "'crashy'" in message and "exited with code 3" in message
        assert "dying with code 3" in message  # its last stderr line
        assert "restarted on the next call" in message
        assert hub.statuses()[0].state == "failed"
        assert "mcp__crashy__ok" in {t.qualified_name for t in hub.tools()}  # still offered
        result = await hub.call("mcp__crashy__ok", {})  # restarts it
        assert result.content == [{"type": "text", "text": "ok"}]
        [status] = hub.statuses()
        assert status.state == "connected" and status.pid != first_pid
        # a crash while idle is noticed at once, and the next call restarts the server again
        assert status.pid is not None
        os.kill(status.pid, signal.SIGKILL)
        with anyio.fail_after(5):
            while hub.statuses()[0].state == "connected":
                await anyio.sleep(0.02)
        error = hub.statuses()[0].error
        assert error is not None and "killed by SIGKILL" in error
        assert (await hub.call("mcp__crashy__ok", {})).content[0]["text"] == "ok"
    assert "[mcp crashy] crashy: dying with code 3 as asked" in log.getvalue()
    assert capfd.readouterr().out == ""  # nothing of the servers reached our stdout


@pytest.mark.anyio
@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_list_changed_refreshes_tools(protocol: Any) -> None:
    changed = anyio.Event()

    async def on_tools_changed() -> None:
        changed.set()

    async with McpHub(on_tools_changed, log_to=io.StringIO(), protocol=protocol) as hub:
        [status] = await hub.connect([server("live", "basic")])
        assert status.protocol_version == ("2026-07-28" if protocol == "auto" else "2025-11-25")
        assert "mcp__live__fresh" not in {t.qualified_name for t in hub.tools()}
        await hub.call("mcp__live__add_tool_later", {"name": "fresh"})
        with anyio.fail_after(5):
            await changed.wait()
        assert "mcp__live__fresh" in {t.qualified_name for t in hub.tools()}
        assert hub.statuses()[0].tool_count == status.tool_count + 1
        result = await hub.call("mcp__live__fresh", {})
        assert result.content[0]["text"] == "hello from fresh"


@pytest.mark.anyio
async def test_roots_are_offered_to_servers_that_ask(tmp_path: Path) -> None:
    async with McpHub(log_to=io.StringIO(), roots=[tmp_path], protocol="legacy") as hub:
        [status] = await hub.connect([server("rooted", "basic")])
        assert status.state == "connected", status.error
        result = await hub.call("mcp__rooted__roots", {})
        assert result.structured == {"result": [f"{tmp_path.name}={tmp_path.as_uri()}"]}


@pytest.mark.anyio
@needs_proc
async def test_aclose_ends_every_process_even_a_stubborn_one() -> None:
    async with McpHub(log_to=io.StringIO()) as hub:
        statuses = await hub.connect([server("stubborn", "crashy", CRASHY_STUBBORN="1"), server("polite", "crashy")])
        assert [s.state for s in statuses] == ["connected", "connected"]
        pids = [s.pid for s in statuses]
        assert all(pid and alive(pid) for pid in pids)
        grandchild = int((await hub.call("mcp__stubborn__grandchild_pid", {})).content[0]["text"])
        assert grandchild and alive(grandchild)
        await hub.aclose()
        assert [s.state for s in hub.statuses()] == ["closed", "closed"]
        assert hub.tools() == []
    for pid in [*pids, grandchild]:
        assert pid is not None and not alive(pid), pid
    assert all(group_members(pid) == [] for pid in pids if pid)


# ---- HTTP and SSE --------------------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_http_and_sse_connect_and_call(transport: Any) -> None:
    with serve_http(transport) as url:
        async with McpHub(log_to=io.StringIO()) as hub:
            [status] = await hub.connect([McpServerSpec(name="web", transport=transport, url=url)], timeout=20)
            assert status.state == "connected", status.error
            assert status.transport == transport and status.tool_count >= 10
            result = await hub.call("mcp__web__echo", {"text": f"over {transport}"})
            assert result.content == [{"type": "text", "text": f"over {transport}"}]
            image = await hub.call("mcp__web__image", {})
            assert image.content[1]["type"] == "image_url"


@pytest.mark.anyio
async def test_http_server_that_is_not_there_fails_clearly() -> None:
    with serve_http("http") as url:
        pass  # the port is free again
    async with McpHub(log_to=io.StringIO()) as hub:
        [status] = await hub.connect([McpServerSpec(name="gone", transport="http", url=url)], timeout=10)
    assert status.state == "failed" and status.error is not None
    assert "'gone'" in status.error and url in status.error


@pytest.mark.anyio
async def test_a_server_that_cannot_be_restarted_or_keeps_crashing_is_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from coder_agent.mcp import hub as hub_module
    from coder_agent.mcp.types import McpClientHooks

    told: list[tuple[str, str, str | None]] = []

    async def notice(severity: Any, title: str, description: str | None) -> None:
        told.append((severity, title, description))

    hooks = McpClientHooks(notice=notice)
    async with McpHub(log_to=io.StringIO(), hooks=hooks) as hub:
        await hub.connect([server("once", "crashy", CRASHY_ONCE=str(tmp_path / "started"))])
        with pytest.raises(McpError):
            await hub.call("mcp__once__die", {"code": 3})
        with pytest.raises(McpError, match="restarting it failed"):
            await hub.call("mcp__once__ok", {})
    [(severity, title, description)] = told
    assert severity == "warning" and title == "The MCP server once stopped and could not be restarted"
    assert description is not None and "exited with code 4" in description

    told.clear()
    monkeypatch.setattr(hub_module, "MAX_RESTARTS", 0)
    async with McpHub(log_to=io.StringIO(), hooks=hooks) as hub:
        await hub.connect([server("crashy", "crashy")])
        with pytest.raises(McpError):
            await hub.call("mcp__crashy__die", {"code": 3})
        for _ in range(2):
            with pytest.raises(McpError, match="not restarting it again"):
                await hub.call("mcp__crashy__ok", {})
    assert [(s, t) for s, t, _ in told] == [
        ("error", "The MCP server crashy keeps crashing; it is not restarted again")
    ]


def _launcher(folder: Path, marker: Path) -> None:
    """`folder/mcp-tiny`: writes `marker`, then is the `tiny` server."""
    folder.mkdir(parents=True)
    script = folder / "mcp-tiny"
    script.write_text(f'#!/bin/sh\necho ran > "{marker}"\nexec "{sys.executable}" -m tests.support.mcp_servers.tiny\n')
    script.chmod(0o755)


@pytest.mark.anyio
async def test_a_server_command_planted_on_path_in_the_session_folders_never_runs(tmp_path: Path) -> None:
    """A command of the session planted `mcp-tiny` in the project's `node_modules/.bin`, which the user put first
    on PATH: a server that runs outside the walls takes the one outside the session's folders, and with none there
    is refused, saying where the planted one lies. Without the session's folders given, the plant runs."""
    work = tmp_path / "work"
    planted, planted_marker = work / "node_modules" / ".bin", tmp_path / "planted-ran"
    installed, installed_marker = tmp_path / "tools" / "bin", tmp_path / "installed-ran"
    _launcher(planted, planted_marker)
    _launcher(installed, installed_marker)

    def spec(*path: Path) -> McpServerSpec:
        env = {"PATH": os.pathsep.join([*map(str, path), os.environ.get("PATH", os.defpath)])}
        return McpServerSpec(name="tiny", transport="stdio", command="mcp-tiny", env=env, cwd=str(ROOT))

    async with McpHub(log_to=io.StringIO()) as hub:  # no session folders: the plant runs
        [status] = await hub.connect([spec(planted, installed)], timeout=30)
        assert status.state == "connected" and planted_marker.exists()
    planted_marker.unlink()

    async with McpHub(log_to=io.StringIO(), roots=[work]) as hub:
        [status] = await hub.connect([spec(planted, installed)], timeout=30)
        assert status.state == "connected"
        assert installed_marker.exists() and not planted_marker.exists()
    async with McpHub(log_to=io.StringIO(), roots=[work]) as hub:
        [status] = await hub.connect([spec(planted)], timeout=30)
        assert status.state == "failed" and status.error is not None
        assert "inside the session's folders" in status.error and str(planted) in status.error
        assert not planted_marker.exists()
