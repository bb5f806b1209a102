"""Search results: what the backends collect (`Collected`, capped) and the text the model reads (`SearchResult`).

Both backends fill a `Collected` as they go and stop once it is full; `grep_result` and `glob_result` turn it into
the model's text the same way whichever backend ran: files sorted by path (grep) or newest first (glob), capped at
`max_results` with a note saying how to narrow the search, and a note when the search timed out.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Literal

from coder_agent.tools.search.query import OutputMode
from coder_agent.tools.search.scope import Scope

__all__ = [
    "MAX_FILES_COLLECTED",
    "MAX_LINE_CHARS",
    "Collected",
    "SearchResult",
    "collect_cap",
    "glob_result",
    "grep_result",
    "newest_first",
    "regex_error_message",
]

MAX_FILES_COLLECTED = 200_000
"""File paths read before we stop counting ("more than N")."""
MAX_LINE_CHARS = 500
"""Content lines are cut after this many characters."""


@dataclass(frozen=True)
class SearchResult:
    """The model's text, and whether results were left out."""

    text: str
    truncated: bool = False
    """True if results were left out: capped at max_results, or the search stopped early (timeout)."""
    backend: Literal["rg", "python"] = "rg"
    """Which backend ran: ripgrep, or the Python fallback (without rg, or when rg could not be started)."""


def collect_cap(mode: OutputMode, max_results: int) -> int:
    """How many results to read before stopping: all files (to sort and count them) or, for content, enough lines
    to fill max_results from the first files by path in most cases."""
    return MAX_FILES_COLLECTED if mode != "content" else max(20 * max_results, 2000)


@dataclass
class Collected:
    """What a backend found so far: files, per-file counts or lines (path, number, is a match, text)."""

    mode: OutputMode
    cap: int
    files: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    lines: dict[str, list[tuple[int, bool, str]]] = field(default_factory=dict)
    matched_lines: int = 0
    complete: bool = True  # False: stopped before the end (cap or timeout); totals are lower bounds
    timed_out: bool = False

    def any(self) -> bool:
        return bool(self.files or self.counts or self.lines)

    def add_file(self, rel: str) -> bool:
        """Add a file; False once the cap is reached (stop reading)."""
        self.files.append(rel)
        return self._room(len(self.files))

    def add_count(self, rel: str, count: int) -> bool:
        self.counts[rel] = count
        return self._room(len(self.counts))

    def add_line(self, rel: str, number: int, is_match: bool, text: str) -> bool:
        self.lines.setdefault(rel, []).append((number, is_match, text))
        if is_match:
            self.matched_lines += 1
            return self._room(self.matched_lines)
        return True

    def time_out(self) -> None:
        """The search ran out of time: what was collected is incomplete."""
        self.timed_out = True
        self.complete = False

    def _room(self, size: int) -> bool:
        if size >= self.cap:
            self.complete = False
            return False
        return True


