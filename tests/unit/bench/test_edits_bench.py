"""The case generator of bench/edits.py, lightly: every mistake yields cases, and each is what it says it is."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).parents[3] / "bench" / "edits.py"


def load_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_edits", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_edits"] = module
    spec.loader.exec_module(module)
    return module


def source(functions: int) -> str:
    parts = ["import os", "", ""]
    for n in range(functions):
        parts += [
            f"def function_{n}(value):",
            f"    if value > {n}:",
            f"        result = compute_{n}(value)",
            "        return result",
            "    return None",
            "",
            "",
        ]
    return "\n".join(parts) + "\n"


def test_every_mistake_yields_cases_that_are_what_they_say(tmp_path: Path) -> None:
    bench = load_bench()
    for n in range(4):
        (tmp_path / f"module_{n}.py").write_text(source(30 + n))
    files = bench.source_files([tmp_path])
    cases = bench.build_cases(files, 6, seed=1)
    kinds = {case.kind for case in cases}
    assert kinds == set(bench.KINDS)
    for case in cases:
        assert case.intended != case.text
        assert case.patch.startswith("*** Begin Patch\n") and case.patch.endswith("\n*** End Patch")
        exact = case.text.count(case.old) == 1
        assert exact == (case.kind == "exact"), case.kind
    by_kind = {case.kind: case for case in cases}
    assert "\t" in by_kind["tabs"].text and "\t" not in by_kind["tabs"].old
    assert "\r\n" in by_kind["crlf"].text
    assert by_kind["line-numbers"].old.lstrip().split("\t")[0].isdigit()
    table = bench.run(cases)
    assert sum(table["strict"]["exact"].values()) == 6 and table["strict"]["exact"]["intended"] == 6
    assert all(table[tool]["ambiguous"]["intended"] == 0 for tool in bench.TOOLS)
    assert "applied as intended" in "\n".join(bench.report(table, cases))
