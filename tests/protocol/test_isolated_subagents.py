"""Isolated sub-agents in-process: `general` children that work in git worktrees of their own, side by side, whose
changes come back as one merge question each (every file's diff), written through the editor only once approved, and
whose worktrees and branches are gone afterwards however the turn ended."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from coder_agent.isolation import places
from coder_agent.model.base import ModelError
from coder_agent.model.scripted import Call, Reply, Request
from tests.protocol.test_lsp_edits import LSP
from tests.protocol.test_subagents import Script, announced, results, states
from tests.support.asker import FakeAsker, accept, elicitation_capabilities
from tests.support.editor import FakeEditor
from tests.support.lsp_servers import MARKED
from tests.support.scripted_agent import tool_agent
from tests.unit.isolation.test_places import made_by_a_killed_agent

pytestmark = pytest.mark.anyio

LINES = [f"line {n}\n" for n in range(1, 31)]
SHOWN = {"subagents": {}}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True)
    return done.stdout


def fixture_repository(tmp_path: Path) -> Path:
    """A repository (the session's folder) with a few files committed, and one change not committed yet."""
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    git(work, "config", "user.email", "dev@example.com")
    git(work, "config", "user.name", "Dev")
    (work / "shared.txt").write_text("".join(LINES))
    (work / "b.txt").write_text("b one\nb two\n")
    (work / "gone.txt").write_text("to be deleted\n")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "start")
    (work / "b.txt").write_text("b one\nb two\nb three (not committed)\n")
    return work


def texts(work: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(work.glob("*.txt"))}


def isolated(description: str, prompt: str) -> Call:
    return Call("task", {"description": description, "prompt": prompt, "kind": "general", "isolate": True})


def write(name: str) -> Call:
    return Call("write_file", {"path": f"{name}.txt", "content": "x\n"})


def edit(path: str, old: str, new: str) -> Call:
    return Call("edit_file", {"path": path, "old_string": old, "new_string": new})


def left_behind(work: Path) -> tuple[str, str, list[Path]]:
    """The worktrees and scratch branches of the repository, and the children's folders still on disk."""
    worktrees = git(work, "worktree", "list", "--porcelain")
    branches = git(work, "branch", "--list", "coder-agent/*")
    return worktrees, branches, children_on_disk()


def children_on_disk() -> list[Path]:
    root = places.private_root()
    return [child for agent in root.iterdir() for child in agent.iterdir() if child.is_dir()] if root.exists() else []


def assert_nothing_left(work: Path) -> None:
    worktrees, branches, folders = left_behind(work)
    assert worktrees.count("worktree ") == 1, worktrees
    assert branches == "" and folders == []


def merge_question(params: dict[str, Any]) -> bool:
    return any(option["optionId"] == "discard" for option in params["options"])


def diffs(params: dict[str, Any]) -> dict[str, tuple[str | None, str]]:
    return {
        Path(c["path"]).name: (c.get("oldText"), c["newText"])
        for c in params["toolCall"]["content"]
        if c["type"] == "diff"
    }


