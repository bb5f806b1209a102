"""Offline benchmark of edit robustness: edit_file and apply_patch against a strict exact-match baseline, on edits
built from real source files with the mistakes models make.

Each case is a real Python file (the standard library's and the installed packages' sources, or `--source DIR`),
an intended change (one line of a region changed and a line added after it, as a model would), and one mistake in
how the model writes the change:

  exact           none: the region copied exactly (the control)
  indentation     the region's common indentation dropped (or four spaces added to a region at column 0)
  trailing        trailing spaces on some of the lines the model copies
  crlf            the file has Windows line endings; the model writes "\\n"
  tabs            the file indents with tabs; the model writes four spaces a level
  line-numbers    read_file's "    12\\t" prefixes copied onto the lines taken from the file
  wrong-context   the region's first line is not quite the file's (a name in it changed)
  stale           a line in the middle of the region is not the file's any more (the file changed since the
                  model read it): the only right outcome is a refusal that shows the lines as they are
  ambiguous       the change is to a line that occurs several times in the file, sent without context: the only
                  right outcome is a refusal that names the places

Each case is sent three ways: edit_file's `apply_edits` (old_string/new_string), apply_patch's parser and planner
(a hunk with the region as context), and the baseline (old_string must occur exactly once, verbatim). Every
outcome is one of: applied as intended (the file is exactly the intended one), applied wrongly (any other text:
the goal is 0), refused with an error that names the fix (it points at lines of the file and says what to send),
refused otherwise. For `stale` and `ambiguous`, a refusal that names the fix is the intended outcome.

Usage (from the repository root):

  uv run python bench/edits.py                 # 50 cases per mistake (450), seed 7
  uv run python bench/edits.py --per-kind 100 --seed 3 --source /path/to/python/files
  uv run python bench/edits.py --show-wrong    # print the cases applied wrongly

Stdlib + the coder_agent package only. The exit status is 0 when no case was applied wrongly by edit_file or
apply_patch, 1 otherwise.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import sysconfig
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from coder_agent.errors import CallFailed
from coder_agent.tools.editing import Edit, apply_edits
from coder_agent.tools.editing.lines import indent
from coder_agent.tools.editing.patch import parse_patch
from coder_agent.tools.editing.patch_plan import plan_patch

KINDS = ("exact", "indentation", "trailing", "crlf", "tabs", "line-numbers", "wrong-context", "stale", "ambiguous")
OUTCOMES = ("intended", "wrong", "refused-fix", "refused")
CONTEXT = 3
MIN_LINES, MAX_LINES = 40, 3000
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
_FIX = re.compile(r"\blines? \d+")
_ADVICE = ("Copy", "Add ", "add ", "Read ", "read ", "`@@`", "send")


@dataclass(frozen=True)
class Case:
    """One edit: the file's text, the text intended after it, and the change as each tool is sent it."""

    kind: str
    source: str
    text: str
    intended: str
    old: str
    new: str
    patch: str


# --- building cases ---------------------------------------------------------------------------------------------------


def source_files(folders: list[Path]) -> list[Path]:
    """Python files of a workable size under `folders`, in a stable order."""
    found: list[Path] = []
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            try:
                size = path.stat().st_size
            except OSError:
                continue
            if 2_000 <= size <= 200_000 and "test" not in path.name:
                found.append(path)
    return found


def default_sources() -> list[Path]:
    paths = sysconfig.get_paths()
    return [Path(p) for p in dict.fromkeys([paths["purelib"], paths["stdlib"]]) if Path(p).is_dir()]


def build_cases(files: list[Path], per_kind: int, seed: int) -> list[Case]:
    """`per_kind` cases of every mistake, drawn from `files` with `seed`."""
    rng = random.Random(seed)
    cases: list[Case] = []
    for kind in KINDS:
        made = 0
        for _ in range(per_kind * 40):
            if made == per_kind:
                break
            path = rng.choice(files)
            text = _read(path)
            if text is None:
                continue
            case = MAKERS[kind](text, rng, str(path))
            if case is not None:
                cases.append(case)
                made += 1
    return cases


