"""Whether this machine can wall commands in, and why not when it cannot — asked once per agent process.

`quick()` reads what the kernel offers without starting anything (for `initialize`, which must be fast); `check()`
runs the launcher once for real, around `true`, and is what decides (a kernel that offers Landlock may still refuse
the namespaces, as Ubuntu's AppArmor does for unprivileged users). On macOS the walls are Seatbelt profiles run
through `/usr/bin/sandbox-exec`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from coder_agent.process import child_env, run_sync
from coder_agent.sandbox import spec as spec_codec

ENTER = Path(__file__).with_name("enter.py")
SANDBOX_EXEC = "/usr/bin/sandbox-exec"
PROBE_TIMEOUT = 10.0


@dataclass(frozen=True)
class Support:
    """What the sandbox can do here."""

    kind: str
    """"landlock" (Linux), "seatbelt" (macOS), or "none"."""
    reason: str | None = None
    """Why there is no sandbox (None when there is one)."""
    landlock_abi: int = 0

    @property
    def available(self) -> bool:
        return self.kind != "none"

    def facts(self) -> list[str]:
        """What holds beyond the walls themselves, in words."""
        if self.kind == "seatbelt":
            return ["Seatbelt profile through sandbox-exec"]
        if self.kind != "landlock":
            return []
        return [
            f"Landlock ABI {self.landlock_abi}, seccomp, private mount, network and PID namespaces",
            "no signals to, ptrace of or sight of processes outside; what a command leaves running ends with it",
        ]


_checked: Support | None = None


def quick() -> Support:
    """What the kernel offers, read without starting a process."""
    if _checked is not None:
        return _checked
    if sys.platform == "darwin":
        if os.access(SANDBOX_EXEC, os.X_OK):
            return Support("seatbelt")
        return Support("none", f"{SANDBOX_EXEC} is missing")
    if sys.platform != "linux":
        return Support("none", f"no sandbox for {sys.platform}")
    from coder_agent.sandbox import landlock, seccomp

    arch = os.uname().machine
    if arch not in seccomp.AUDIT_ARCH:
        return Support("none", f"no seccomp filter for the {arch} architecture")
    abi = landlock.abi_version()
    if abi < landlock.MIN_ABI:
        why = "the kernel has no Landlock" if abi == 0 else f"the kernel's Landlock ABI is {abi}"
        return Support("none", f"{why}; the sandbox needs ABI {landlock.MIN_ABI} (Linux 6.2) or newer", abi)
    return Support("landlock", None, abi)


def check() -> Support:
    """Run the launcher once around `true`, with walls around a temporary folder; cached for the process."""
    global _checked
    if _checked is not None:
        return _checked
    support = quick()
    if support.kind == "landlock":
        support = _run_probe(support)
    _checked = support
    return support


def launcher_argv() -> list[str]:
    return [sys.executable, "-I", "-S", str(ENTER)]


def held_together(argv: Sequence[str], *, agent_is_parent: bool) -> list[str]:
    """The command line that runs `argv` with the user's rights (no walls) and ends what it leaves running when it
    ends (`sandbox/supervisor.py`: a child subreaper, on Linux; elsewhere `argv` as it is). `agent_is_parent`: the
    agent starts it from its event loop (not the editor's terminal), so it may also end when the agent does."""
    if sys.platform != "linux":
        return list(argv)
    own = ["--own", "--die-with-parent"] if agent_is_parent else ["--own"]
    return [*launcher_argv(), *own, "--", *argv]


def _run_probe(support: Support) -> Support:
    from coder_agent.sandbox.spec import FAILURE_MARK, SPEC_VARIABLE

    with tempfile.TemporaryDirectory(prefix="coder-agent-probe-") as folder:
        env = child_env({SPEC_VARIABLE: spec_codec.encode({"write": [folder]})})
        try:
            argv = [*launcher_argv(), "--", "/bin/sh", "-c", "exit 0"]
            done = run_sync(argv, env=env, cwd=folder, timeout=PROBE_TIMEOUT)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return Support("none", f"the sandbox's launcher did not run: {exc}", support.landlock_abi)
    if done.returncode == 0:
        return support
    text = done.stderr.decode(errors="replace").strip()
    reason = text.removeprefix(FAILURE_MARK).strip().removesuffix("; the command was not run") or (
        f"the launcher exited with status {done.returncode}"
    )
    return Support("none", reason, support.landlock_abi)


def forget() -> None:
    """Forget the cached answer (tests)."""
    global _checked
    _checked = None
