"""apply_patch end to end on the scripted model: one permission question with every file's diff, all files or none,
the same containment, staleness and undo as edit_file, and the edit tool each model family is offered."""

from __future__ import annotations

from pathlib import Path

import pytest

from coder_agent.model.scripted import Call, Reply, ScriptedModel
from tests.support.scripted_agent import tool_agent

pytestmark = pytest.mark.anyio


def calls(*tool_calls: Call) -> list[Reply]:
    return [Reply(calls=[call]) for call in tool_calls] + [Reply("Done.")]


def results(model: ScriptedModel) -> list[str]:
    return [m["content"] for m in model.last_request.messages if m["role"] == "tool"]


def patch(*body: str) -> Call:
    return Call("apply_patch", {"input": "\n".join(["*** Begin Patch", *body, "*** End Patch"])})


def read(path: str) -> Call:
    return Call("read_file", {"path": path})


async def test_a_patch_of_several_files_asks_once_with_every_diff_and_undoes_whole(tmp_path: Path) -> None:
    model = ScriptedModel(
        calls(
            read("app.py"),
            patch(
                "*** Update File: app.py",
                "@@ def main():",
                "-    return 1",
                "+    return helper()",
                "*** Add File: helper.py",
                "+def helper():",
                "+    return 2",
                "*** Delete File: old.py",
                "*** Update File: notes.txt",
                "*** Move to: docs/notes.txt",
            ),
        )
    )
    async with tool_agent(tmp_path, model, edit_tool="apply_patch") as (client, editor, session, work):
        (work / "app.py").write_text("import os\n\n\ndef main():\n    return 1\n")
        (work / "old.py").write_text("obsolete = True\n")
        (work / "notes.txt").write_text("remember\n")
        assert await client.prompt(session, "refactor") == "end_turn"
        assert "apply_patch" in model.last_request.tool_names and "edit_file" not in model.last_request.tool_names
        (asked,) = editor.permission_requests
        diffs = [c for c in asked["toolCall"]["content"] if c["type"] == "diff"]
        assert [(d["path"], d.get("oldText")) for d in diffs] == [
            (str(work / "app.py"), "import os\n\n\ndef main():\n    return 1\n"),
            (str(work / "helper.py"), None),
            (str(work / "old.py"), "obsolete = True\n"),
            (str(work / "docs/notes.txt"), "remember\n"),
        ]
        assert "Moves notes.txt to docs/notes.txt." in str(asked["toolCall"]["content"])
        assert (work / "app.py").read_text().endswith("    return helper()\n")
        assert (work / "helper.py").read_text() == "def helper():\n    return 2\n"
        assert not (work / "old.py").exists() and not (work / "notes.txt").exists()
        assert (work / "docs/notes.txt").read_text() == "remember\n"
        report = results(model)[1]
        assert "The patch was applied: updated app.py (1 hunk); added helper.py (2 lines); deleted old.py; " in report
        assert "moved notes.txt to docs/notes.txt" in report
        assert "     5\t    return helper()" in report
        start = client.session_updates(session, "tool_call")[1]
        assert start["title"] == "Patch app.py, helper.py, old.py and 2 more"
        assert start["kind"] == "edit"

        assert await client.prompt(session, "/undo") == "end_turn"
    assert (work / "app.py").read_text().endswith("    return 1\n")
    assert (work / "old.py").read_text() == "obsolete = True\n"
    assert (work / "notes.txt").read_text() == "remember\n"
    assert not (work / "helper.py").exists() and not (work / "docs/notes.txt").exists()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (["*** Delete File: missing.py"], "cannot delete missing.py: it does not exist"),
        (["*** Update File: a.py", "*** Move to: b.py"], "cannot move a.py to b.py: b.py already exists"),
        (["*** Update File: a.py", "-nowhere", "+x"], "does not apply"),
        (["*** Update File: a.py", "-a = 1", "+a = 2", "*** Bogus: x"], "unknown header"),
    ],
)
async def test_bad_patches_fail_before_asking_and_change_nothing(tmp_path: Path, body: list[str], message: str) -> None:
    model = ScriptedModel(calls(read("a.py"), patch(*body)))
    async with tool_agent(tmp_path, model, edit_tool="apply_patch") as (client, editor, session, work):
        (work / "a.py").write_text("a = 1\n")
        (work / "b.py").write_text("b = 1\n")
        await client.prompt(session, "go")
    assert message in results(model)[1]
    assert "Nothing was applied" in results(model)[1]
    assert editor.permission_requests == [] and editor.writes == []
    assert (work / "a.py").read_text() == "a = 1\n" and (work / "b.py").read_text() == "b = 1\n"


