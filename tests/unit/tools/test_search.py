"""Tests for coder_agent.tools.search: grep and glob on both backends (ripgrep when installed, and pure Python)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import anyio
import pytest

from coder_agent.tools import search
from coder_agent.tools.search import SearchError, find_rg, glob_files, grep
from tests.support.processes import alive

BACKENDS = [
    pytest.param("rg", marks=pytest.mark.skipif(find_rg() is None, reason="ripgrep (rg) is not installed")),
    "python",
]


def write(root: Path, rel: str, content: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    write(root, ".gitignore", "build/\n*.log\n!keep.log\n/secret.txt\nsrc/gen/\n")
    write(root, ".git/config", "needle in git\n")
    write(root, ".github/workflows/ci.yml", "run: needle\n")
    write(root, "build/out.py", "needle = 'built'\n")
    write(root, "app.log", "needle logged\n")
    write(root, "keep.log", "needle kept\n")
    write(root, "secret.txt", "needle secret\n")
    write(root, "src/secret.txt", "needle not secret here\n")
    write(root, "src/main.py", "import os\n\n\ndef main():\n    needle = 1\n    return needle\n")
    write(root, "src/gen/generated.py", "needle generated\n")
    write(root, "src/pkg/.gitignore", "local_*.py\n")
    write(root, "src/pkg/local_x.py", "needle local\n")
    write(root, "src/pkg/mod.py", "x = 'needle'\n")
    write(root, "image.bin", b"\x00\x01\x02needle\x00")
    write(root, "docs/readme.md", "Needle in upper case\n")
    return root


VISIBLE = [".github/workflows/ci.yml", "keep.log", "src/main.py", "src/pkg/mod.py", "src/secret.txt"]


@pytest.mark.anyio
@pytest.mark.parametrize("backend", BACKENDS)
async def test_files_with_matches_respects_gitignore_and_hidden_rules(tree: Path, backend: search.Backend) -> None:
    result = await grep("needle", tree, backend=backend)
    assert result.backend == backend
    assert result.text.split("\n") == [f"Found {len(VISIBLE)} files:", *VISIBLE]
    assert not result.truncated


@pytest.mark.anyio
@pytest.mark.parametrize("backend", BACKENDS)
async def test_subdirectory_search_applies_parent_gitignore_rules(tree: Path, backend: search.Backend) -> None:
    result = await grep("needle", tree, path=Path("src"), backend=backend)
    assert result.text.split("\n")[1:] == ["src/main.py", "src/pkg/mod.py", "src/secret.txt"]  # no src/gen/
    result = await grep("needle", tree, path=tree / "src" / "pkg", backend=backend)  # absolute path inside root
    assert result.text.split("\n")[1:] == ["src/pkg/mod.py"]


@pytest.mark.anyio
@pytest.mark.parametrize("backend", BACKENDS)
async def test_an_explicit_file_is_searched_even_if_ignored(tree: Path, backend: search.Backend) -> None:
    result = await grep("needle", tree, path=Path("build/out.py"), output_mode="content", backend=backend)
    assert result.text == "build/out.py:1:needle = 'built'"


@pytest.mark.anyio
@pytest.mark.parametrize("backend", BACKENDS)
async def test_content_mode_with_context_and_separators(tree: Path, backend: search.Backend) -> None:
    write(tree, "src/long.py", "".join(f"line {i}\n" for i in range(1, 21)).replace("line 3\n", "line 3 needle\n"))
    result = await grep("needle", tree, path=Path("src"), output_mode="content", context=1, backend=backend)
    assert result.text.split("\n") == [
        "src/long.py-2-line 2",
        "src/long.py:3:line 3 needle",
        "src/long.py-4-line 4",
        "--",
        "src/main.py-4-def main():",
        "src/main.py:5:    needle = 1",
        "src/main.py:6:    return needle",
        "--",
        "src/pkg/mod.py:1:x = 'needle'",
        "--",
        "src/secret.txt:1:needle not secret here",
    ]
    plain = await grep("needle", tree, path=Path("src/main.py"), output_mode="content", backend=backend)
    assert plain.text == "src/main.py:5:    needle = 1\nsrc/main.py:6:    return needle"


@pytest.mark.anyio
@pytest.mark.parametrize("backend", BACKENDS)
async def test_count_mode(tree: Path, backend: search.Backend) -> None:
    result = await grep("needle", tree, path=Path("src"), output_mode="count", backend=backend)
    assert result.text.split("\n") == [
        "src/main.py:2",
        "src/pkg/mod.py:1",
        "src/secret.txt:1",
        "[4 matching lines in 3 files.]",
    ]


@pytest.mark.anyio
@pytest.mark.parametrize("backend", BACKENDS)
async def test_ignore_case(tree: Path, backend: search.Backend) -> None:
    assert "docs/readme.md" not in (await grep("needle", tree, backend=backend)).text
    assert "docs/readme.md" in (await grep("needle", tree, ignore_case=True, backend=backend)).text


@pytest.mark.anyio
@pytest.mark.parametrize("backend", BACKENDS)
async def test_glob_filters(tree: Path, backend: search.Backend) -> None:
    async def files(glob: str, path: Path | None = None) -> list[str]:
        result = await grep("needle", tree, glob=glob, path=path, backend=backend)
        return [] if result.text.startswith("No matches") else result.text.split("\n")[1:]

    assert await files("*.py") == ["src/main.py", "src/pkg/mod.py"]  # not build/, src/gen/ nor local_x.py
    assert await files("**/*.py") == ["src/main.py", "src/pkg/mod.py"]
    assert await files("*.{yml,txt}") == [".github/workflows/ci.yml", "src/secret.txt"]
    assert await files("src/pkg/*.py") == ["src/pkg/mod.py"]  # a path glob must not un-ignore local_x.py
    assert await files("pkg/*.py", path=Path("src")) == ["src/pkg/mod.py"]  # relative to the search directory
    assert await files("src/*.py") == ["src/main.py"]  # "*" stays within one directory
    assert await files("!*.py") == [".github/workflows/ci.yml", "keep.log", "src/secret.txt"]
    assert await files("*.log") == ["keep.log"]  # app.log stays ignored


@pytest.mark.anyio
@pytest.mark.parametrize("backend", BACKENDS)
async def test_results_are_capped_with_a_note(tmp_path: Path, backend: search.Backend) -> None:
    for i in range(30):
        write(tmp_path, f"f{i:02d}.txt", "hit\nhit\n")
    result = await grep("hit", tmp_path, max_results=10, backend=backend)
    lines = result.text.split("\n")
    assert lines[0] == "Found 30 files; showing the first 10 by path:"
    assert lines[1:11] == [f"f{i:02d}.txt" for i in range(10)]
    assert "capped at 10 files" in lines[-1]
    assert "Narrow the search" in lines[-1]
    assert result.truncated
    assert len(lines) == 12  # the head, 10 files, the note

    content = await grep("hit", tmp_path, output_mode="content", max_results=5, backend=backend)
    assert content.text.split("\n")[:5] == [
        "f00.txt:1:hit",
        "f00.txt:2:hit",
        "f01.txt:1:hit",
        "f01.txt:2:hit",
        "f02.txt:1:hit",
    ]
    assert "Showing the first 5 matching lines (by path) of 60 in 30 files" in content.text
    assert content.truncated
    assert len([line for line in content.text.split("\n") if line.endswith(":hit")]) == 5

    count = await grep("hit", tmp_path, output_mode="count", max_results=3, backend=backend)
    assert count.text.split("\n")[:3] == ["f00.txt:2", "f01.txt:2", "f02.txt:2"]
    assert "60 matching lines in 30 files; showing the first 3 files by path" in count.text
    assert count.truncated


@pytest.mark.anyio
@pytest.mark.parametrize("backend", BACKENDS)
async def test_long_lines_are_cut_in_content_mode(tmp_path: Path, backend: search.Backend) -> None:
    write(tmp_path, "min.js", "hit" + "x" * 5000 + "\n")
    result = await grep("hit", tmp_path, output_mode="content", backend=backend)
    assert len(result.text) < 700
    assert "omitted end of long line" in result.text


@pytest.mark.anyio
@pytest.mark.parametrize("backend", BACKENDS)
async def test_no_matches(tree: Path, backend: search.Backend) -> None:
    result = await grep("nothing_matches_this", tree, backend=backend)
    assert result.text.startswith("No matches for pattern 'nothing_matches_this'")
    assert "ignored by .gitignore" in result.text
    assert not result.truncated


@pytest.mark.anyio
@pytest.mark.parametrize("backend", BACKENDS)
async def test_invalid_regex_is_a_clear_error(tree: Path, backend: search.Backend) -> None:
    with pytest.raises(SearchError) as info:
        await grep("foo(", tree, backend=backend)
    message = str(info.value)
    assert "foo(" in message
    assert "escape literal characters" in message


@pytest.mark.anyio
@pytest.mark.parametrize("backend", BACKENDS)
async def test_missing_path_is_a_clear_error(tree: Path, backend: search.Backend) -> None:
    with pytest.raises(SearchError, match="does not exist"):
        await grep("x", tree, path=Path("nope"), backend=backend)
    with pytest.raises(SearchError, match="does not exist"):
        await glob_files("*", tree, path=Path("nope"), backend=backend)


@pytest.mark.anyio
@pytest.mark.parametrize("backend", BACKENDS)
async def test_glob_files_newest_first(tree: Path, backend: search.Backend) -> None:
    now = time.time()
    for age, rel in enumerate(["src/pkg/mod.py", "src/main.py", "src/gen/generated.py", "build/out.py"]):
        os.utime(tree / rel, (now - 100 * (age + 1), now - 100 * (age + 1)))
    write(tree, "src/newest.py", "pass\n")
    result = await glob_files("*.py", tree, backend=backend)
    assert result.text.split("\n") == [
        "Found 3 files (newest first):",
        "src/newest.py",
        "src/pkg/mod.py",
        "src/main.py",
    ]
    os.utime(tree / "src/main.py", (now + 100, now + 100))
    result = await glob_files("**/*.py", tree, path=Path("src"), backend=backend)
    assert result.text.split("\n")[1:] == ["src/main.py", "src/newest.py", "src/pkg/mod.py"]


@pytest.mark.anyio
@pytest.mark.parametrize("backend", BACKENDS)
async def test_glob_files_patterns(tree: Path, backend: search.Backend) -> None:
    async def listed(pattern: str, path: Path | None = None) -> list[str]:
        result = await glob_files(pattern, tree, path=path, backend=backend)
        return [] if result.text.startswith("No files found") else sorted(result.text.split("\n")[1:])

    assert await listed("src/*.py") == ["src/main.py"]
    assert await listed("src/**") == ["src/main.py", "src/pkg/.gitignore", "src/pkg/mod.py", "src/secret.txt"]
    assert await listed("*.yml") == [".github/workflows/ci.yml"]  # dotdirs are listed, .git is not
    assert await listed("config") == []
    assert await listed("/secret.txt") == []  # anchored at the top, and ignored there
    assert await listed("/*.log") == ["keep.log"]
    assert await listed("*.txt", path=Path("src")) == ["src/secret.txt"]
    result = await glob_files("*.nothing", tree, backend=backend)
    assert result.text.startswith("No files found matching '*.nothing'")


@pytest.mark.anyio
@pytest.mark.parametrize("backend", BACKENDS)
async def test_glob_files_cap(tmp_path: Path, backend: search.Backend) -> None:
    for i in range(12):
        write(tmp_path, f"d/f{i:02d}.md", "")
    result = await glob_files("*.md", tmp_path, max_results=5, backend=backend)
    lines = result.text.split("\n")
    assert lines[0] == "Found 12 files; showing the 5 most recently modified (newest first):"
    assert len(lines) == 7
    assert "capped at 5" in lines[-1]
    assert result.truncated
    with pytest.raises(SearchError, match="not a directory"):
        await glob_files("*", tmp_path, path=Path("d/f00.md"), backend=backend)


@pytest.mark.anyio
async def test_unstartable_rg_falls_back_to_python(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search, "find_rg", lambda outside=(): str(tree / "no-such-rg"))
    result = await grep("needle", tree)
    assert result.backend == "python"
    assert result.text.split("\n")[1:] == VISIBLE
    listed = await glob_files("*.py", tree)
    assert listed.backend == "python"


@pytest.mark.anyio
async def test_forcing_rg_without_rg_is_an_error(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search, "find_rg", lambda outside=(): None)
    with pytest.raises(SearchError, match="not installed"):
        await grep("x", tree, backend="rg")
    assert (await grep("needle", tree)).backend == "python"


def test_find_rg_prefers_the_environment() -> None:
    found = find_rg()
    if found is None:
        pytest.skip("ripgrep (rg) is not installed")
    assert Path(found).name in ("rg", "rg.exe")
    assert os.access(found, os.X_OK)


@pytest.fixture
def slow_rg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake rg that records its pid and hangs."""
    if sys.platform == "win32":
        pytest.skip("needs a POSIX shell")
    pid_file = tmp_path / "rg.pid"
    script = tmp_path / "fake-rg"
    script.write_text(f"#!/bin/sh\necho $$ > '{pid_file}'\nexec sleep 30\n")
    script.chmod(0o755)
    monkeypatch.setattr(search, "find_rg", lambda outside=(): str(script))
    return pid_file


