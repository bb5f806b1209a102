"""Benchmark of coder_agent.tools.search.grep (and glob_files) against running ripgrep directly, on a large tree.

The tree (default 100,000 small files in 1,000 directories, plus a .gitignore'd share: `build/` directories and
`*.tmp` files that neither side may search) is generated once into a temp directory and reused by later runs
(`--fresh` regenerates it). Each scenario runs once to warm the page cache, then `--runs` times per side, and the
medians are compared:

  ours    `await grep(...)` inside one running event loop (as in the agent): spawning rg through anyio, reading and
          parsing its output, sorting, capping and formatting the model's text
  rg      the same rg command line our grep uses (same ignore/hidden flags), run with subprocess and its whole
          output read: the floor for the same work
  rg-bare plain `rg -l PATTERN` / `rg -n PATTERN` from the tree's root, for reference (not part of the goal)

Scenarios: files_with_matches with a rare pattern (~1% of the files) and a common one (nearly every file, so 90k+
paths cross the pipe), and content mode with both (ours stops reading once it has enough lines to fill
max_results; rg prints everything). glob_files('*.py') is timed against `rg --files` for information.

Goal: ours ≤ 1.3 × rg (median) in every grep scenario; the exit status is 0 when it holds, 1 otherwise.

Usage (from the repository root; needs an rg binary: the PyPI `ripgrep` wheel in the venv, or one on PATH):

  uv run python bench/grep.py                     # 100k files, 5 runs
  uv run python bench/grep.py --files 20000 --runs 9
  uv run python bench/grep.py --dir /some/tmp --fresh

Stdlib + the coder_agent package only.
"""

from __future__ import annotations

import argparse
import functools
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from coder_agent.tools import search
from coder_agent.tools.search import find_rg, glob_files, grep

RARE = "BENCH_RARE_NEEDLE"
COMMON = "return"
GOAL = 1.3

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "value",
    "result",
    "items",
    "config",
    "parse",
    "render",
    "update",
    "index",
    "count",
    "total",
    "buffer",
    "stream",
    "request",
    "response",
    "handler",
    "session",
    "client",
    "server",
    "token",
    "cache",
    "entry",
    "record",
    "field",
]


