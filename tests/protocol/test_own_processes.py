"""The agent is not the way out: what a sandboxed command or a cloned repository writes never makes the agent's own
next step (a turn after the planting, `session/new` in a crafted clone) run a program or hand over a secret.

Each planting is shown live first: a plain `git status` run by the test springs the trap (a program that writes
down its environment, which holds the agent's keys), so the check that the agent's next turn springs nothing is
not vacuous. Then secrets other than model keys (`GH_TOKEN`, `GITHUB_TOKEN`, `NPM_TOKEN`, a URL with a password)
are looked for where the agent's children could see them: a sandboxed command's environment (locally and in the
editor's terminal), an unsandboxed one's, an MCP server's, the agent's own git's. And `AGENTS.md` made a symlink to
a kept-out file, or to one a deny rule names, never reaches the model. The scripted model drives real tools, real
walls, real git, under the conftest's temporary HOME.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Any

import anyio
import pytest

from coder_agent.model.scripted import Call, Reply, ScriptedModel
from coder_agent.sandbox import probe
from tests.protocol.test_mcp import stdio_server
from tests.support.git_traps import commit_all, lay_out_bare, make_repo, plain_git
from tests.support.scripted_agent import scripted_agent, tool_agent

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not probe.check().available, reason=f"no sandbox here: {probe.check().reason}"),
]

SECRETS = {
    "OPENAI_API_KEY": "sk-own-processes-0123456789",
    "GH_TOKEN": "ghp_own_processes_0123456789",
    "GITHUB_TOKEN": "ghs_own_processes_0123456789",
    "NPM_TOKEN": "npm_own_processes_0123456789",
    "PIP_INDEX_URL": "https://user:p4ss-own-processes@pypi.example.com/simple",
}


@pytest.fixture(autouse=True)
def agent_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)


class Trap:
    """A program that writes down its environment wherever it can: outside the workspace (it ran outside the
    walls) and inside it (it ran at all)."""

    def __init__(self, tmp_path: Path, work: Path) -> None:
        self.outside = tmp_path / "trap"
        self.outside.mkdir()
        self.inside = work
        self.program = self.outside / "program"
        self.program.write_text(
            f'#!/bin/sh\nenv > "{self.outside}/ran.env" 2>/dev/null\nenv > "{work}/trap-ran.env" 2>/dev/null\nexit 0\n'
        )
        self.program.chmod(0o755)

    def sprung(self) -> list[Path]:
        return [p for p in (self.outside / "ran.env", self.inside / "trap-ran.env") if p.exists()]

    def leaked_key(self) -> bool:
        return any(SECRETS["OPENAI_API_KEY"] in p.read_text() for p in self.sprung())

    def reset(self) -> None:
        for path in self.sprung():
            path.unlink()


async def wait_for_file(path: Path) -> None:
    """Until a background job has made `path` (nothing to wait on but the disk)."""
    with anyio.fail_after(60):
        while not await anyio.Path(path).exists():
            await anyio.sleep(0.02)


def quoted(path: Path) -> str:
    return shlex.quote(str(path))


async def plant_then_next_turn(
    tmp_path: Path, planting: str, *, background: bool = False, repo: bool = False, cwd: str = "", ready: str = ""
) -> Trap:
    """In `auto` mode, a sandboxed command (a job with `background`) plants `planting` (with `{program}` the trap);
    the plant is shown live with a plain `git status` in the session folder; then the agent's next turn runs.
    `repo`: the workspace is a repository from the start (its `.git/config` protected); `cwd`: the session's folder
    under it; `ready`: a file the job makes once the plant is in place."""
    work = tmp_path / "work"
    if repo:
        make_repo(work)
    session_folder = work / cwd if cwd else work
    session_folder.mkdir(parents=True, exist_ok=True)
    trap = Trap(tmp_path, session_folder)
    command = planting.format(program=quoted(trap.program))
    call = Call("run_command", {"command": command, "background": background})
    model = ScriptedModel([Reply(calls=[call]), Reply("planted"), Reply("the next turn")])
    async with tool_agent(tmp_path, model, mode="auto", terminal=False, open_session=False) as (client, editor, _, _):
        session = await client.new_session(str(session_folder))
        editor.permission_answers = ["allow_once"]  # the policy may ask about a write it cannot place: still walled
        assert await client.prompt(session, "plant it") == "end_turn"
        if ready:
            await wait_for_file(session_folder / ready)
        plain_git("status", cwd=session_folder)
        assert trap.sprung() and trap.leaked_key(), f"the plant did not take: {model.last_request.messages[-1]}"
        trap.reset()
        assert await client.prompt(session, "go on") == "end_turn"
    return trap


RUNNING = {"background": True, "ready": "planted"}
"""A job that plants, then keeps running: what the walls undo after a command (its git settings) stays meanwhile."""
PLANTINGS: dict[str, tuple[str, dict[str, Any]]] = {
    "fsmonitor-after-git-init": (
        "git init -q && git config core.fsmonitor {program} && echo x > f && git add f && touch planted && sleep 600",
        RUNNING,
    ),
    "config-worktree": (
        "git init -q && git config extensions.worktreeConfig true && git config --worktree core.fsmonitor {program} "
        "&& touch planted && sleep 600",
        RUNNING,
    ),
    "commondir-from-a-running-job": (
        "git init -q && git init -q --bare evil && git -C evil config core.fsmonitor {program} "
        "&& printf '../evil\\n' > .git/commondir && touch planted && sleep 600",
        RUNNING,
    ),
    "nested-repository-behind-a-gitlink": (
        "git init -q sub && git -C sub config user.name T && git -C sub config user.email t@example.com "
        "&& echo x > sub/f && git -C sub add f && git -C sub commit -qm s && echo dirty > sub/f && git add sub "
        "&& git -C sub config core.fsmonitor {program} && touch planted && sleep 600",
        {**RUNNING, "repo": True},
    ),
    "bare-layout-in-the-session-folder": (
        "mkdir objects refs && echo 'ref: refs/heads/main' > HEAD && printf '[core]\\n\\trepositoryformatversion = 0"
        "\\n\\tbare = false\\n\\tworktree = ..\\n\\tfsmonitor = %s\\n' {program} > config",
        {"repo": True, "cwd": "pkg"},
    ),
}
"""What a sandboxed command plants (in a folder that is not yet a repository, unless `repo`)."""


@pytest.mark.parametrize("planting", sorted(PLANTINGS))
async def test_what_a_command_plants_for_git_runs_nothing_next_turn(tmp_path: Path, planting: str) -> None:
    command, options = PLANTINGS[planting]
    trap = await plant_then_next_turn(tmp_path, command, **options)
    assert trap.sprung() == []


@pytest.mark.parametrize("walls", [True, False], ids=["with-walls", "without-walls"])
async def test_session_new_in_a_clone_that_commits_a_bare_layout_runs_nothing(tmp_path: Path, walls: bool) -> None:
    upstream = make_repo(tmp_path / "upstream")
    trap = Trap(tmp_path, tmp_path / "work")
    lay_out_bare(upstream / "pkg", trap.program)
    commit_all(upstream)
    (tmp_path / "work").mkdir()
    clone = tmp_path / "work" / "clone"
    plain_git("clone", "-q", str(upstream), str(clone), cwd=tmp_path)
    plain_git("status", cwd=clone / "pkg")
    assert trap.sprung(), "the committed layout does not work as a repository"
    trap.reset()
    model = ScriptedModel([Reply("hello")])
    sandbox = {} if walls else {"enabled": False}
    async with scripted_agent(tmp_path, model, open_session=False, sandbox=sandbox) as (client, _, _):
        session = await client.new_session(str(clone / "pkg"))
        await client.prompt(session, "hi")  # no tool call: the system prompt and the turn's environment only
    assert trap.sprung() == []


@pytest.mark.parametrize("how", ["kept-out", "deny-rule"])
async def test_agents_md_leading_to_a_secret_never_reaches_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """AGENTS.md made a symlink to `~/.ssh/id_rsa` in a session under a home folder that is a repository (so the
    repository contains the key: only the kept-out list stops it), or to a `.env` a `read:` deny rule names."""
    secret = "-----BEGIN OPENSSH PRIVATE KEY----- own-processes-secret"
    monkeypatch.setenv("HOME", str(tmp_path))
    make_repo(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    if how == "kept-out":
        (tmp_path / ".ssh").mkdir()
        target = tmp_path / ".ssh" / "id_rsa"
        fields: dict[str, Any] = {}
    else:
        target = work / ".env"
        fields = {"permissions": {"deny": ["read:.env"]}}
    target.write_text(secret + "\n")
    (work / "AGENTS.md").symlink_to(target)
    (tmp_path / "AGENTS.md").write_text("Real instructions.\n")  # the repository's, above the session folder
    model = ScriptedModel([Reply("ok")])
    async with tool_agent(tmp_path, model, **fields) as (client, _, session, _):
        await client.prompt(session, "hi")
    sent = json.dumps(model.last_request.messages)
    assert "Real instructions." in sent and "own-processes-secret" not in sent


# ---- secrets other than model keys ------------------------------------------------------------------------------


def assert_no_secret(env_dump: str, *, blank_ok: bool = False) -> None:
    env = dict(line.split("=", 1) for line in env_dump.splitlines() if "=" in line)
    for name, value in SECRETS.items():
        assert all(value not in seen for seen in env.values()), name
        assert name not in env or (blank_ok and env[name] == ""), name


@pytest.mark.parametrize("where", ["sandboxed-local", "sandboxed-editor-terminal", "unsandboxed-local"])
async def test_commands_get_no_token(tmp_path: Path, where: str) -> None:
    model = ScriptedModel([Reply(calls=[Call("run_command", {"command": "env > env.txt"})]), Reply("ok")])
    options: dict[str, Any] = {"mode": "auto", "terminal": where == "sandboxed-editor-terminal"}
    if where == "unsandboxed-local":
        options = {"mode": "full-auto", "terminal": False, "sandbox": {"enabled": False}}
    async with tool_agent(tmp_path, model, **options) as (client, _, session, work):
        await client.prompt(session, "env")
    assert_no_secret((work / "env.txt").read_text(), blank_ok=where == "sandboxed-editor-terminal")


async def test_a_stdio_mcp_server_gets_no_token(tmp_path: Path) -> None:
    calls = [Call("mcp__local__env_var", {"name": name}, id=f"c{i}") for i, name in enumerate(SECRETS)]
    model = ScriptedModel([Reply(calls=calls), Reply("ok")])
    async with tool_agent(tmp_path, model, open_session=False) as (client, _, _, work):
        session = (
            await client.request("session/new", {"cwd": str(work), "mcpServers": [stdio_server("local", "basic")]})
        )["sessionId"]
        await client.prompt(session, "env", timeout=60)
    results = [m["content"] for m in model.last_request.messages if m["role"] == "tool"]
    assert len(results) == len(SECRETS) and all("<unset>" in str(result) for result in results), results


@pytest.mark.parametrize("walls", [True, False], ids=["with-walls", "without-walls"])
async def test_the_agents_own_git_gets_no_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, walls: bool) -> None:
    """A `git` first on PATH, outside the workspace, writes down the environment each turn's git reads give it, and
    tries to leave a mark outside the workspace: the status, run inside the walls where there are walls, cannot."""
    fake_bin, outside = tmp_path / "bin", tmp_path / "outside"
    fake_bin.mkdir()
    outside.mkdir()
    (fake_bin / "git").write_text(
        f'#!/bin/sh\nenv > "$GIT_WORK_TREE/git-env-$$.txt"\ntouch "{outside}/$2" 2>/dev/null\nexit 0\n'
    )
    (fake_bin / "git").chmod(0o755)
    make_repo(tmp_path / "work")
    monkeypatch.setenv("PATH", f"{fake_bin}{os.pathsep}{os.environ['PATH']}")
    sandbox = {} if walls else {"enabled": False}
    async with scripted_agent(tmp_path, ScriptedModel([Reply("ok")]), sandbox=sandbox) as (client, session, _):
        await client.prompt(session, "hi")
    dumps = sorted((tmp_path / "work").glob("git-env-*.txt"))
    assert len(dumps) >= 3, "the agent ran no git"  # config, log, status
    for dump in dumps:
        assert_no_secret(dump.read_text())
    marks = {path.name for path in outside.iterdir()}
    assert {"config", "log"} <= marks and ("status" in marks) != walls, marks


async def test_a_repository_above_the_session_folder_still_gives_its_git_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A package of a monorepo under the home folder: the walls keep the home folder out of commands' reads, and the
    repository is out of their reach, so its status runs outside them; the model still learns the branch."""
    monkeypatch.setenv("HOME", str(tmp_path))
    repo = make_repo(tmp_path / "work")
    (repo / "pkg").mkdir()
    (repo / "pkg" / "module.py").write_text("x = 1\n")
    model = ScriptedModel([Reply("ok")])
    async with scripted_agent(tmp_path, model, open_session=False) as (client, _, _):
        session = await client.new_session(str(repo / "pkg"))
        await client.prompt(session, "hi")
    system = model.last_request.messages[0]["content"]
    assert "main" in system and "not a git repository" not in system, system[-600:]


