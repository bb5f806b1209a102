"""The language servers users have, for real: 20 seeded edits per language, each checked through the session's
language servers, whose list of new problems must equal the one the server's own command-line checker gives on the
same texts (`basedpyright` for Python; `tsc --noEmit` of TypeScript 7, whose `tsc --lsp` is the server).

The command-line checker runs once over the 21 versions of the file, each a file of its own in one project (the
versions import nothing of each other); the server sees one file edited 20 times. basedpyright is a dev dependency;
TypeScript 7 is installed by `.ci/run` (its `tsc` on PATH). A missing one skips its test, unless
`LSP_TESTS_REQUIRE_SERVERS` is set, as CI sets it: then it fails.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from coder_agent.lsp.diagnostics import Diagnostic, new_since
from coder_agent.lsp.pool import LanguageServers
from coder_agent.lsp.servers import KNOWN, find_command
from coder_agent.lsp.settings import LspConfig

pytestmark = pytest.mark.anyio

EDITS = 20
SEED = 34

PYTHON_BASE = """import os


def add(x: int, y: int) -> int:
    return x + y


def name_of(path: str) -> str:
    return os.path.basename(path)


class Box:
    def __init__(self, value: int) -> None:
        self.value = value

    def double(self) -> int:
        return self.value * 2


total = add(1, 2)
label = name_of("a/b")
box = Box(3)
"""
PYTHON_VARIANTS = {
    "    return x + y": ["    return x + undefined_name", "    return str(x)"],
    "import os": ["import os, not_a_module", "import json"],
    "        return self.value * 2": ["        return self.valu * 2", '        return self.value * "2"'],
    "total = add(1, 2)": ['total = add("1", 2)', "total = add(1)", "total = ad(1, 2)"],
    'label = name_of("a/b")': ["label = name_of(3)", 'label: int = name_of("a/b")'],
    "box = Box(3)": ['box = Box("3")', "box = Box(3).triple()"],
}

TYPESCRIPT_BASE = """export {};

function add(x: number, y: number): number {
    return x + y;
}

class Box {
    constructor(public value: number) {}
    double(): number {
        return this.value * 2;
    }
}

const total = add(1, 2);
const box = new Box(3);
const label: string = "a";
"""
TYPESCRIPT_VARIANTS = {
    "    return x + y;": ["    return x + undefinedName;", "    return String(x);"],
    "        return this.value * 2;": ["        return this.valu * 2;", '        return this.value * "2";'],
    "const total = add(1, 2);": ['const total = add("1", 2);', "const total = add(1);", "const total = ad(1, 2);"],
    "const box = new Box(3);": ['const box = new Box("3");', "const box = new Box(3).triple();"],
    'const label: string = "a";': ["const label: string = 5;", 'const label: number = "a";'],
}


def versions(base: str, variants: dict[str, list[str]], count: int, seed: int) -> list[str]:
    """`base` and `count` texts after it, each one line of the last changed to another variant of that line (the
    original included): some edits add a problem, some fix one, some change a line without a problem."""
    rng = random.Random(seed)
    lines = base.split("\n")
    slots = {index: [line, *variants[line]] for index, line in enumerate(lines) if line in variants}
    texts = [base]
    for _ in range(count):
        index = rng.choice(sorted(slots))
        choices = [line for line in slots[index] if line != lines[index]]
        lines[index] = rng.choice(choices)
        if rng.random() < 0.15:
            lines.append("print(missing)" if "def " in base else "console.log(missing);")
        texts.append("\n".join(lines))
    return texts


def two_projects(
    tmp_path: Path, config_name: str, config: dict[str, Any], texts: Sequence[str], extension: str
) -> tuple[Path, Path]:
    """A project holding every version as a file of its own (for the command line), and an empty one with the same
    config (for the server), each with `config` as its `config_name`."""
    batch, project = tmp_path / "batch", tmp_path / "project"
    for folder in (batch, project):
        folder.mkdir()
        (folder / config_name).write_text(json.dumps(config), encoding="utf-8")
    for number, text in enumerate(texts):
        (batch / f"v{number}.{extension}").write_text(text, encoding="utf-8")
    return batch, project


def server_on_path(name: str) -> list[str]:
    kind = next(kind for kind in KNOWN if kind.name == name)
    command = find_command(kind, os.environ)
    if command is None:
        message = f"no {name} language server on PATH"
        if os.environ.get("LSP_TESTS_REQUIRE_SERVERS"):
            pytest.fail(message + " (LSP_TESTS_REQUIRE_SERVERS is set: .ci/run installs it)")
        pytest.skip(message)
    return command


async def server_new_lists(project: Path, file_name: str, texts: Sequence[str]) -> list[list[Diagnostic]]:
    """What the session's language servers report as new after each edit of `file_name` from one text to the next."""
    told: list[str] = []

    async def tell(title: str, description: str) -> None:
        told.append(f"{title}: {description}")

    config = LspConfig(wait=30.0, start_timeout=120.0)  # a loaded test machine: the results, not the speed, matter
    path = project / file_name
    path.write_text(texts[0], encoding="utf-8")
    lists = []
    async with anyio.create_task_group() as tasks:
        pool = LanguageServers(config, [project], tasks, wrap=None, sandboxed=True, tell=tell)
        try:
            for old, new in itertools.pairwise(texts):
                path.write_text(new, encoding="utf-8")
                found = await pool.after_edit(path, old, new)
                assert found is not None, f"no diagnostics from the server: {told}"
                assert found.baseline
                lists.append(found.new)
        finally:
            await pool.aclose()
    assert not told
    return lists


