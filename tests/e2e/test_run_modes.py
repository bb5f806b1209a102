"""Modes a person can find: a run that was not told its mode says once, at its start on stderr, which one it chose
and how to choose (`--mode`); told, it says nothing; stdout stays the output format's alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coder_agent.sandbox import probe
from tests.support.fake_llm import FakeLLM, Reply
from tests.support.headless import run_here

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def test_the_mode_chosen_for_a_run_is_said_once_with_the_flag(
    tmp_path: Path, work: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.script([Reply("One."), Reply("Two."), Reply("Three.")])
    ran = await run_here(tmp_path, "--cwd", str(work), "--output-format", "json", "hi", llm=fake_llm)
    assert ran.code == 0, ran.stderr
    [note] = [line for line in ran.stderr.splitlines() if line.startswith("Mode: ")]
    assert note == (
        "Mode: read-only, as there is no terminal to ask on: edits and commands are refused; give --mode "
        f"accept-edits to let edits run, or --mode {'auto' if probe.check().available else 'full-auto'} for "
        "commands too."
    )
    assert json.loads(ran.stdout)["answer"] == "One.", "stdout stays the output format's"

    ran = await run_here(tmp_path, "--cwd", str(work), "--allow", "read:**", "hi", llm=fake_llm)
    assert "Mode: default, as --allow rules were given: what they allow runs, and a call that would ask stops" in (
        ran.stderr
    )

    ran = await run_here(tmp_path, "--cwd", str(work), "--mode", "accept-edits", "hi", llm=fake_llm)
    assert "Mode: " not in ran.stderr, "a mode given is not said again"


@pytest.mark.skipif(not probe.check().available, reason=f"no sandbox here: {probe.check().reason}")
async def test_in_ci_the_auto_mode_is_said(tmp_path: Path, work: Path, fake_llm: FakeLLM) -> None:
    fake_llm.script([Reply("Done.")])
    ran = await run_here(tmp_path, "--cwd", str(work), "hi", llm=fake_llm, env={"CI": "true"})
    assert ran.code == 0, ran.stderr
    assert "Mode: auto, as in CI: edits, and commands inside the sandbox, run unasked; --mode chooses another." in (
        ran.stderr
    )