# ---- programs the agent starts itself, found on PATH --------------------------------------------------------------


@pytest.mark.parametrize(
    "how",
    ["let-out-local", "let-out-editor-terminal", "full-auto-local", "without-walls-local"],
)
async def test_a_bash_planted_on_path_in_the_workspace_never_runs_a_command_outside_the_walls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """The user put the project's `node_modules/.bin` first on PATH, and a `bash` lies there (a sandboxed command or
    the cloned repository left it): a command that runs outside the walls (let out by the user, in `full-auto`, or
    with no walls at all) starts the system's shell, not that one."""
    work = tmp_path / "work"
    planted_bin = work / "node_modules" / ".bin"
    planted_bin.mkdir(parents=True)
    marker = tmp_path / "planted-bash-ran"
    (planted_bin / "bash").write_text(f'#!/bin/sh\ntouch "{marker}"\nexit 0\n')
    (planted_bin / "bash").chmod(0o755)
    monkeypatch.setenv("PATH", f"{planted_bin}{os.pathsep}{os.environ['PATH']}")
    await anyio.run_process(["bash", "-c", "true"])  # live: a plain lookup on this PATH runs the plant
    assert marker.exists(), "the planted bash is not what PATH finds"
    marker.unlink()
    arguments: dict[str, Any] = {"command": "echo ran-as-asked"}
    options: dict[str, Any] = {"mode": "auto", "terminal": how == "let-out-editor-terminal"}
    if how.startswith("let-out"):
        arguments |= {"outside_sandbox": True, "justification": "deploy"}
    elif how == "full-auto-local":
        options = {"mode": "full-auto", "terminal": False}
    else:
        options = {"mode": "full-auto", "terminal": False, "sandbox": {"enabled": False}}
    model = ScriptedModel([Reply(calls=[Call("run_command", arguments)]), Reply("ok")])
    async with tool_agent(tmp_path, model, **options) as (client, editor, session, _):
        editor.permission_answers = ["allow_once"]
        assert await client.prompt(session, "run it") == "end_turn"
    result = next(m["content"] for m in model.last_request.messages if m["role"] == "tool")
    assert not marker.exists(), result
    assert "ran-as-asked" in str(result), result
