"""The home folder inside the walls: kept out but for what builds need (`settings.HOME_READABLE`), and the ordinary
work that justifies that choice, run for real.

The table below is the case for keeping the home folder out by default rather than keeping a list of credentials
out of an open one: what each kind of ordinary work reads of the home folder (seen with `strace` outside the
walls) is toolchains, version managers and git's settings, a short list that can be kept; what it must never read
is open-ended (every tool invents its token file). Each row runs inside walls built around this machine's real
home folder, where its toolchains are (pyenv, rustup, nvm... wherever they are here), with the home folder kept
out but for the list; a tool that is not installed skips its row. Credentials in a home folder are tried in
`test_escapes` (`CREDENTIAL_FILES`), in a fake one.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import weakref
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest

from coder_agent.agent.sandboxing import agent_paths
from coder_agent.sandbox import probe
from coder_agent.sandbox.cgroups import make_session_group, remove_group
from coder_agent.sandbox.command import CommandSandbox
from coder_agent.sandbox.settings import HOME_READABLE, SandboxConfig
from coder_agent.sandbox.walls import build_walls
from tests.sandbox.conftest import MakeLayout
from tests.sandbox.walled import Ran, Walled, run_inside

pytestmark = pytest.mark.sandbox

REAL_HOME = Path(os.path.realpath(Path.home()))
PYTHON = sys.executable
NO_IDENTITY = "env -u GIT_AUTHOR_NAME -u GIT_AUTHOR_EMAIL -u GIT_COMMITTER_NAME -u GIT_COMMITTER_EMAIL"
"""The test harness gives commands a git identity; the git row takes the user's own, from ~/.gitconfig."""


@dataclass(frozen=True)
class Work:
    """One kind of ordinary work: what it reads of the home folder, and a small real job of that kind."""

    id: str
    reads: str
    """What it reads of the home folder, as seen with strace (the entries of `HOME_READABLE` it relies on)."""
    command: str
    needs: tuple[str, ...] = ()
    files: dict[str, str] = field(default_factory=dict)
    expect: str = ""
    """Text its output must contain."""


GO_MAIN = 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("hello from go") }\n'
CRATE = '[package]\nname = "tiny"\nversion = "0.1.0"\nedition = "2021"\n'
WORK = [
    Work(
        "pytest",
        "the interpreter where a version manager put it (~/.pyenv, ~/.local/share/uv/python, ~/.conda...)",
        f"{PYTHON} -m pytest -q -p no:cacheprovider test_calc.py",
        files={"test_calc.py": "def test_add():\n    assert 1 + 1 == 2\n"},
        expect="1 passed",
    ),
    Work(
        "pip",
        "the interpreter; ~/.config/pip/pip.conf if there (kept out: an index's token lives there)",
        f"{PYTHON} -m venv v && v/bin/python -m pip install -q --no-index --find-links wheels tinypkg "
        "&& v/bin/python -c 'import tinypkg; print(tinypkg.VALUE)'",
        expect="42",
    ),
    Work(
        "uv",
        "uv (~/.local/bin, ~/.cargo/bin or a version manager's), its interpreters (~/.local/share/uv/python); "
        "~/.config/uv/uv.toml if there (kept out)",
        f"uv venv -q --python {PYTHON} v && uv pip install -q --offline --no-index --find-links wheels "
        "--python v/bin/python tinypkg && v/bin/python -c 'import tinypkg; print(tinypkg.VALUE)'",
        needs=("uv",),
        expect="42",
    ),
    Work(
        "npm",
        "node and npm (~/.nvm, ~/.volta, ~/.fnm... or the system's); ~/.npmrc if there (kept out: a token)",
        "npm install --offline --no-audit --no-fund -q && node -e \"console.log(require('dep').value)\"",
        needs=("npm", "node"),
        files={
            "package.json": '{"name": "app", "version": "1.0.0", "dependencies": {"dep": "file:./dep"}}',
            "dep/package.json": '{"name": "dep", "version": "1.0.0", "main": "index.js"}',
            "dep/index.js": "module.exports = { value: 42 };\n",
        },
        expect="42",
    ),
    Work(
        "cargo",
        "rustup's proxies (~/.cargo/bin), the toolchains (~/.rustup), ~/.gitconfig; CARGO_HOME is the sandbox's",
        "cargo build --offline -q && ./target/debug/tiny",
        needs=("cargo",),
        files={"Cargo.toml": CRATE, "src/main.rs": 'fn main() { println!("hello from rust"); }\n'},
        expect="hello from rust",
    ),
    Work(
        "go",
        "the go toolchain (~/sdk, ~/go/bin, ~/.goenv or the system's); GOMODCACHE and GOCACHE are the sandbox's",
        "go build -o hello . && ./hello",
        needs=("go",),
        files={"go.mod": "module example.com/hello\n\ngo 1.21\n", "main.go": GO_MAIN},
        expect="hello from go",
    ),
    Work(
        "git-commit",
        "~/.gitconfig (the user's identity), ~/.config/git/{config,ignore,attributes}",
        f"git init -q . && git add -A && {NO_IDENTITY} git commit -q -m first && git log --format=%ae",
        needs=("git",),
        files={"README.md": "# a project\n"},
    ),
    Work(
        "c-compiler",
        "nothing",
        "cc -O1 -o hello hello.c && ./hello",
        needs=("cc",),
        files={"hello.c": '#include <stdio.h>\nint main(void) { puts("hello from C"); return 0; }\n'},
        expect="hello from C",
    ),
]


