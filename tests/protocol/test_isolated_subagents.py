"""Isolated sub-agents in-process: `general` children that work in git worktrees of their own, side by side, whose
changes come back as one merge question each (every file's diff), written through the editor only once approved, and
whose worktrees and branches are gone afterwards however the turn ended."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from coder_agent.isolation import places
from coder_agent.model.base import ModelError
from coder_agent.model.scripted import Call, Reply, Request
from tests.protocol.test_subagents import Script, announced, results, states
from tests.support.asker import FakeAsker, accept, elicitation_capabilities
from tests.support.editor import FakeEditor
from tests.support.scripted_agent import tool_agent

pytestmark = pytest.mark.anyio

LINES = [f"line {n}\n" for n in range(1, 31)]
SHOWN = {"subagents": {}}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True)
    return done.stdout


def fixture_repository(work: Path) -> None:
    """A repository with a few files committed, and one change not committed yet."""
    git(work, "init", "-q", "-b", "main")
    git(work, "config", "user.email", "dev@example.com")
    git(work, "config", "user.name", "Dev")
    (work / "shared.txt").write_text("".join(LINES))
    (work / "b.txt").write_text("b one\nb two\n")
    (work / "gone.txt").write_text("to be deleted\n")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "start")
    (work / "b.txt").write_text("b one\nb two\nb three (not committed)\n")


def isolated(description: str, prompt: str) -> Call:
    return Call("task", {"description": description, "prompt": prompt, "kind": "general", "isolate": True})


def edit(path: str, old: str, new: str) -> Call:
    return Call("edit_file", {"path": path, "old_string": old, "new_string": new})


def left_behind(work: Path) -> tuple[str, str, list[Path]]:
    """The worktrees and scratch branches of the repository, and the children's folders still on disk."""
    worktrees = git(work, "worktree", "list", "--porcelain")
    branches = git(work, "branch", "--list", "coder-agent/*")
    root = places.private_root()
    folders = [child for agent in root.iterdir() for child in agent.iterdir() if child.is_dir()] if root.exists() else []
    return worktrees, branches, folders


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
    work = tmp_path / "work"
    work.mkdir()
    fixture_repository(work)
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
                seen_before.append({p.name: p.read_text() for p in sorted(work.glob("*.txt"))})
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
    expected[1] = (
        f"<<<<<<< workspace\nline 2 by {first}\n||||||| before\nline 2\n=======\nline 2 by {second}\n"
        f">>>>>>> {label}\n"
    )
    assert shared == "".join(expected), "the union where they do not overlap, a conflict where they do"
    assert (work / "a.txt").read_text() == "new from alpha\n"
    assert (work / "b.txt").read_text() == "b ONE by beta\nb two\nb three (not committed)\n", "uncommitted kept"
    conflicted = next(params for params in asked if "apply-marked" in json.dumps(params["options"]))
    assert "Conflict in shared.txt" in json.dumps(conflicted["toolCall"]["content"])
    assert diffs(conflicted)["shared.txt"][1].count("<<<<<<<") == 1, "the question shows the conflict"
    answers = results(script.requests[-1])
    assert any("Conflicts between" in a and "resolve each" in a for a in answers), "the parent model resolves it"
    assert set(states(client, session).values()) == {"completed"}
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