def grep_result(
    pattern: str,
    scope: Scope,
    glob: str | None,
    context: int,
    max_results: int,
    timeout: float,
    collected: Collected,
    used_rg: bool,
) -> SearchResult:
    """The model's text for a grep (in `collected.mode`), capped at `max_results` files or matching lines."""
    mode = collected.mode
    plus = "" if collected.complete else "+"
    where = f" in {scope.display_target}" if scope.target_rel else ""
    filtered = f" (files matching {glob!r})" if glob else ""
    out: list[str] = []
    truncated = not collected.complete
    narrow = "Narrow the search with `path`, `glob` or a more specific pattern"

    if not collected.any():
        out.append(
            f"No matches for pattern {pattern!r}{where}{filtered}. Files ignored by .gitignore, binary files and "
            ".git are not searched."
        )
    elif mode == "files_with_matches":
        files = sorted(collected.files)
        shown = files[:max_results]
        truncated |= len(files) > max_results
        head = f"Found {len(files)}{plus} file{'s' if len(files) != 1 else ''}"
        if truncated:
            head += f"; showing the first {len(shown)} by path"
        out.append(head + ":")
        out.extend(scope.display(rel) for rel in shown)
        if truncated:
            out.append(f"[Results capped at {max_results} files. {narrow}.]")
    elif mode == "count":
        files = sorted(collected.counts)
        shown = files[:max_results]
        truncated |= len(files) > max_results
        out.extend(f"{scope.display(rel)}:{collected.counts[rel]}" for rel in shown)
        total = sum(collected.counts.values())
        out.append(
            f"[{total}{plus} matching line{'s' if total != 1 else ''} in {len(files)}{plus} "
            f"file{'s' if len(files) != 1 else ''}"
            + (f"; showing the first {len(shown)} files by path. {narrow}." if truncated else ".")
            + "]"
        )
    else:
        budget = max_results
        shown_matches = 0
        previous: tuple[str, int] | None = None
        for rel in sorted(collected.lines):
            last_match = -1
            for number, is_match, text in collected.lines[rel]:
                if is_match:
                    if budget == 0:
                        truncated = True
                        break
                    budget -= 1
                    last_match = number
                    shown_matches += 1
                elif budget == 0 and not (last_match >= 0 and number <= last_match + context):
                    continue  # the before-context of a match that is not shown
                if context and previous is not None and (previous[0] != rel or number > previous[1] + 1):
                    out.append("--")
                sep = ":" if is_match else "-"
                out.append(f"{scope.display(rel)}{sep}{number}{sep}{text}")
                previous = (rel, number)
            if truncated:
                break
        file_count = len(collected.lines)
        if truncated:
            out.append(
                (
                    f"[Showing the first {shown_matches} matching lines (by path) of {collected.matched_lines} in "
                    f"{file_count} file{'s' if file_count != 1 else ''}. "
                    if collected.complete
                    else f"[Showing {shown_matches} matching lines; the search stopped reading after "
                    f"{collected.matched_lines} in {file_count} files, so there are more. "
                )
                + f"{narrow}, or use output_mode='files_with_matches' or 'count'.]"
            )
    if collected.timed_out:
        out.append(_timeout_note(timeout))
    return SearchResult(text="\n".join(out), truncated=truncated, backend="rg" if used_rg else "python")


def glob_result(
    pattern: str,
    scope: Scope,
    files: list[str],
    max_results: int,
    timeout: float,
    collected: Collected,
    used_rg: bool,
) -> SearchResult:
    """The model's text for a glob: `files` (already newest first), capped at `max_results`."""
    shown = files[:max_results]
    truncated = len(files) > max_results or not collected.complete
    lines: list[str] = []
    where = f" in {scope.display_target}" if scope.target_rel else ""
    if not files:
        lines.append(f"No files found matching {pattern!r}{where} (files ignored by .gitignore are not listed).")
    else:
        count = f"{len(files)}{'+' if not collected.complete else ''}"
        head = f"Found {count} file{'s' if len(files) != 1 else ''}"
        if truncated:
            head += f"; showing the {len(shown)} most recently modified"
        lines.append(head + " (newest first):")
        lines.extend(scope.display(rel) for rel in shown)
        if truncated:
            lines.append(
                f"[Results capped at {max_results}. Narrow the search with a more specific pattern or `path`.]"
            )
    if collected.timed_out:
        lines.append(_timeout_note(timeout))
    return SearchResult(text="\n".join(lines), truncated=truncated, backend="rg" if used_rg else "python")


def newest_first(scope: Scope, files: list[str]) -> list[str]:
    """`files` (relative to the scope base) by modification time, newest first, then by path (blocking: stats)."""
    base = str(scope.base)
    join, stat = os.path.join, os.stat

    def mtime(rel: str) -> float:
        try:
            return stat(join(base, rel)).st_mtime
        except OSError:
            return 0.0

    stamped = [(-mtime(rel), rel) for rel in files]
    stamped.sort()
    return [rel for _, rel in stamped]


def regex_error_message(pattern: str, message: str) -> str:
    """The model's text for a pattern that could not be searched, with a hint when the regex did not parse."""
    text = f"The search failed for pattern {pattern!r}:\n{message}" if message else f"The search failed: {pattern!r}"
    if "regex" in message.lower() or "parse" in message.lower():
        text += (
            "\nThe pattern is a regular expression (ripgrep/Rust syntax): escape literal characters such as "
            "( ) [ ] { } . * + ? | \\ with a backslash (e.g. `interface\\{\\}`, `foo\\(`); look-around and "
            "back-references are not supported."
        )
    return text


def _timeout_note(timeout: float) -> str:
    return f"[The search timed out after {timeout:g} s; the results are incomplete. Narrow it with `path` or `glob`.]"
