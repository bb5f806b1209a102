"""What language servers add to an edit: the time from a file's new text to its list of new problems, with a warm
server, side by side with today's check alone (the tree-sitter syntax check), and the memory of the servers.

For each language found (basedpyright for Python; TypeScript 7's `tsc --lsp` for TypeScript), a project of a few
files is made in a temporary folder, the server is started and warmed by one edit, then the same seeded edits as
the test suite's (`tests/unit/lsp/test_real_servers.py`) are checked `--edits` times round. It prints the median and
p90 of the added time per edit, the first analysis (cold start), and the resident memory of the server's process
group after the run. The goal: a median of at most 1.5 s per edit with a warm server.

Usage (from the repository root):

  uv run python bench/diagnostics.py                 # 40 edits per language
  uv run python bench/diagnostics.py --edits 100

The servers run here without the sandbox (the figure is the server's, not the walls'; a sandboxed server pays the
launcher once, at its start).
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from coder_agent.lsp.pool import LanguageServers  # noqa: E402
from coder_agent.lsp.settings import LspConfig  # noqa: E402
from coder_agent.tools.editing.syntax import introduced_problems  # noqa: E402
from tests.unit.lsp.test_real_servers import (  # noqa: E402
    PYTHON_BASE,
    PYTHON_VARIANTS,
    TYPESCRIPT_BASE,
    TYPESCRIPT_VARIANTS,
    versions,
)

LANGUAGES = {
    "python": ("main.py", PYTHON_BASE, PYTHON_VARIANTS, "pyrightconfig.json", '{"typeCheckingMode": "standard"}'),
    "typescript": (
        "main.ts",
        TYPESCRIPT_BASE,
        TYPESCRIPT_VARIANTS,
        "tsconfig.json",
        '{"compilerOptions": {"strict": true, "noEmit": true, "types": []}}',
    ),
}


def rss_mib(pgid: int) -> float:
    """The resident memory of every process of group `pgid`, in MiB (Linux /proc)."""
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(stat[2]) != pgid:
                continue
            for line in (entry / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return total / 1024


def p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


async def measure(language: str, edits: int) -> None:
    file_name, base, variants, config_name, config_text = LANGUAGES[language]
    texts = versions(base, variants, edits + 1, seed=7)
    with tempfile.TemporaryDirectory() as folder:
        project = Path(folder)
        (project / config_name).write_text(config_text)
        path = project / file_name
        path.write_text(texts[0])

        async def tell(title: str, description: str) -> None:
            print(f"  {language}: {title}: {description}")

        async with anyio.create_task_group() as tasks:
            pool = LanguageServers(LspConfig(start_timeout=300), [project], tasks, wrap=None, sandboxed=True, tell=tell)
            started = time.perf_counter()
            first = await pool.after_edit(path, texts[0], texts[1])
            cold = time.perf_counter() - started
            if first is None:
                print(f"{language}: no server answered (is it on PATH?)")
                await pool.aclose()
                return
            server = pool.running()[0]
            added, syntax = [], []
            for old, new in itertools.pairwise(texts[1:]):
                started = time.perf_counter()
                found = await pool.after_edit(path, old, new)
                added.append(time.perf_counter() - started)
                started = time.perf_counter()
                introduced_problems(old, new, path)
                syntax.append(time.perf_counter() - started)
                if found is None:
                    print(f"  {language}: one edit got no diagnostics within the wait")
            memory = rss_mib(server.pid) if server.pid is not None else float("nan")
            await pool.aclose()
    print(
        f"{language:<11} {server.name:<26} first analysis {cold:6.2f} s"
        f" | per edit: median {statistics.median(added) * 1000:7.1f} ms, p90 {p90(added) * 1000:7.1f} ms"
        f" | syntax check alone: median {statistics.median(syntax) * 1000:5.2f} ms"
        f" | server memory {memory:6.1f} MiB"
    )


async def main(edits: int) -> None:
    print(f"{edits} warm edits per language; load {os.getloadavg()[0]:.2f} at the start; goal: median <= 1500 ms")
    for language in LANGUAGES:
        await measure(language, edits)
    print(f"load {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--edits", type=int, default=40)
    anyio.run(main, parser.parse_args().edits, backend="asyncio")
