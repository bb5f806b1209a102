"""Every process the agent starts goes through `coder_agent/process.py` (the scrubbed environment, its own process
group, the reaper), and every git through `coder_agent/own_git.py` on top of it: no other module of `coder_agent/`
calls a process API. The sandbox's launcher and fork server are the exception: they fork and exec the command they
were handed, inside the walls. GitPython is kept out by an import-linter contract (`pyproject.toml`)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "coder_agent"
ALLOWED = {
    "process.py": "spawn_group, run_sync and the reaper",
    "own_git_reader.py": "runs the agent's own git inside the session's walls, started there through process.py",
    "sandbox/supervisor.py": "the launcher's and fork server's supervisor: forks and execs the command in the walls",
    "sandbox/forkserver.py": "forks and execs each sandboxed command",
    "sandbox/linux.py": "forks the proxy's forwarder inside the walls",
}
SPAWNING = {
    "subprocess": {"run", "Popen", "call", "check_call", "check_output", "getoutput", "getstatusoutput"},
    "asyncio": {"create_subprocess_exec", "create_subprocess_shell"},
    "anyio": {"run_process", "open_process"},
    "os": {"system", "popen", "fork", "forkpty", "posix_spawn", "posix_spawnp", "startfile"}
    | {f"exec{suffix}" for suffix in ("l", "le", "lp", "lpe", "v", "ve", "vp", "vpe")}
    | {f"spawn{suffix}" for suffix in ("l", "le", "lp", "lpe", "v", "ve", "vp", "vpe")},
    "pty": {"fork", "spawn"},
    "multiprocessing": {"Process", "Pool", "get_context"},
}
"""Module → the names of it that start a process."""
LOOP_METHODS = {"subprocess_exec", "subprocess_shell"}
"""asyncio event loop methods, on whatever object."""


def spawns(source: str) -> list[str]:
    """Where `source` starts a process, as "line: what"."""
    tree = ast.parse(source)
    aliases: dict[str, str] = {}  # local name -> module
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                if top in SPAWNING or top == "git":
                    aliases[alias.asname or top] = top
                if top in {"git", "multiprocessing"}:
                    found.append(f"{node.lineno}: import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            top = node.module.split(".")[0]
            names = {alias.name for alias in node.names}
            if top == "git" or names & SPAWNING.get(top, set()):
                found.append(f"{node.lineno}: from {node.module} import {', '.join(sorted(names))}")
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        if node.attr in LOOP_METHODS:
            found.append(f"{node.lineno}: .{node.attr}")
        elif isinstance(node.value, ast.Name) and node.attr in SPAWNING.get(aliases.get(node.value.id, ""), set()):
            found.append(f"{node.lineno}: {node.value.id}.{node.attr}")
    return found


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_nothing_but_the_process_module_and_the_launcher_starts_a_process() -> None:
    offenders = {}
    for path in modules():
        name = path.relative_to(PACKAGE).as_posix()
        found = spawns(path.read_text(encoding="utf-8"))
        if found and name not in ALLOWED:
            offenders[name] = found
    assert not offenders, f"start processes through coder_agent/process.py (or own_git.py for git): {offenders}"


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_the_allowed_ones_are_still_found(name: str) -> None:
    """The walker sees what it is meant to catch (a check that finds nothing anywhere proves nothing)."""
    assert spawns((PACKAGE / name).read_text(encoding="utf-8")), f"{name} no longer starts processes: drop it"


@pytest.mark.parametrize(
    "source",
    [
        "import subprocess\nsubprocess.run(['x'])",
        "import subprocess as sp\nsp.Popen(['x'])",
        "from subprocess import check_output",
        "import anyio\nawait anyio.run_process(['git', 'status'])",
        "import asyncio\nasyncio.create_subprocess_exec('x')",
        "loop.subprocess_exec(factory, 'x')",
        "import os\nos.execvp('x', ['x'])",
        "import os\nos.posix_spawn('/bin/x', ['x'], {})",
        "from os import system",
        "import git\ngit.Git('.').status()",
        "from git import Repo",
        "import pty\npty.spawn('sh')",
    ],
)
def test_every_way_to_start_a_process_is_caught(source: str) -> None:
    assert spawns(source)


def test_using_the_constants_is_not_starting_a_process() -> None:
    assert not spawns("import subprocess\nx = subprocess.PIPE, subprocess.DEVNULL, subprocess.STDOUT")
    assert not spawns("import os\nos.environ.get('x'); os.kill(1, 9)")
