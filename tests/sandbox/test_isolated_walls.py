"""An isolated sub-agent's walls, tried for real: the parent session's sandbox around the child's worktree, whose only
writable folders are that worktree and its own temp folder. Its commands work there, and cannot write the parent's
folder, the repository's shared git folder (objects, refs, the parent's index), or the worktree's `.git` file."""

from __future__ import annotations

import pytest

from coder_agent.agent.isolated import child_sandbox
from coder_agent.isolation import places
from coder_agent.isolation.workplace import make
from coder_agent.sandbox.settings import SandboxConfig
from tests.sandbox.conftest import MakeLayout
from tests.sandbox.walled import git, opened_sandbox, run_inside

pytestmark = [pytest.mark.sandbox, pytest.mark.anyio]


async def test_a_childs_commands_write_its_worktree_and_nothing_of_its_parents(make_world: MakeLayout) -> None:
    layout = make_world()
    workspace = layout.workspace
    refs, index = git(workspace, "show-ref"), (workspace / ".git" / "index").read_bytes()
    made = make(places.owner(), workspace, name="general-1", cap=1 << 30)
    try:
        async with opened_sandbox(layout, SandboxConfig()) as parent:
            sandbox = child_sandbox(parent, made.cwd, made.temp)

            async def run(command: str) -> str:
                ran = await run_inside(sandbox, command, home=layout.home, cwd=made.cwd)
                return "refused" if ran.failed else "ok"

            assert await run("printf 'by the child\\n' > src/app.py && mkdir new && : > new/file") == "ok"
            assert await run('printf x > "$TMPDIR/scratch"') == "ok"
            assert await run("git status --short && git diff --stat") == "ok", "git reads work"
            assert await run(f"printf leak > {workspace}/leak.txt") == "refused"
            assert await run(f"printf x > {workspace}/src/app.py") == "refused"
            assert await run("git add -A && git commit -qm 'from the child'") == "refused"
            assert await run(f"printf 0 > {workspace}/.git/refs/heads/evil") == "refused"
            assert await run(f"cp /dev/null {workspace}/.git/index") == "refused"
            assert await run("printf 'gitdir: /tmp' > .git") == "refused"
        assert (made.tree / "src" / "app.py").read_text() == "by the child\n"
        assert not (workspace / "leak.txt").exists()
        assert (workspace / "src" / "app.py").read_text() == "print('hello')\n"
        assert git(workspace, "show-ref", "--heads", "main") in refs and "evil" not in git(workspace, "show-ref")
        assert (workspace / ".git" / "index").read_bytes() == index
        assert sorted(c.path for c in made.changes()) == ["new/file", "src/app.py"]
    finally:
        made.remove()
    assert git(workspace, "show-ref") == refs