def _read(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if "\r" in text or "\t" in text or not MIN_LINES <= text.count("\n") <= MAX_LINES:
        return None
    return text if text.endswith("\n") else text + "\n"


@dataclass(frozen=True)
class _Region:
    lines: list[str]
    start: int
    """First line of the region (0-based)."""
    changed: int
    """The changed line, within the region."""


def _region(lines: list[str], rng: random.Random, *, need_indent: bool = False) -> _Region | None:
    """CONTEXT lines, a changed non-blank line, CONTEXT lines; unique in the file."""
    size = 2 * CONTEXT + 1
    if len(lines) < size + 2:
        return None
    start = rng.randrange(0, len(lines) - size)
    region = lines[start : start + size]
    changed = CONTEXT
    if not region[changed].strip() or not region[0].strip() or len(region[changed]) > 100:
        return None
    if need_indent and not indent(region[changed]):
        return None
    block = "\n".join(region) + "\n"
    if ("\n".join(lines) + "\n").count(block) != 1:
        return None
    return _Region(region, start, changed)


def _changed(region: _Region) -> list[str]:
    """The region after the intended change: the line edited, and a line added after it."""
    line = region.lines[region.changed]
    new = list(region.lines)
    new[region.changed : region.changed + 1] = [f"{line}  # edited", f"{indent(line)}bench_marker = 1"]
    return new


def _case(
    kind: str,
    source: str,
    text: str,
    lines: list[str],
    region: _Region,
    model: Callable[[list[str]], list[str]],
    *,
    writes_new_lines_so: bool = False,
) -> Case:
    """A case whose view of the lines copied from the file goes through `model` (its mistake); the new lines too
    with `writes_new_lines_so` (a model that misreads the indentation writes its own lines the same way)."""
    new_region = _changed(region)
    intended_lines = lines[: region.start] + new_region + lines[region.start + len(region.lines) :]
    intended = "\n".join(intended_lines) + "\n"
    old_view = model(region.lines)
    fresh = new_region[region.changed : region.changed + 2]
    middle = model(fresh) if writes_new_lines_so else fresh
    new_view = old_view[: region.changed] + middle + old_view[region.changed + 1 :]
    hunk = [f" {line}" for line in old_view[: region.changed]]
    hunk.append(f"-{old_view[region.changed]}")
    hunk += [f"+{line}" for line in middle]
    hunk += [f" {line}" for line in old_view[region.changed + 1 :]]
    patch = "\n".join(["*** Begin Patch", "*** Update File: f.py", *hunk, "*** End Patch"])
    return Case(kind, source, text, intended, "\n".join(old_view), "\n".join(new_view), patch)


def _as_is(lines: list[str]) -> list[str]:
    return lines


def make_exact(text: str, rng: random.Random, source: str) -> Case | None:
    lines = text.split("\n")[:-1]
    region = _region(lines, rng)
    return None if region is None else _case("exact", source, text, lines, region, _as_is)


def make_indentation(text: str, rng: random.Random, source: str) -> Case | None:
    lines = text.split("\n")[:-1]
    region = _region(lines, rng)
    if region is None:
        return None
    common = min((indent(line) for line in region.lines if line.strip()), key=len)

    def drift(view: list[str]) -> list[str]:
        if common:
            return [line[len(common) :] if line.startswith(common) else line.lstrip() for line in view]
        return [f"    {line}" if line.strip() else line for line in view]

    return _case("indentation", source, text, lines, region, drift, writes_new_lines_so=True)


def make_trailing(text: str, rng: random.Random, source: str) -> Case | None:
    lines = text.split("\n")[:-1]
    region = _region(lines, rng)
    if region is None:
        return None
    spaced = {i for i in range(len(region.lines)) if rng.random() < 0.5} | {0}

    def trailing(view: list[str]) -> list[str]:
        return [line + "  " if i in spaced and line.strip() else line for i, line in enumerate(view)]

    return _case("trailing", source, text, lines, region, trailing)


def make_crlf(text: str, rng: random.Random, source: str) -> Case | None:
    case = make_exact(text, rng, source)
    if case is None:
        return None
    crlf = case.text.replace("\n", "\r\n")
    return Case("crlf", source, crlf, case.intended.replace("\n", "\r\n"), case.old, case.new, case.patch)


def make_tabs(text: str, rng: random.Random, source: str) -> Case | None:
    lines = text.split("\n")[:-1]
    if any(len(indent(line)) % 4 for line in lines if line.strip()):
        return None
    tabbed = [_tabs(line) for line in lines]
    region = _region(tabbed, rng, need_indent=True)
    if region is None:
        return None
    tabbed_text = "\n".join(tabbed) + "\n"
    spaces = _case("tabs", source, tabbed_text, tabbed, region, lambda view: [_spaces(line) for line in view])
    return (
        _case(
            "tabs",
            source,
            tabbed_text,
            tabbed,
            region,
            lambda view: [_spaces(line) for line in view],
            writes_new_lines_so=True,
        )
        if spaces
        else None
    )


def _tabs(line: str) -> str:
    own = indent(line)
    return "\t" * (len(own) // 4) + line[len(own) :]


def _spaces(line: str) -> str:
    own = indent(line)
    return "    " * len(own) + line[len(own) :]


def make_line_numbers(text: str, rng: random.Random, source: str) -> Case | None:
    lines = text.split("\n")[:-1]
    region = _region(lines, rng)
    if region is None:
        return None
    case = _case("line-numbers", source, text, lines, region, _as_is)
    first = region.start + 1
    old = [f"{first + i:>6}\t{line}" for i, line in enumerate(region.lines)]
    new_region = _changed(region)
    new = [f"{first + i:>6}\t{line}" for i, line in enumerate(new_region[: region.changed])]
    new += new_region[region.changed : region.changed + 2]
    after = region.changed + 1
    new += [f"{first + after + i:>6}\t{line}" for i, line in enumerate(region.lines[after:])]
    hunk = [f" {line}" for line in old[: region.changed]] + [f"-{old[region.changed]}"]
    hunk += [f"+{line}" for line in new_region[region.changed : region.changed + 2]]
    hunk += [f" {line}" for line in old[after:]]
    patch = "\n".join(["*** Begin Patch", "*** Update File: f.py", *hunk, "*** End Patch"])
    return Case("line-numbers", source, text, case.intended, "\n".join(old), "\n".join(new), patch)


def make_wrong_context(text: str, rng: random.Random, source: str) -> Case | None:
    lines = text.split("\n")[:-1]
    region = _region(lines, rng)
    if region is None:
        return None
    first = region.lines[0]
    words = _WORD.findall(first)
    if not words:
        return None
    word = rng.choice(words)
    wrong = first.replace(word, f"{word}_old", 1)
    if wrong in text:
        return None

    def mistaken(view: list[str]) -> list[str]:
        return [wrong, *view[1:]] if view and view[0] == first else view

    return _case("wrong-context", source, text, lines, region, mistaken)


def make_stale(text: str, rng: random.Random, source: str) -> Case | None:
    lines = text.split("\n")[:-1]
    region = _region(lines, rng)
    if region is None:
        return None
    at = region.changed + 1
    words = _WORD.findall(region.lines[at])
    if not words:
        return None
    word = rng.choice(words)
    outdated = region.lines[at].replace(word, f"{word}_was", 1)

    def stale(view: list[str]) -> list[str]:
        return [outdated if i == at else line for i, line in enumerate(view)]

    case = _case("stale", source, text, lines, region, stale)
    return None if outdated in text else case


def make_ambiguous(text: str, rng: random.Random, source: str) -> Case | None:
    lines = text.split("\n")[:-1]
    counts = Counter(line for line in lines if len(line.strip()) >= 8)
    repeated = sorted(line for line, n in counts.items() if n >= 2)
    if not repeated:
        return None
    line = rng.choice(repeated)
    places = [i for i, found in enumerate(lines) if found == line]
    target = places[-1]  # the model means the last one, and says nothing of where it is
    intended_lines = list(lines)
    intended_lines[target] = f"{line}  # edited"
    intended = "\n".join(intended_lines) + "\n"
    patch = "\n".join(["*** Begin Patch", "*** Update File: f.py", f"-{line}", f"+{line}  # edited", "*** End Patch"])
    return Case("ambiguous", source, text, intended, line, f"{line}  # edited", patch)


MAKERS: dict[str, Callable[[str, random.Random, str], Case | None]] = {
    "exact": make_exact,
    "indentation": make_indentation,
    "trailing": make_trailing,
    "crlf": make_crlf,
    "tabs": make_tabs,
    "line-numbers": make_line_numbers,
    "wrong-context": make_wrong_context,
    "stale": make_stale,
    "ambiguous": make_ambiguous,
}


# --- running them -----------------------------------------------------------------------------------------------------


def strict(case: Case) -> str:
    """The baseline: old_string must occur exactly once, verbatim."""
    if case.text.count(case.old) != 1:
        raise CallFailed("old_string not found exactly once")
    return case.text.replace(case.old, case.new, 1)


def edit_file(case: Case) -> str:
    return apply_edits(case.text, [Edit(case.old, case.new)]).new_text


def apply_patch(case: Case) -> str:
    (planned,) = plan_patch(parse_patch(case.patch), {"f.py": case.text}, lambda path: path)
    assert planned.new is not None
    return planned.new


TOOLS: dict[str, Callable[[Case], str]] = {"strict": strict, "edit_file": edit_file, "apply_patch": apply_patch}


def outcome(tool: Callable[[Case], str], case: Case) -> tuple[str, str]:
    """What the tool did with the case, and its error message (if it refused)."""
    try:
        result = tool(case)
    except CallFailed as exc:
        message = str(exc)
        names_fix = bool(_FIX.search(message)) and any(word in message for word in _ADVICE)
        return ("refused-fix" if names_fix else "refused"), message
    return ("intended" if result == case.intended else "wrong"), ""


def run(cases: list[Case]) -> dict[str, dict[str, Counter[str]]]:
    """Per tool, per kind, the count of each outcome."""
    table: dict[str, dict[str, Counter[str]]] = {name: {kind: Counter() for kind in KINDS} for name in TOOLS}
    for case in cases:
        for name, tool in TOOLS.items():
            table[name][case.kind][outcome(tool, case)[0]] += 1
    return table


def report(table: dict[str, dict[str, Counter[str]]], cases: list[Case]) -> Iterator[str]:
    per_kind = Counter(case.kind for case in cases)
    kinds = ", ".join(f"{kind} {per_kind[kind]}" for kind in KINDS)
    yield f"{len(cases)} cases from {len({c.source for c in cases})} files ({kinds})"
    yield ""
    yield "Share of cases: applied as intended / applied wrongly / refused naming the fix / refused otherwise"
    yield f"{'mistake':<15}" + "".join(f"{name:>26}" for name in TOOLS)
    for kind in (*KINDS, "all"):
        cells = []
        for name in TOOLS:
            counts = sum(table[name].values(), Counter()) if kind == "all" else table[name][kind]
            total = sum(counts.values()) or 1
            cells.append(" / ".join(f"{100 * counts[o] / total:>3.0f}" for o in OUTCOMES))
        yield f"{kind:<15}" + "".join(f"{cell:>26}" for cell in cells)
    yield ""
    yield "For `stale` and `ambiguous` a refusal naming the fix is the intended outcome."


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-kind", type=int, default=50, help="cases per mistake (default 50)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--source", type=Path, action="append", help="a folder of Python files (repeatable)")
    parser.add_argument("--show-wrong", action="store_true", help="print every case applied wrongly")
    args = parser.parse_args()
    files = source_files(args.source or default_sources())
    if not files:
        print("no Python source files found", file=sys.stderr)
        return 2
    began = time.perf_counter()
    cases = build_cases(files, args.per_kind, args.seed)
    built = time.perf_counter()
    table = run(cases)
    ran = time.perf_counter()
    for line in report(table, cases):
        print(line)
    print(f"\nbuilt in {built - began:.1f} s, ran in {ran - built:.1f} s ({len(files)} candidate files)")
    wrong = 0
    for case in cases:
        for name in ("edit_file", "apply_patch"):
            if outcome(TOOLS[name], case)[0] == "wrong":
                wrong += 1
                if args.show_wrong:
                    sent = case.patch if name == "apply_patch" else case.old
                    print(f"\n--- {name} applied wrongly: {case.kind} in {case.source}\n{sent}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
