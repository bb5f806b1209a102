"""`.ci/run` says what it did: every step runs after a failure (a step that needs a failed one is skipped, saying
which), each is reported, a step may skip itself saying why, and the run fails at the end, not at the first failure.
The step runner (`.ci/steps.sh`) is tried here with steps of its own; `.ci/run` is checked to be made of it."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STEPS = ROOT / ".ci" / "steps.sh"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="the CI scripts are bash")


def run_steps(tmp_path: Path, lines: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "ci.sh"
    script.write_text(f"set -uo pipefail\nsource {STEPS}\n{lines}\nsummary\n")
    return subprocess.run(["bash", str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=60)


def test_every_step_runs_and_the_run_fails_at_the_end(tmp_path: Path) -> None:
    ran = run_steps(
        tmp_path,
        """
        no_python() { skipped_because "no Python 3.12 here"; return "$SKIPPED"; }
        step lint -- false
        step tests -- bash -c 'echo tests ran; exit 0'
        step sync -- bash -c 'exit 3'
        step checks --needs sync -- touch never
        step harbor -- no_python
        step last -- touch ran-last
        """,
    )
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "tests ran" in ran.stdout and (tmp_path / "ran-last").exists(), "a failure stops nothing after it"
    assert not (tmp_path / "never").exists(), "a step that needs a failed one is skipped"
    summary = ran.stdout.split("CI steps:\n", 1)[1]
    assert summary.splitlines() == [
        "  failed   lint: exit status 1",
        "  passed   tests",
        "  failed   sync: exit status 3",
        "  skipped  checks: needs sync, which failed",
        "  skipped  harbor: no Python 3.12 here",
        "  passed   last",
        "2 of 6 steps failed.",
    ]
    assert "==> lint: failed (exit status 1)" in ran.stdout, "each step is reported as it ends"


def test_a_run_where_nothing_failed_passes_with_its_skips_said(tmp_path: Path) -> None:
    ran = run_steps(tmp_path, 'skipper() { skipped_because "not here"; return 77; }\nstep a -- true\nstep b -- skipper')
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "  skipped  b: not here" in ran.stdout and ran.stdout.rstrip().endswith("No step failed.")


def test_ci_run_is_made_of_steps_and_installs_what_the_tests_need() -> None:
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "set -e" not in script.replace("set -uo", ""), "no step may end the run early"
    steps = re.findall(r"^step (\S+)", script, flags=re.MULTILINE)
    assert steps == [
        "uv",
        "system-tools",
        "sync",
        "compile",
        "ruff",
        "format",
        "mypy",
        "imports",
        "language-servers",
        "interop-tools",
        "tests",
        "harbor",
    ]
    assert "uv sync --frozen --compile-bytecode --all-extras" in script, "the extras the tests use (telemetry)"
    assert script.rstrip().endswith("summary")
