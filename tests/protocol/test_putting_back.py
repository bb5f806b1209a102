"""Putting files back (`/undo`, `/rewind`) is the agent's own next step, outside the walls: what a sandboxed command
did since the turn it undoes must not make it write or delete anywhere the command itself could not.

The attack: a turn edits `d/<name>` (whose content before came with the repository: a line that runs a program)
and creates `d/victim`; then a sandboxed command swaps the folder `d` for a symlink, to a folder outside the
workspace (the home folder, where `.bashrc` runs at the next login) or to `.git` (whose `config` git runs
`core.fsmonitor` from). Putting the turn back through the symlink would write the repository's line there and
delete the victim. It is refused, nothing is written, and the undo can be tried again once the folder is back.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from coder_agent.model.scripted import Call, Reply, ScriptedModel
from coder_agent.sandbox import probe
from tests.support.git_traps import make_repo
from tests.support.scripted_agent import tool_agent

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not probe.check().available, reason=f"no sandbox here: {probe.check().reason}"),
]

PLANTED = "[core]\n\tfsmonitor = touch-the-trap\n"
"""What the repository's file held before the turn edited it: a line git (or a shell) would run."""


@pytest.mark.parametrize("how", ["/undo", "/rewind 1 overwrite"])
@pytest.mark.parametrize("to", ["outside", "git-folder"])
@pytest.mark.parametrize("fs", [False, True], ids=["local-disk", "editor"])
async def test_putting_a_turn_back_through_a_swapped_folder_writes_nothing(
    tmp_path: Path, how: str, to: str, fs: bool
) -> None:
    outside = tmp_path / "home"
    outside.mkdir()
    (outside / "victim").write_text("precious\n")
    work = make_repo(tmp_path / "work")
    name = ".bashrc" if to == "outside" else "config"
    (work / "d").mkdir()
    (work / "d" / name).write_text(PLANTED)
    git_config = (work / ".git" / "config").read_text()
    target = outside if to == "outside" else work / ".git"
    if to == "git-folder":
        (target / "victim").write_text("precious\n")
    swap = f"mv d d.old && ln -s {target} d"
    model = ScriptedModel(
        [
            Reply(calls=[Call("read_file", {"path": f"d/{name}"})]),
            Reply(calls=[Call("write_file", {"path": f"d/{name}", "content": "fine\n"}, id="w1")]),
            Reply(calls=[Call("write_file", {"path": "d/victim", "content": "mine\n"}, id="w2")]),
            Reply(calls=[Call("run_command", {"command": swap})]),
            Reply("done"),
        ]
    )
    async with tool_agent(tmp_path, model, mode="auto", fs=fs, terminal=False, check_before_finishing=False) as (
        client,
        editor,
        session,
        _,
    ):
        await client.prompt(session, "edit, then swap")
        assert (work / "d").is_symlink(), "the sandboxed command could not swap the folder"
        said = len(client.agent_text(session))
        await client.prompt(session, how)
        answer = client.agent_text(session)[said:]
    assert not (target / name).exists() or (target / name).read_text() != PLANTED
    assert (target / "victim").read_text() == "precious\n"
    assert (work / ".git" / "config").read_text() == git_config
    assert "d/victim" in answer and ("symlink" in answer or "outside" in answer), answer
