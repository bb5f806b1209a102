"""The pure-Python backend: the same searches as ripgrep, without it, more slowly, in a worker thread.

It walks the tree itself (`.gitignore` rules from `coder_agent.tools.search.gitignore`, `.git` and symbolic links
skipped, names sorted), skips binary files (a NUL byte, as `file_view.find_nul` sniffs) and files over 50 MB, and
matches with Python's `re`, close to but not the same as ripgrep's regex syntax. The walk checks a deadline and a
stop flag between folders, so a timeout or a cancellation ends it promptly.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio.to_thread

from coder_agent.tools.file_view import find_nul
from coder_agent.tools.search.gitignore import IgnoreRule, is_ignored, parent_rules, read_rules
from coder_agent.tools.search.globs import GlobFilter
from coder_agent.tools.search.query import GrepQuery
from coder_agent.tools.search.results import MAX_LINE_CHARS, Collected, regex_error_message
from coder_agent.tools.search.scope import Scope, SearchError

__all__ = ["grep_python", "list_python", "walk"]

_MAX_FILE_BYTES = 50 * 1024 * 1024  # larger files are skipped


def walk(scope: Scope, stop: Callable[[], bool]) -> Iterator[str]:
    """Files (paths relative to base) under the target: .gitignore respected, .git and symlinks skipped, sorted."""
    if not scope.is_dir:
        yield scope.target_rel
        return
    inherited_by_root = parent_rules(scope)
    rules_by_dir: dict[str, list[IgnoreRule]] = {}
    for directory, dirnames, filenames in os.walk(scope.target):
        if stop():
            return
        dir_path = Path(directory)
        rel_dir = dir_path.relative_to(scope.base).as_posix()
        rel_dir = "" if rel_dir == "." else rel_dir
        inherited = rules_by_dir.pop(rel_dir, inherited_by_root)
        rules = inherited + read_rules(dir_path, rel_dir)
        kept: list[str] = []
        for name in sorted(dirnames):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if name == ".git" or os.path.islink(os.path.join(directory, name)) or is_ignored(rules, rel, True):
                continue
            kept.append(name)
            rules_by_dir[rel] = rules
        dirnames[:] = kept
        for name in sorted(filenames):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if name == ".git" or os.path.islink(os.path.join(directory, name)) or is_ignored(rules, rel, False):
                continue
            yield rel


async def list_python(scope: Scope, matcher: GlobFilter, timeout: float, collected: Collected) -> None:
    """The files under the scope that `matcher` accepts, .gitignore respected, into `collected` (walk order)."""

    def work(stopped: Callable[[], bool]) -> None:
        for rel in walk(scope, stopped):
            if matcher.accepts(rel) and not collected.add_file(rel):
                return

    await _in_thread(work, timeout, collected)


async def grep_python(query: GrepQuery, collected: Collected) -> None:
    """Run the search with Python's `re` into `collected`; SearchError for a pattern it cannot compile."""
    try:
        regex = re.compile(query.pattern, re.MULTILINE | (re.IGNORECASE if query.ignore_case else 0))
    except re.error as exc:
        raise SearchError(regex_error_message(query.pattern, f"regex parse error: {exc}")) from None
    if "\n" in query.pattern:
        raise SearchError(regex_error_message(query.pattern, "the literal '\\n' is not allowed in a regex"))
    scope, glob_filter, mode, context = query.scope, query.glob_filter, query.mode, query.context

    def work(stopped: Callable[[], bool]) -> None:
        for rel in walk(scope, stopped):
            if glob_filter is not None and scope.is_dir and not glob_filter.accepts(rel):
                continue
            text = _read_text(scope.absolute(rel))
            if text is None or regex.search(text) is None:
                continue
            if mode == "files_with_matches":
                if not collected.add_file(rel):
                    return
                continue
            lines = text.split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            hits = [i for i, line in enumerate(lines) if regex.search(line.removesuffix("\r"))]
            if mode == "count":
                if hits and not collected.add_count(rel, len(hits)):
                    return
                continue
            shown: set[int] = set()
            for i in hits:
                shown.update(range(max(0, i - context), min(len(lines), i + context + 1)))
            hit_set = set(hits)
            for i in sorted(shown):
                line = lines[i].removesuffix("\r")
                if len(line) > MAX_LINE_CHARS:
                    line = line[:MAX_LINE_CHARS] + " [... omitted end of long line]"
                if not collected.add_line(rel, i + 1, i in hit_set, line):
                    return

    await _in_thread(work, query.timeout, collected)


async def _in_thread(work: Callable[[Callable[[], bool]], None], timeout: float, collected: Collected) -> None:
    """Run `work(stopped)` in a worker thread; `stopped()` turns True past the deadline (marking `collected` as
    timed out) or once the caller is cancelled (the thread is abandoned and stops at its next check)."""
    stop = threading.Event()
    deadline = time.monotonic() + timeout

    def stopped() -> bool:
        if time.monotonic() > deadline:
            collected.time_out()
            return True
        return stop.is_set()

    try:
        await anyio.to_thread.run_sync(work, stopped, abandon_on_cancel=True)
    finally:
        stop.set()


def _read_text(path: Path) -> str | None:
    """The file as text (undecodable bytes replaced), or None if it is unreadable, too big or binary."""
    try:
        if path.stat().st_size > _MAX_FILE_BYTES:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if find_nul(data) != -1:
        return None
    return data.decode("utf-8", "replace")