def generate(root: Path, files: int, seed: int = 1234) -> None:
    """Write `files` small source files (plus ignored ones) under root, with a .gitignore."""
    rng = random.Random(seed)
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    (root / ".gitignore").write_text("build/\n*.tmp\n")
    per_dir = 100
    dirs = max(1, (files + per_dir - 1) // per_dir)
    written = 0
    for d in range(dirs):
        directory = root / f"pkg{d // 10:03d}" / f"mod{d % 10}"
        directory.mkdir(parents=True, exist_ok=True)
        for f in range(per_dir):
            if written >= files:
                break
            lines = []
            for _ in range(rng.randint(5, 25)):
                name = rng.choice(WORDS)
                lines.append(f"    {name} = {rng.choice(WORDS)}_{rng.randint(0, 999)}({rng.choice(WORDS)})")
            if rng.random() < 0.01:
                lines.insert(rng.randrange(len(lines)), f"    # {RARE}: look here")
            body = "\n".join(lines)
            ext = ".py" if f % 3 else ".txt"
            text = f"def f_{d}_{f}():\n{body}\n    return {rng.choice(WORDS)}\n"
            (directory / f"file{f:03d}{ext}").write_text(text)
            written += 1
        if d % 20 == 0:  # ignored content that must not show up: a build/ dir and a *.tmp file
            build = directory / "build"
            build.mkdir(exist_ok=True)
            for f in range(20):
                (build / f"gen{f}.py").write_text(f"# {RARE} {COMMON} ignored\n")
            (directory / "scratch.tmp").write_text(f"{RARE} {COMMON}\n")
    (root / ".bench-complete").write_text(str(files))


def rg_command(rg: str, pattern: str, mode: search.OutputMode) -> list[str]:
    """The command line our grep runs for a search of the whole root (see search.ripgrep.grep_rg)."""
    args = [rg, "--no-config", "--hidden", "--no-require-git", "--color", "never", "--no-messages", "--glob", "!.git"]
    if mode == "files_with_matches":
        args += ["--files-with-matches", "--null"]
    else:
        args += ["--line-number", "--null", "--no-heading", "--with-filename", "--max-columns", "500"]
        args += ["--max-columns-preview"]
    return [*args, "--regexp", pattern, "--", "."]


def time_process(command: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    completed = subprocess.run(command, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, check=False)
    elapsed = time.perf_counter() - started
    if completed.returncode not in (0, 1):
        raise SystemExit(f"{command} failed: {completed.stderr.decode(errors='replace')}")
    return elapsed


async def time_ours(call: Callable[[], Awaitable[search.SearchResult]]) -> tuple[float, search.SearchResult]:
    started = time.perf_counter()
    result = await call()
    return time.perf_counter() - started, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=100_000, help="files in the tree (default 100000)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per side and scenario (default 5)")
    parser.add_argument("--dir", type=Path, default=None, help="where the tree lives (default: a temp dir)")
    parser.add_argument("--fresh", action="store_true", help="regenerate the tree even if it exists")
    options = parser.parse_args()

    rg = find_rg()
    if rg is None:
        print("no rg binary found (install the PyPI package `ripgrep` into the venv, or put rg on PATH)")
        return 1
    root = options.dir or Path(tempfile.gettempdir()) / f"coder-agent-bench-grep-{options.files}"
    marker = root / ".bench-complete"
    if options.fresh or not marker.exists() or marker.read_text() != str(options.files):
        print(f"generating {options.files} files in {root} ...", flush=True)
        started = time.perf_counter()
        generate(root, options.files)
        print(f"  done in {time.perf_counter() - started:.1f} s", flush=True)
    version = subprocess.run([rg, "--version"], capture_output=True, text=True, check=False).stdout.split("\n")[0]
    print(f"tree: {root} ({options.files} files)   rg: {rg} ({version})   runs: {options.runs} (+1 warm-up)")
    print(f"python {sys.version.split()[0]}")

    scenarios: list[tuple[str, str, search.OutputMode]] = [
        ("files_with_matches, rare pattern", RARE, "files_with_matches"),
        ("files_with_matches, common pattern", COMMON, "files_with_matches"),
        ("content, rare pattern", RARE, "content"),
        ("content, common pattern", COMMON, "content"),
    ]
    failures = 0

    async def run_all() -> None:
        nonlocal failures
        header = f"{'scenario':<36} {'ours (ms)':>10} {'rg (ms)':>10} {'ratio':>7} {'rg-bare (ms)':>13}  result"
        print(header)
        print("-" * len(header))
        for label, pattern, mode in scenarios:
            command = rg_command(rg, pattern, mode)
            bare = [rg, "-l" if mode == "files_with_matches" else "-n", pattern]
            time_process(command, root)  # warm-up
            call = functools.partial(grep, pattern, root, output_mode=mode)
            await time_ours(call)
            ours, theirs, plain = [], [], []
            result: search.SearchResult | None = None
            for _ in range(options.runs):
                elapsed, result = await time_ours(call)
                ours.append(elapsed)
                theirs.append(time_process(command, root))
                plain.append(time_process(bare, root))
            ours_ms, rg_ms = statistics.median(ours) * 1000, statistics.median(theirs) * 1000
            ratio = ours_ms / rg_ms
            ok = ratio <= GOAL
            failures += not ok
            assert result is not None
            first_line = result.text.split("\n", 1)[0][:60]
            print(
                f"{label:<36} {ours_ms:>10.1f} {rg_ms:>10.1f} {ratio:>7.2f} {statistics.median(plain) * 1000:>13.1f}  "
                f"{'PASS' if ok else 'FAIL'}  [{first_line}]"
            )

        files_command = [rg, "--no-config", "--hidden", "--no-require-git", "--glob", "!.git", "--files", "--null", "."]
        time_process(files_command, root)
        ours, theirs = [], []
        glob_result: search.SearchResult | None = None
        for _ in range(options.runs):
            elapsed, glob_result = await time_ours(lambda: glob_files("*.py", root))
            ours.append(elapsed)
            theirs.append(time_process(files_command, root))
        ours_ms, rg_ms = statistics.median(ours) * 1000, statistics.median(theirs) * 1000
        assert glob_result is not None
        print(
            f"{'glob_files *.py (info; mtime sort)':<36} {ours_ms:>10.1f} {rg_ms:>10.1f} {ours_ms / rg_ms:>7.2f} "
            f"{'':>13}  info  [{glob_result.text.split(chr(10), 1)[0][:60]}]"
        )

    anyio.run(run_all, backend="asyncio")
    print(f"goal: ours <= {GOAL} x rg (median) in every grep scenario: {'PASS' if failures == 0 else 'FAIL'}")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
