"""The auto mode's verdicts, as a table: edits in the workspace and commands inside the sandbox run unasked; a
command that would run outside it asks (whatever the rules say, and with no "always" offered), and every other check
of the policy still holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from coder_agent.permissions import Action, PermissionPolicy, Rule, analyse, offer, resolve
from coder_agent.permissions.network import judge
from coder_agent.permissions.paths import command_writes


def _policy(
    root: Path, mode: str = "auto", allow: tuple[str, ...] = (), deny: tuple[str, ...] = ()
) -> PermissionPolicy:
    policy = PermissionPolicy(root, mode, [Rule.parse(r) for r in allow], [Rule.parse(r) for r in deny])  # type: ignore[arg-type]
    policy.sandboxed = True
    return policy


def _command(root: Path, line: str, *, sandboxed: bool = True, outside: str | None = None) -> Action:
    parsed = analyse(line)
    writes = command_writes(parsed, [root])
    return Action(
        "execute", command=parsed, writes=writes, sandboxed=sandboxed and outside is None, outside_because=outside
    )


ROWS = [
    # (name, mode, allow, deny, action builder, expected)
    ("edit-inside", "auto", (), (), lambda r: Action("edit", places=(resolve("src/a.py", [r]),)), "allow"),
    ("edit-git-config", "auto", (), (), lambda r: Action("edit", places=(resolve(".git/config", [r]),)), "ask"),
    ("edit-outside", "auto", (), (), lambda r: Action("edit", places=(resolve("/etc/hosts", [r]),)), "ask"),
    ("read-inside", "auto", (), (), lambda r: Action("read", places=(resolve("a.py", [r]),)), "allow"),
    ("command-sandboxed", "auto", (), (), lambda r: _command(r, "pytest -q"), "allow"),
    ("command-pipeline-sandboxed", "auto", (), (), lambda r: _command(r, "make && ./run | tee out.txt"), "allow"),
    ("command-not-sandboxed", "auto", (), (), lambda r: _command(r, "pytest -q", sandboxed=False), "ask"),
    ("command-outside-asked", "auto", (), (), lambda r: _command(r, "npm publish", outside="publish"), "ask"),
    (
        "outside-even-with-allow-rule",
        "auto",
        ("execute:npm",),
        (),
        lambda r: _command(r, "npm i", outside="net"),
        "ask",
    ),
    ("outside-everything-rule", "auto", ("execute:*",), (), lambda r: _command(r, "ls", outside="why"), "ask"),
    ("deny-rule-wins", "auto", (), ("execute:rm",), lambda r: _command(r, "rm -rf build"), "deny"),
    ("deny-rule-in-pipeline", "auto", (), ("execute:curl",), lambda r: _command(r, "true && curl x | sh"), "deny"),
    ("unparsed-with-deny-rules", "auto", (), ("execute:rm",), lambda r: _command(r, "$CMD x"), "ask"),
    ("mentions-deny-words", "auto", (), ("execute:rm",), lambda r: _command(r, "strace rm f"), "ask"),
    ("visible-write-outside", "auto", (), (), lambda r: _command(r, "echo x > /etc/evil"), "ask"),
    (
        "fetch-asks",
        "auto",
        (),
        (),
        lambda r: Action("fetch", target=judge("https://pypi.org", ("151.101.0.223",))),
        "ask",
    ),
    ("mcp-tool-asks", "auto", (), (), lambda r: Action("other", tool="mcp__gh__create_issue"), "ask"),
    ("full-auto-outside-allowed", "full-auto", (), (), lambda r: _command(r, "ls", sandboxed=False), "allow"),
    ("default-outside-asks-with-rule", "default", ("execute:ls",), (), lambda r: _command(r, "ls", outside="x"), "ask"),
    ("default-sandboxed-still-asks", "default", (), (), lambda r: _command(r, "ls"), "ask"),
    ("accept-edits-command-asks", "accept-edits", (), (), lambda r: _command(r, "ls"), "ask"),
    ("read-only-command-denied", "read-only", (), (), lambda r: _command(r, "ls"), "deny"),
]


@pytest.mark.parametrize("row", ROWS, ids=[row[0] for row in ROWS])
def test_auto_mode_table(row: tuple, tmp_path: Path) -> None:  # type: ignore[type-arg]
    _, mode, allow, deny, build, expected = row
    (tmp_path / ".git").mkdir()
    verdict = _policy(tmp_path, mode, allow, deny).decide(build(tmp_path))
    assert verdict.decision == expected, verdict.reason


def test_a_command_leaving_the_sandbox_is_never_offered_an_always(tmp_path: Path) -> None:
    policy = _policy(tmp_path)
    action = _command(tmp_path, "npm install", outside="the registry is not allowed")
    verdict = policy.decide(action)
    assert verdict.decision == "ask" and "outside the sandbox: the registry is not allowed" in verdict.reason
    assert [c.kind for c in offer(policy, action).choices()] == ["allow_once", "reject_once"]
    inside = _command(tmp_path, "npm install")
    policy.mode = "default"
    assert "allow_always" in [c.kind for c in offer(policy, inside).choices()]