def cli_new_lists(per_version: Sequence[list[Diagnostic]]) -> list[list[Diagnostic]]:
    return [new_since(old, new) for old, new in itertools.pairwise(per_version)]


def comparable(found: Sequence[Diagnostic]) -> list[tuple[int, str, str, str]]:
    return sorted((d.line, d.severity_name, d.code, " ".join(d.message.split())) for d in found)


def assert_same(ours: Sequence[list[Diagnostic]], theirs: Sequence[list[Diagnostic]], texts: Sequence[str]) -> None:
    assert len(ours) == len(theirs) == EDITS
    for number, (mine, cli) in enumerate(zip(ours, theirs, strict=True), start=1):
        assert comparable(mine) == comparable(cli), f"edit {number}, to:\n{texts[number]}"
    assert any(ours), "the seeded edits introduced no problem at all: the test would show nothing"


async def test_basedpyright_new_problems_equal_its_command_line(tmp_path: Path) -> None:
    server_on_path("python")
    checker = shutil.which("basedpyright")
    assert checker is not None, "basedpyright's command line comes with its language server"
    texts = versions(PYTHON_BASE, PYTHON_VARIANTS, EDITS, SEED)
    batch, project = two_projects(tmp_path, "pyrightconfig.json", {"typeCheckingMode": "standard"}, texts, "py")
    done = subprocess.run(
        [checker, "--outputjson"], cwd=batch, capture_output=True, text=True, timeout=600, check=False
    )
    report = json.loads(done.stdout)
    per_file: dict[str, list[Diagnostic]] = {}
    for item in report["generalDiagnostics"]:
        start = item["range"]["start"]
        severity = {"error": 1, "warning": 2, "information": 3}.get(item["severity"], 4)
        diagnostic = Diagnostic(
            start["line"] + 1, start["character"] + 1, severity, item["message"], item.get("rule", "")
        )
        per_file.setdefault(Path(item["file"]).name, []).append(diagnostic)
    theirs = cli_new_lists([per_file.get(f"v{number}.py", []) for number in range(len(texts))])
    ours = await server_new_lists(project, "main.py", texts)
    assert_same(ours, theirs, texts)


TSC_LINE = re.compile(r"^(?P<file>[^(\s]+)\((?P<line>\d+),(?P<column>\d+)\): error TS(?P<code>\d+): (?P<message>.*)$")


async def test_typescript_new_problems_equal_tsc(tmp_path: Path) -> None:
    command = server_on_path("typescript")
    if Path(command[0]).name != "tsc":
        pytest.skip("the TypeScript server found is not TypeScript 7's tsc --lsp")
    texts = versions(TYPESCRIPT_BASE, TYPESCRIPT_VARIANTS, EDITS, SEED)
    options = {"compilerOptions": {"strict": True, "noEmit": True, "target": "es2022", "types": []}}
    batch, project = two_projects(tmp_path, "tsconfig.json", options, texts, "ts")
    done = subprocess.run(
        [command[0], "--noEmit", "--pretty", "false", "-p", "."],
        cwd=batch,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    per_file: dict[str, list[Diagnostic]] = {}
    last: list[Diagnostic] | None = None
    for line in done.stdout.splitlines():
        match = TSC_LINE.match(line)
        if match is None:
            if last is not None and line.startswith(" "):  # a chained message goes on, indented
                previous = last[-1]
                last[-1] = Diagnostic(
                    previous.line, previous.column, 1, previous.message + " " + line.strip(), previous.code
                )
            continue
        diagnostic = Diagnostic(int(match["line"]), int(match["column"]), 1, match["message"], match["code"])
        last = per_file.setdefault(Path(match["file"]).name, [])
        last.append(diagnostic)
    theirs = cli_new_lists([per_file.get(f"v{number}.ts", []) for number in range(len(texts))])
    ours = await server_new_lists(project, "main.ts", texts)
    assert_same(ours, theirs, texts)