def assert_gone(pid_file: Path) -> None:
    pid = int(pid_file.read_text())
    assert not alive(pid), f"rg ({pid}) still runs"


@pytest.mark.anyio
async def test_timeout_kills_the_process(tree: Path, slow_rg: Path) -> None:
    result = await grep("needle", tree, timeout=0.5)
    assert "timed out after 0.5 s" in result.text
    assert result.truncated
    assert_gone(slow_rg)


@pytest.mark.anyio
async def test_cancellation_kills_the_process(tree: Path, slow_rg: Path) -> None:
    with anyio.move_on_after(0.5) as scope:
        await grep("needle", tree)
    assert scope.cancelled_caught
    assert_gone(slow_rg)


@pytest.mark.anyio
async def test_python_backend_timeout(tmp_path: Path) -> None:
    for i in range(50):
        write(tmp_path, f"f{i}.txt", "x\n")
    result = await grep("x", tmp_path, timeout=0, backend="python")
    assert result.truncated
    assert "timed out" in result.text


@pytest.mark.anyio
@pytest.mark.parametrize("backend", BACKENDS)
async def test_content_stops_reading_early_on_huge_outputs(tmp_path: Path, backend: search.Backend) -> None:
    write(tmp_path, "big.txt", "hit\n" * 5000)
    result = await grep("hit", tmp_path, output_mode="content", max_results=5, backend=backend)
    assert result.text.split("\n")[:5] == [f"big.txt:{i}:hit" for i in range(1, 6)]
    assert "the search stopped reading after 2000" in result.text
    assert result.truncated