async def test_three_isolated_children_merge_as_a_union_where_they_do_not_overlap_and_a_conflict_where_they_do(
    tmp_path: Path,
) -> None:
    work = fixture_repository(tmp_path)
    started: set[str] = set()
    all_started = anyio.Event()

    def begin(name: str, path: str) -> Any:
        def reply(request: Request) -> Reply:
            started.add(name)
            if len(started) == 3:
                all_started.set()
            cwd = request.messages[0]["content"]
            assert str(work) not in cwd.split("Working directory: ", 1)[1].split("\n", 1)[0], "its own folder"
            return Reply(calls=[Call("read_file", {"path": path})], hold=all_started, hold_after=0)

        return reply

    children = {
        "alpha": [
            begin("alpha", "shared.txt"),
            Reply(calls=[edit("shared.txt", "line 2\n", "line 2 by alpha\n")]),
            Reply(calls=[Call("write_file", {"path": "a.txt", "content": "new from alpha\n"})]),
            Reply("alpha done"),
        ],
        "beta": [
            begin("beta", "shared.txt"),
            Reply(calls=[edit("shared.txt", "line 25\n", "line 25 by beta\n")]),
            Reply(calls=[Call("read_file", {"path": "b.txt"})]),
            Reply(calls=[edit("b.txt", "b one\n", "b ONE by beta\n")]),
            Reply("beta done"),
        ],
        "gamma": [
            begin("gamma", "shared.txt"),
            Reply(calls=[edit("shared.txt", "line 2\n", "line 2 by gamma\n")]),
            Reply("gamma done"),
        ],
    }
    parent = [Reply(calls=[isolated(f"Do {n}", n) for n in ("alpha", "beta", "gamma")]), Reply("merged")]
    script = Script(parent, children)
    asked: list[dict[str, Any]] = []
    seen_before: list[dict[str, str]] = []
    agent = tool_agent(tmp_path, script.model, mode="accept-edits", client_capabilities=SHOWN)
    async with agent as (client, editor, session, _):
        answer = editor.request_permission

        async def on_permission(params: dict[str, Any]) -> dict[str, Any]:
            if merge_question(params):
                asked.append(params)
                seen_before.append(texts(work))
                ids = [o["optionId"] for o in params["options"]]
                pick = "apply-marked" if "apply-marked" in ids else "apply"
                return {"outcome": {"outcome": "selected", "optionId": pick}}
            return await answer(params)

        client.handlers["session/request_permission"] = on_permission
        assert await client.prompt(session, "three at once") == "end_turn"
        during = left_behind(work)
        await client.request("session/close", {"sessionId": session})
    assert len(asked) == 3
    assert seen_before[0]["shared.txt"] == "".join(LINES), "nothing is written before the first merge is approved"
    assert seen_before[0]["b.txt"].endswith("(not committed)\n") and "a.txt" not in seen_before[0]
    written = [Path(path).name for path, _ in editor.writes]
    assert sorted(written) == ["a.txt", "b.txt", "shared.txt", "shared.txt", "shared.txt"], "through the editor"
    shared = (work / "shared.txt").read_text()
    (first, _), (second, label) = [m for m in _merged(client, session, asked) if m[0] != "beta"]
    expected = LINES.copy()
    expected[24] = "line 25 by beta\n"
    conflict = ["<<<<<<< workspace", f"line 2 by {first}", "||||||| before", "line 2", "=======", f"line 2 by {second}"]
    expected[1] = "\n".join([*conflict, f">>>>>>> {label}\n"])
    assert shared == "".join(expected), "the union where they do not overlap, a conflict where they do"
    assert (work / "a.txt").read_text() == "new from alpha\n"
    assert (work / "b.txt").read_text() == "b ONE by beta\nb two\nb three (not committed)\n", "uncommitted kept"
    conflicted = next(params for params in asked if "apply-marked" in json.dumps(params["options"]))
    assert "Conflict in shared.txt" in json.dumps(conflicted["toolCall"]["content"])
    assert diffs(conflicted)["shared.txt"][1].count("<<<<<<<") == 1, "the question shows the conflict"
    answers = results(script.requests[-1])
    assert any("Conflicts between" in a and "resolve each" in a for a in answers), "the parent model resolves it"
    assert set(states(client, session).values()) == {"completed"}
    for child in announced(client, session):
        assert client.session_updates(child["subagentSessionId"], "usage_update"), "each child's own usage"
        assert child["capabilities"] == {"cancel": True}
    assert during[0].count("worktree ") == 1 and during[1] == "", "gone once the merges are done"
    assert_nothing_left(work)