async def test_a_bad_header_is_a_clear_error(tmp_path: Path) -> None:
    model = ScriptedModel(calls(Call("apply_patch", {"input": "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"})))
    async with tool_agent(tmp_path, model) as (client, editor, session, work):
        await client.prompt(session, "go")
    assert "must start with `*** Begin Patch`" in results(model)[0]
    status = [u for u in client.session_updates(session, "tool_call_update") if u.get("status") == "failed"]
    assert status[-1]["content"][0]["content"]["text"] == "The patch has a bad header."


async def test_updates_need_a_read_first_and_stale_files_are_refused(tmp_path: Path) -> None:
    model = ScriptedModel(
        calls(
            patch("*** Update File: a.py", "-a = 1", "+a = 2"),
            read("a.py"),
            patch("*** Update File: a.py", "-a = 1", "+a = 2"),
        )
    )
    async with tool_agent(tmp_path, model, edit_tool="apply_patch") as (client, editor, session, work):
        (work / "a.py").write_text("a = 1\n")
        real_read = editor.read_text_file
        reads = 0

        async def read_then_user_types(params: dict[str, object]) -> dict[str, object]:
            nonlocal reads
            reads += 1
            result = await real_read(params)
            if reads == 2:  # read_file's read: the user types right after it
                (work / "a.py").write_text("a = 1\nb = 2\n")
            return result

        client.handlers["fs/read_text_file"] = read_then_user_types
        await client.prompt(session, "go")
    first, _, third = results(model)
    assert "Read " in first and "before you patch it" in first
    assert "has changed since you last read it" in third
    assert editor.writes == []


async def test_a_rejected_patch_touching_a_file_outside_writes_nothing(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("keep\n")
    model = ScriptedModel(
        calls(read("a.py"), patch("*** Update File: a.py", "-a = 1", "+a = 2", f"*** Delete File: {outside}"))
    )
    async with tool_agent(tmp_path, model, edit_tool="apply_patch", mode="accept-edits") as (
        client,
        editor,
        session,
        work,
    ):
        (work / "a.py").write_text("a = 1\n")
        editor.default_permission = "reject_once"
        await client.prompt(session, "go")
    (asked,) = editor.permission_requests
    assert "outside the workspace" in str(asked["toolCall"]["content"])
    assert outside.read_text() == "keep\n" and (work / "a.py").read_text() == "a = 1\n"
    assert editor.writes == []


async def test_a_write_that_fails_puts_back_the_files_written_before_it(tmp_path: Path) -> None:
    model = ScriptedModel(
        calls(read("a.py"), patch("*** Update File: a.py", "-a = 1", "+a = 2", "*** Add File: blocker/x.py", "+x"))
    )
    async with tool_agent(tmp_path, model, edit_tool="apply_patch", mode="accept-edits") as (
        client,
        editor,
        session,
        work,
    ):
        (work / "a.py").write_text("a = 1\n")
        (work / "blocker").write_text("a file where a folder would go\n")
        await client.prompt(session, "go")
    assert "were put back, so nothing changed" in results(model)[1]
    assert (work / "a.py").read_text() == "a = 1\n"
    assert [text for _, text in editor.writes] == ["a = 2\n", "a = 1\n"], "written, then put back"


async def test_each_family_is_offered_its_edit_tool_and_either_one_runs(tmp_path: Path) -> None:
    model = ScriptedModel(
        calls(read("a.py"), Call("edit_file", {"path": "a.py", "old_string": "a = 1", "new_string": "a = 2"}))
    )
    async with tool_agent(tmp_path, model, mode="accept-edits") as (client, editor, session, work):
        (work / "a.py").write_text("a = 1\n")
        await client.prompt(session, "go")
    assert "edit_file" in model.last_request.tool_names, "the scripted model is no patch family: edit_file"
    assert (work / "a.py").read_text() == "a = 2\n"

    (tmp_path / "gpt").mkdir()
    gpt = ScriptedModel(
        calls(read("a.py"), Call("edit_file", {"path": "a.py", "old_string": "a = 2", "new_string": "3"}))
    )
    async with tool_agent(tmp_path / "gpt", gpt, mode="accept-edits", edit_tool="apply_patch") as (
        client,
        editor,
        session,
        work,
    ):
        (work / "a.py").write_text("a = 2\n")
        await client.prompt(session, "go")
    assert gpt.last_request.tool_names.count("apply_patch") == 1 and "edit_file" not in gpt.last_request.tool_names
    assert (work / "a.py").read_text() == "3\n", "a call of the tool not offered still runs"