@pytest.mark.anyio
@pytest.mark.parametrize("backend", BACKENDS)
async def test_gitignore_pattern_forms(tmp_path: Path, backend: search.Backend) -> None:
    write(tmp_path, ".gitignore", "# comment\nlogs/**/debug.txt\n**/cache/\n\\#hash.txt\ntmp?.txt\n[ab].txt\n")
    for rel in [
        "logs/debug.txt",
        "logs/x/y/debug.txt",
        "other/logs/debug.txt",
        "a/cache/c.txt",
        "cache/c.txt",
        "cache.txt",
        "#hash.txt",
        "tmp1.txt",
        "tmp12.txt",
        "a.txt",
        "c.txt",
    ]:
        write(tmp_path, rel, "hit\n")
    result = await grep("hit", tmp_path, backend=backend)
    assert result.text.split("\n")[1:] == ["c.txt", "cache.txt", "other/logs/debug.txt", "tmp12.txt"]


@pytest.mark.anyio
@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_glob_that_would_backtrack_finishes(tmp_path: Path, backend: search.Backend) -> None:
    """A glob with many stars over a long name: a backtracking matcher tries every split of the name (and froze the
    agent); the linear one reads it once. The test finishes, or the suite's run would not."""
    write(tmp_path, "x/" + "a" * 240, "")
    write(tmp_path, "x/" + "a" * 200 + "b", "")
    glob = "x/" + "*a" * 30 + "*b"
    result = await glob_files(glob, tmp_path, backend=backend)
    assert result.text.split("\n")[1:] == ["x/" + "a" * 200 + "b"]
    found = await grep("", tmp_path, glob=glob, backend=backend)
    assert "a" * 240 not in found.text
