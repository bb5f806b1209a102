"""Programs that run other commands through their options, through the protocol: the next step is the victim.

Under an allow rule the user wrote (`execute:git grep`) or an "always" the user gave (`zip`, `sqlite3`), the same
program given a command to run (`git grep -O<cmd>`, `zip -TT <cmd>`, `sqlite3 db '.shell <cmd>'`) asks instead of
running it; and a deny rule for `rm` denies `rm` hidden inside the strings other programs run, before anything runs.
The commands are real: allowed, each would have run its planted command.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from coder_agent.model.scripted import Call, Reply, ScriptedModel
from tests.support.scripted_agent import tool_agent

pytestmark = pytest.mark.anyio


def run(*commands: str) -> ScriptedModel:
    return ScriptedModel([Reply(calls=[Call("run_command", {"command": c})]) for c in commands] + [Reply("Done.")])


def results(model: ScriptedModel) -> list[str]:
    return [m["content"] for m in model.last_request.messages if m["role"] == "tool"]


async def test_an_allow_rule_for_git_grep_does_not_let_it_run_a_pager_command(tmp_path: Path) -> None:
    model = run("git grep -n needle", "git grep -O'touch pwned' needle", "git grep --open='touch pwned' needle")
    allowed = {"allow": ["execute:git grep"]}
    async with tool_agent(tmp_path, model, terminal=False, permissions=allowed) as (client, editor, session, work):
        subprocess.run(["git", "init", "-q", str(work)], check=True)
        (work / "notes.txt").write_text("needle\n")
        subprocess.run(["git", "-C", str(work), "add", "notes.txt"], check=True)
        editor.default_permission = "reject_once"
        await client.prompt(session, "search")
    first, *_ = results(model)
    assert "notes.txt:1:needle" in first, "the rule lets the plain command run unasked"
    assert len(editor.permission_requests) == 2, "both pager forms asked"
    assert not (work / "pwned").exists()


@pytest.mark.parametrize(
    ("approved", "planted"),
    [
        ("zip -q a.zip notes.txt", "zip -q a.zip notes.txt -T -TT 'touch pwned'"),
        ("sqlite3 db.sqlite 'select 1'", "sqlite3 db.sqlite '.shell touch pwned'"),
        ("sqlite3 db.sqlite 'select 1'", "sqlite3 -cmd '.system touch pwned' db.sqlite 'select 1'"),
        ("sqlite3 db.sqlite 'select 1'", "sqlite3 db.sqlite \".once '|touch pwned'\" 'select 1'"),
        ("tar -cf a.tar notes.txt", "tar --checkpoint=1 --checkpoint-action=exec='touch pwned' -cf a.tar notes.txt"),
    ],
)
async def test_an_always_for_a_program_does_not_let_it_run_another(tmp_path: Path, approved: str, planted: str) -> None:
    model = run(approved, planted)
    async with tool_agent(tmp_path, model, terminal=False) as (client, editor, session, work):
        (work / "notes.txt").write_text("needle\n")
        editor.permission_answers = ["allow_always"]
        editor.default_permission = "reject_once"
        await client.prompt(session, "go")
    assert "Remembered for this session: allow `execute:" in client.agent_text(session)
    asked = [request["toolCall"]["rawInput"]["command"] for request in editor.permission_requests]
    assert asked[0] == approved and asked[-1] == planted, "the planted command asked despite the always"
    assert not (work / "pwned").exists()


DISGUISED = [
    "git -c alias.x='!r\\m f0' x",
    "git rebase -x 'r\\m f1' main",
    "ssh -o ProxyCommand='r\\m f2' host",
    "tar --checkpoint=1 --checkpoint-action=exec='r\\m f3' -cf a.tar notes.txt",
    "zip a.zip notes.txt -T -TT 'r\\m f4'",
    "vim -es -c '!r\\m f5' -c q",
    "sqlite3 db.sqlite '.shell r\\m f6'",
    "git grep -O'r\\m f7' needle",
    "make CC='r\\m f8'",
]


async def test_a_deny_rule_for_rm_sees_rm_inside_the_strings_programs_run(tmp_path: Path) -> None:
    model = run(*DISGUISED)
    denied = {"deny": ["execute:rm"]}
    async with tool_agent(tmp_path, model, mode="full-auto", permissions=denied) as (client, editor, session, work):
        for i in range(len(DISGUISED)):
            (work / f"f{i}").write_text("keep\n")
        (work / "notes.txt").write_text("needle\n")
        await client.prompt(session, "clean up")
    assert all("denied by the rule `execute:rm`" in r for r in results(model)), "\n".join(results(model))
    assert all((work / f"f{i}").exists() for i in range(len(DISGUISED)))
    assert editor.terminals == {} and editor.permission_requests == []