def _wheel(folder: Path) -> None:
    """A tiny pure-Python wheel `tinypkg` (made here: no network, no build backend needed)."""
    folder.mkdir()
    files = {
        "tinypkg/__init__.py": b"VALUE = 42\n",
        "tinypkg-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: tinypkg\nVersion: 1.0\n",
        "tinypkg-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append("tinypkg-1.0.dist-info/RECORD,,")
    with zipfile.ZipFile(folder / "tinypkg-1.0-py3-none-any.whl", "w") as wheel:
        for name, data in files.items():
            wheel.writestr(name, data)
        wheel.writestr("tinypkg-1.0.dist-info/RECORD", "\n".join(record) + "\n")


@pytest.fixture
def real_home_sandbox() -> Iterator[tuple[CommandSandbox, Path]]:
    """Walls around a fresh workspace with this machine's real home folder kept out but for what builds need."""
    base = Path(tempfile.mkdtemp(prefix="coder-agent-home-test-"))
    try:
        workspace, temp, cache = base / "ws", base / "private" / "tmp", base / "cache"
        for folder in (workspace, temp, cache):
            folder.mkdir(parents=True)
        walls = build_walls(
            (workspace,),
            SandboxConfig(),
            temp=temp,
            cache=cache,
            proxy_socket=None,
            agent_paths=agent_paths(None),
            home=REAL_HOME,
        )
        assert walls.spec()["home"] == [str(REAL_HOME)]
        group = make_session_group(walls.max_processes, 4096 << 20)
        sandbox = CommandSandbox(walls, probe.check(), base / "private", None, None, group)
        if group is not None:
            weakref.finalize(sandbox, remove_group, group)
        yield sandbox, workspace
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _run(sandbox: CommandSandbox, workspace: Path, command: str) -> Ran:
    env = {"RUSTUP_HOME": os.environ.get("RUSTUP_HOME", str(REAL_HOME / ".rustup"))}
    return anyio.run(lambda: run_inside(sandbox, command, home=REAL_HOME, cwd=workspace, env=env, timeout=300.0))


@pytest.mark.parametrize("work", WORK, ids=[w.id for w in WORK])
def test_ordinary_work_reads_what_it_needs_of_the_home_folder(
    work: Work, real_home_sandbox: tuple[CommandSandbox, Path]
) -> None:
    missing = [tool for tool in work.needs if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)}")
    sandbox, workspace = real_home_sandbox
    for name, text in work.files.items():
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(text, encoding="utf-8")
    if work.id in ("pip", "uv"):
        _wheel(workspace / "wheels")
    expect = work.expect
    if work.id == "git-commit":
        expect = _global_git_email() or pytest.skip("no user.email in the user's git config here")
    ran = _run(sandbox, workspace, work.command)
    assert ran.status == 0 and not ran.timed_out, f"{work.id} failed inside the walls ({ran.status}):\n{ran.output}"
    assert expect in ran.output, ran.output


def _global_git_email() -> str:
    config = REAL_HOME / ".gitconfig"
    done = subprocess.run(["git", "config", "--file", str(config), "user.email"], capture_output=True, text=True)
    return done.stdout.strip()


def test_the_readable_list_names_what_the_table_relies_on() -> None:
    for entry in ("~/.gitconfig", "~/.pyenv", "~/.rustup", "~/.cargo/bin", "~/.nvm", "~/.local/share/uv/python"):
        assert entry in HOME_READABLE


def test_the_agents_log_file_is_kept_out_wherever_it_is(make_world: MakeLayout) -> None:
    """`--log-file` names a file anywhere (here beside the workspace, outside the home folder): the walls keep it
    out like the agent's other files."""
    layout = make_world()
    log_file = layout.base / "agent.log"
    handler = logging.FileHandler(log_file, encoding="utf-8")
    logging.getLogger().addHandler(handler)
    try:
        logging.getLogger("coder_agent.test").warning("AGENT-LOG-LINE with a secret")
        handler.flush()
        walled = Walled(layout, SandboxConfig())
    finally:
        logging.getLogger().removeHandler(handler)
        handler.close()
    ran = walled.run(f"cat {log_file}")
    assert ran.status != 0 and "AGENT-LOG-LINE" not in ran.output, ran.output


def test_git_reads_what_the_users_git_config_names(make_world: MakeLayout) -> None:
    """A `~/.gitconfig` that includes another file of the home folder, and names an excludes file there: git
    stops at an include it cannot read, so those are read like the config itself."""
    layout = make_world()
    (layout.home / ".gitconfig").write_text(
        "[include]\n\tpath = ~/dotfiles/git.local\n[core]\n\texcludesFile = ~/dotfiles/ignore\n", encoding="utf-8"
    )
    (layout.home / "dotfiles").mkdir()
    (layout.home / "dotfiles" / "git.local").write_text("[alias]\n\tst = status --short\n", encoding="utf-8")
    (layout.home / "dotfiles" / "ignore").write_text("*.log\n", encoding="utf-8")
    (layout.home / "dotfiles" / "token").write_text("NOT-FOR-COMMANDS\n", encoding="utf-8")
    (layout.workspace / "debug.log").write_text("x\n", encoding="utf-8")
    ran = Walled(layout, SandboxConfig()).run(
        "env -u GIT_CONFIG_NOSYSTEM git st && echo '==' && git check-ignore debug.log "
        "&& echo '==' && cat ~/dotfiles/token"
    )
    status, ignored, *_ = [*ran.output.split("==\n"), "", ""]
    assert "fatal" not in status and "debug.log" not in status, ran.output  # the alias and the excludes file
    assert ignored.strip() == "debug.log", ran.output
    assert "NOT-FOR-COMMANDS" not in ran.output and ran.failed  # the rest of that folder stays out