def _merged(client: Any, session: str, asked: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(task prompt, sub-agent name) of each merge question, in the order they were asked."""
    names = {u["name"]: u["task"].removeprefix("Do ") for u in announced(client, session)}
    order = []
    for params in asked:
        name = json.dumps(params["toolCall"]["content"]).split("**")[1]
        order.append((names[name], name))
    return order


def answering(client: Any, editor: FakeEditor, pick: Any) -> list[dict[str, Any]]:
    """Answer merge questions with `pick` (an option id, "cancelled", or a function of the request's params); the
    editor answers the rest. The merge questions asked, in order."""
    asked: list[dict[str, Any]] = []
    answer = editor.request_permission

    async def on_permission(params: dict[str, Any]) -> dict[str, Any]:
        if not merge_question(params):
            return await answer(params)
        asked.append(params)
        chosen = pick(params) if callable(pick) else pick
        if chosen == "cancelled":
            return {"outcome": {"outcome": "cancelled"}}
        return {"outcome": {"outcome": "selected", "optionId": chosen}}

    client.handlers["session/request_permission"] = on_permission
    return asked


def one_child(replies: list[Any], parent_after: str = "ok") -> Script:
    return Script([Reply(calls=[isolated("Change things", "work")]), Reply(parent_after)], {"work": replies})


CHANGE_TWO = [
    Reply(calls=[Call("read_file", {"path": "shared.txt"}), Call("read_file", {"path": "b.txt"})]),
    Reply(calls=[edit("shared.txt", "line 3\n", "line 3 changed\n"), edit("b.txt", "b two\n", "b 2\n")]),
    Reply("changed both"),
]


async def test_apply_some_takes_the_files_picked_in_a_form_and_discard_takes_none(tmp_path: Path) -> None:
    work = fixture_repository(tmp_path)
    before = texts(work)
    script = Script(
        [Reply(calls=[isolated("Some", "some")]), Reply(calls=[isolated("None", "none")]), Reply("ok")],
        {"some": CHANGE_TWO, "none": CHANGE_TWO},
    )
    capabilities = {"elicitation": elicitation_capabilities(url=False)}
    agent = tool_agent(tmp_path, script.model, mode="accept-edits", client_capabilities=capabilities)
    async with agent as (client, editor, session, _):
        asker = FakeAsker(client)
        asker.answers = [lambda params: accept(files=["b.txt", "not-offered.txt"])]
        asked = answering(client, editor, lambda params: "apply-some" if len(asked) == 1 else "discard")
        assert await client.prompt(session, "go") == "end_turn"
    assert len(asked) == 2 and len(asker.requests) == 1
    form = asker.requests[0]["requestedSchema"]["properties"]["files"]
    assert form["items"]["enum"] == ["b.txt", "shared.txt"]
    assert (work / "b.txt").read_text() == "b one\nb 2\nb three (not committed)\n"
    assert (work / "shared.txt").read_text() == before["shared.txt"], "left out in the form; the second discarded"
    first, second = results(script.of(None)[-1])
    assert "applied to the session's folder: updated b.txt" in first and "left them out): shared.txt" in first
    assert "were not applied (the user discarded them)" in second
    assert_nothing_left(work)


async def test_without_forms_apply_some_asks_about_each_file(tmp_path: Path) -> None:
    work = fixture_repository(tmp_path)
    script = one_child(CHANGE_TWO)
    async with tool_agent(tmp_path, script.model, mode="accept-edits") as (client, editor, session, _):
        merge = answering(client, editor, "apply-some")
        editor.permission_answers = ["option:skip-file", "option:apply-file"]  # b.txt, then shared.txt
        assert await client.prompt(session, "go") == "end_turn"
    assert len(merge) == 1
    per_file = [p for p in editor.permission_requests if "Apply" in json.dumps(p["toolCall"]["content"])]
    assert [list(diffs(p)) for p in per_file] == [["b.txt"], ["shared.txt"]]
    assert (work / "b.txt").read_text().startswith("b one\nb two\n")
    assert "line 3 changed\n" in (work / "shared.txt").read_text()
    assert_nothing_left(work)


async def test_a_merge_answered_cancelled_changes_nothing_and_leaves_nothing(tmp_path: Path) -> None:
    work = fixture_repository(tmp_path)
    before = texts(work)
    script = one_child(CHANGE_TWO)
    async with tool_agent(tmp_path, script.model, mode="accept-edits") as (client, editor, session, _):
        asked = answering(client, editor, "cancelled")
        assert await client.prompt(session, "go") == "cancelled"
    assert len(asked) == 1 and editor.writes == []
    assert texts(work) == before
    assert_nothing_left(work)


async def test_undo_takes_the_merge_back_as_one_step_and_a_rewind_takes_the_whole_turn(tmp_path: Path) -> None:
    work = fixture_repository(tmp_path)
    before = texts(work)
    parent = [
        Reply(calls=[Call("read_file", {"path": "gone.txt"})]),
        Reply(calls=[edit("gone.txt", "to be deleted\n", "edited by the parent\n")]),
        Reply(calls=[isolated("Change things", "work")]),
        Reply("done"),
    ]
    child = [
        Reply(calls=[Call("read_file", {"path": "shared.txt"})]),
        Reply(calls=[edit("shared.txt", "line 3\n", "line 3 changed\n")]),
        Reply(calls=[Call("run_command", {"command": "rm gone.txt && printf 'made\\n' > made.txt"})]),
        Reply("done"),
    ]
    script = Script(parent, {"work": child})
    async with tool_agent(tmp_path, script.model, mode="accept-edits") as (client, editor, session, _):
        answering(client, editor, "apply")
        prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}
        user_message = (await client.request("session/prompt", prompt))["userMessageId"]
        merged = texts(work)
        assert await client.prompt(session, "/undo") == "end_turn"
        after_undo = texts(work)
        rewound = {"sessionId": session, "messageId": user_message, "mode": "files"}
        await client.request("_session/rewind", rewound)
    assert merged["shared.txt"] != before["shared.txt"] and merged["made.txt"] == "made\n"
    assert "gone.txt" not in merged, "the child started after the parent's edit: its deletion merges cleanly"
    assert after_undo == {**before, "gone.txt": "edited by the parent\n"}, "the merge was one undo step"
    assert texts(work) == before
    assert_nothing_left(work)


async def test_a_child_cancelled_mid_write_applies_nothing_and_leaves_nothing(tmp_path: Path) -> None:
    work = fixture_repository(tmp_path)
    before = texts(work)
    wrote, never = anyio.Event(), anyio.Event()

    def stuck(request: Request) -> Reply:
        wrote.set()
        return Reply("…", hold=never, hold_after=0)

    script = one_child([*CHANGE_TWO[:2], stuck])
    agent = tool_agent(tmp_path, script.model, mode="accept-edits", client_capabilities=SHOWN)
    async with agent as (client, editor, session, _), anyio.create_task_group() as group:
        asked = answering(client, editor, "apply")

        async def prompt() -> None:
            assert await client.prompt(session, "go") == "end_turn"

        group.start_soon(prompt)
        with anyio.fail_after(30):
            await wrote.wait()
        child = announced(client, session)[0]["subagentSessionId"]
        await client.notify("session/cancel", {"sessionId": child})
    assert asked == [] and editor.writes == []
    assert texts(work) == before
    assert "none of its changes were applied" in results(script.of(None)[-1])[0]
    assert_nothing_left(work)


async def test_two_children_creating_the_same_file_conflict_and_the_user_picks_a_side(tmp_path: Path) -> None:
    work = fixture_repository(tmp_path)
    both = anyio.Event()
    made: list[str] = []

    def create(name: str) -> Any:
        def reply(request: Request) -> Reply:
            made.append(name)
            if len(made) == 2:
                both.set()
            return Reply(calls=[Call("write_file", {"path": "new.txt", "content": f"{name}\n"})], hold=both)

        return reply

    children = {name: [create(name), Reply(f"{name} done")] for name in ("first", "second")}
    script = Script([Reply(calls=[isolated("One", "first"), isolated("Two", "second")]), Reply("ok")], children)
    async with tool_agent(tmp_path, script.model, mode="accept-edits") as (client, editor, session, _):
        asked = answering(client, editor, lambda params: "apply-theirs" if len(asked) == 2 else "apply")
        assert await client.prompt(session, "go") == "end_turn"
    assert [list(diffs(params)) for params in asked] == [["new.txt"], ["new.txt"]]
    assert "created in the workspace and by general-" in json.dumps(asked[1]["toolCall"]["content"])
    second = diffs(asked[1])["new.txt"]
    assert second[0] in ("first\n", "second\n") and "<<<<<<< workspace" in second[1]
    assert (work / "new.txt").read_text() != second[0], "the second child's side"
    assert_nothing_left(work)


async def test_closing_the_session_while_a_child_works_removes_its_worktree_and_branch(tmp_path: Path) -> None:
    work = fixture_repository(tmp_path)
    working, never = anyio.Event(), anyio.Event()

    def stuck(request: Request) -> Reply:
        working.set()
        return Reply("…", hold=never, hold_after=0)

    script = one_child([CHANGE_TWO[0], CHANGE_TWO[1], stuck])
    agent = tool_agent(tmp_path, script.model, mode="accept-edits")
    async with agent as (client, editor, session, _), anyio.create_task_group() as group:
        group.start_soon(client.request, "session/prompt", {"sessionId": session, "prompt": []})
        with anyio.fail_after(30):
            await working.wait()
        worktrees, branches, folders = left_behind(work)
        assert worktrees.count("worktree ") == 2 and "coder-agent/ca-" in branches and len(folders) == 1
        await client.request("session/close", {"sessionId": session})
    assert editor.writes == [] and (work / "shared.txt").read_text() == "".join(LINES)
    assert_nothing_left(work)


RENAME = "mv old.txt renamed.txt && mkdir __pycache__ && : > __pycache__/x"


async def test_a_folder_that_is_not_a_repository_is_copied_and_merged_the_same_way(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("alpha\nbeta\n")
    (work / "old.txt").write_text("old\n")
    child = [
        Reply(calls=[Call("read_file", {"path": "notes.txt"})]),
        Reply(calls=[edit("notes.txt", "beta\n", "BETA\n")]),
        Reply(calls=[Call("run_command", {"command": RENAME})]),
        Reply("done"),
    ]
    script = one_child(child)
    async with tool_agent(tmp_path, script.model, mode="accept-edits") as (client, editor, session, _):
        asked = answering(client, editor, "apply")
        assert await client.prompt(session, "go") == "end_turn"
    assert sorted(diffs(asked[0])) == ["notes.txt", "old.txt", "renamed.txt"], "a rename: a deletion and a new file"
    assert sorted(p.name for p in work.iterdir()) == ["notes.txt", "renamed.txt"]
    assert (work / "notes.txt").read_text() == "alpha\nBETA\n"
    prompt = script.of("work")[0].messages[0]["content"]
    assert "a copy of the folder" in prompt and ("cloned" in prompt or "copied" in prompt), "says how it was made"
    assert children_on_disk() == []


async def test_a_child_that_fails_still_offers_what_it_changed(tmp_path: Path) -> None:
    work = fixture_repository(tmp_path)
    script = one_child([*CHANGE_TWO[:2], ModelError("the provider is down")])
    async with tool_agent(tmp_path, script.model, mode="accept-edits") as (client, editor, session, _):
        asked = answering(client, editor, "discard")
        assert await client.prompt(session, "go") == "end_turn"
    assert len(asked) == 1
    told = results(script.of(None)[-1])[0]
    assert "The sub-agent's model failed" in told and "not applied (the user discarded them)" in told
    assert_nothing_left(work)


async def test_at_most_max_isolated_run_at_once_and_the_others_say_they_wait(tmp_path: Path) -> None:
    work = fixture_repository(tmp_path)
    children = {name: [Reply(calls=[write(name)]), Reply("ok")] for name in ("one", "two")}
    script = Script([Reply(calls=[isolated("One", "one"), isolated("Two", "two")]), Reply("ok")], children)
    agent = tool_agent(tmp_path, script.model, mode="accept-edits", subagents={"max_isolated": 1})
    async with agent as (client, editor, session, _):
        answering(client, editor, "apply")
        assert await client.prompt(session, "go") == "end_turn"
    shown = json.dumps(client.session_updates(session, "tool_call_update"))
    assert "waiting: 1 isolated sub-agents run at once" in shown
    assert (work / "one.txt").read_text() == (work / "two.txt").read_text() == "x\n"
    assert_nothing_left(work)


async def test_opening_a_session_sweeps_what_a_killed_agent_left_and_says_so(tmp_path: Path) -> None:
    work = fixture_repository(tmp_path)
    left = made_by_a_killed_agent(places.private_root(), work)
    assert left.is_dir() and "coder-agent/ca-" in git(work, "branch", "--list", "coder-agent/*")
    capabilities = {"session": {"notices": {}}}
    script = Script([Reply("ok")], {})
    async with tool_agent(tmp_path, script.model, client_capabilities=capabilities) as (client, _, session, _):
        assert await client.prompt(session, "hello") == "end_turn"
        await client.wait_for(lambda: bool(client.session_updates(session, "notice")))
    [notice] = client.session_updates(session, "notice")
    assert notice["title"] == "Sub-agents' copies left behind were removed"
    assert "the worktree and branch coder-agent/ca-" in notice["description"]
    assert not left.exists()
    assert_nothing_left(work)


async def test_a_file_name_that_hides_characters_is_shown_escaped(tmp_path: Path) -> None:
    work = fixture_repository(tmp_path)
    script = one_child([Reply(calls=[Call("write_file", {"path": "gpj.\u202etxt", "content": "x\n"})]), Reply("ok")])
    async with tool_agent(tmp_path, script.model, mode="accept-edits") as (client, editor, session, _):
        asked = answering(client, editor, "discard")
        assert await client.prompt(session, "go") == "end_turn"
    question = asked[0]["toolCall"]["content"][0]["content"]["text"]
    told = results(script.of(None)[-1])[0]
    assert "\u202e" not in question + told and "gpj.\\u202etxt" in told
    assert_nothing_left(work)


async def test_a_file_changed_while_asked_is_merged_again_and_a_failing_write_discards(tmp_path: Path) -> None:
    work = fixture_repository(tmp_path)
    script = Script(
        [Reply(calls=[isolated("First", "first")]), Reply(calls=[isolated("Second", "second")]), Reply("ok")],
        {"first": CHANGE_TWO, "second": [CHANGE_TWO[0], Reply(calls=[edit("b.txt", "b one\n", "b 1\n")]), Reply("ok")]},
    )
    async with tool_agent(tmp_path, script.model, mode="accept-edits") as (client, editor, session, _):

        def pick(params: dict[str, Any]) -> str:
            if len(asked) == 1:  # the user edits a file while the first question is open
                (work / "shared.txt").write_text("".join(LINES).replace("line 30\n", "line 30 by the user\n"))
            if len(asked) == 3:
                editor.fail_writes = True
            return "apply"

        asked = answering(client, editor, pick)
        assert await client.prompt(session, "go") == "end_turn"
    assert len(asked) == 3
    assert "A file changed while you were asked" in json.dumps(asked[1]["toolCall"]["content"])
    shared = (work / "shared.txt").read_text()
    assert "line 3 changed\n" in shared and "line 30 by the user\n" in shared, "merged with the user's change"
    first, second = results(script.of(None)[-1])
    assert "applied to the session's folder" in first
    assert "not applied (writing them failed:" in second and "writes fail in this test" in second
    assert_nothing_left(work)


async def test_an_isolated_childs_edits_are_checked_by_language_servers_of_its_own(tmp_path: Path) -> None:
    work = fixture_repository(tmp_path)
    (work / "a.mk").write_text("DEF b\nUSES b\n")
    git(work, "add", "a.mk")
    child = [
        Reply(calls=[Call("read_file", {"path": "a.mk"})]),
        Reply(calls=[edit("a.mk", "DEF b\n", "")]),
        Reply("done"),
    ]
    script = one_child(child)
    running: list[list[int]] = []

    def pick(params: dict[str, Any]) -> str:
        running.append(marked_servers())
        return "apply"

    async with tool_agent(tmp_path, script.model, mode="accept-edits", lsp=LSP) as (client, editor, session, _):
        answering(client, editor, pick)
        assert await client.prompt(session, "go") == "end_turn"
        assert len(running) == 1 and running[0], "its server (and its launcher), running until its changes are merged"
        assert marked_servers() == [], "its servers end with it"
    edited = results(script.of("work")[-1])[1]
    assert "marked reports 1 new problem(s) in a.mk after this edit:" in edited
    assert (work / "a.mk").read_text() == "USES b\n"
    assert_nothing_left(work)


def marked_servers() -> list[int]:
    """The fake language servers of this test still running (those of tests running beside it have another cache)."""
    ours = f"XDG_CACHE_HOME={os.environ['XDG_CACHE_HOME']}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                mine = ours in (entry / "environ").read_bytes()  # the sandbox's caches lie under it
                if mine and str(MARKED).encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found
