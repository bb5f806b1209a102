"""`nofollow` against what a sandboxed command can leave in the workspace for the agent's own next read: a named pipe
where AGENTS.md (or a project's command, skill or config) was is refused as not a file, never waited on."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from coder_agent import nofollow

HANG_BOUND = 60.0
"""Not a timing: how long a read stuck on the pipe is given before the test calls it stuck (a right one is instant)."""


@pytest.mark.skipif(not nofollow.SUPPORTED, reason="openat and O_NOFOLLOW")
def test_a_named_pipe_planted_where_the_agent_reads_is_refused_not_waited_on(tmp_path: Path) -> None:
    pipe = tmp_path / "AGENTS.md"
    os.mkfifo(pipe)
    outcome: list[BaseException | bytes] = []

    def read() -> None:
        try:
            outcome.append(nofollow.read_confined(pipe, (tmp_path,), limit=1000))
        except BaseException as exc:
            outcome.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(HANG_BOUND)
    stuck = reader.is_alive()
    if stuck:  # let the stuck read go: a writer comes and goes
        os.close(os.open(pipe, os.O_WRONLY))
        reader.join()
    assert not stuck, "the agent's read waited on a named pipe a command planted (its next session or turn hangs)"
    assert len(outcome) == 1 and isinstance(outcome[0], OSError)


@pytest.mark.skipif(not nofollow.SUPPORTED, reason="openat and O_NOFOLLOW")
def test_an_edited_file_a_hook_or_job_swapped_for_a_named_pipe_is_not_waited_on(tmp_path: Path) -> None:
    """`after_edit` hooks are given the file's text: a named pipe put in its place must not stall the agent."""
    from coder_agent.session.hooks import _text_of

    pipe = tmp_path / "main.py"
    os.mkfifo(pipe)
    outcome: list[str | None] = []
    reader = threading.Thread(target=lambda: outcome.append(_text_of(pipe)), daemon=True)
    reader.start()
    reader.join(HANG_BOUND)
    stuck = reader.is_alive()
    if stuck:
        os.close(os.open(pipe, os.O_WRONLY))
        reader.join()
    assert not stuck, "the agent waited on a named pipe in place of the edited file"
    assert outcome == [None]
