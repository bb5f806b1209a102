"""grep and glob for the model: fast on big trees, respecting .gitignore, capped, with paths relative to the root.

This package owns:

* `grep`: a regex search, `files_with_matches` (default; matching files sorted by path), `content` (matching lines
  as `path:line:text`, context lines as `path-line-text`, groups apart by `--`) or `count` (`path:N` matching lines);
* `glob_files`: the files whose path matches a glob, newest modification time first;
* `SearchResult` (the text for the model, `truncated`, the backend that ran) and `SearchError` (a message for the
  model: invalid regex, missing path).

Both run on ripgrep when there is one (`ripgrep.find_rg`; never one from a PATH entry inside `outside`, the folders
the session's commands may write) and otherwise on a pure-Python backend (`walk`) that does
the same work more slowly, so the tools never fail for want of ripgrep; `backend="python"` forces it (tests).

What is searched, in both backends:

* `.gitignore` rules are respected, also outside a git repository (`--no-require-git`); files given explicitly as
  `path` are searched even when ignored;
* hidden files and directories (dotfiles, `.github/`) are searched; `.git` directories never are;
* symbolic links are not followed; binary files (a NUL byte) are skipped.

Globs (grep's `glob`, glob_files' `pattern`; see `globs`): a glob without "/" matches file names at any depth
("*.py" is "**/*.py"); a glob with "/" matches the path relative to the search directory, or relative to the root;
"*" and "?" stay within a path segment, "**" spans segments, `[abc]` and `{a,b}` work as usual; a leading "!" in
grep's glob excludes instead. A glob never makes an ignored file searched.

The modules: `scope` (where a search runs), `globs` (the model's glob filter), `gitignore` (ignore rules),
`query` (what a grep asks), `ripgrep` and `walk` (the two backends), `results` (collecting and the model's text).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Literal

import anyio.to_thread

from coder_agent.tools.search.globs import GlobFilter
from coder_agent.tools.search.query import GrepQuery, OutputMode
from coder_agent.tools.search.results import (
    MAX_FILES_COLLECTED,
    Collected,
    SearchResult,
    collect_cap,
    glob_result,
    grep_result,
    newest_first,
)
from coder_agent.tools.search.ripgrep import find_rg, grep_rg, list_rg
from coder_agent.tools.search.scope import Scope, SearchError
from coder_agent.tools.search.walk import grep_python, list_python

__all__ = [
    "Backend",
    "OutputMode",
    "SearchError",
    "SearchResult",
    "find_rg",
    "glob_files",
    "grep",
]

Backend = Literal["auto", "rg", "python"]


async def grep(
    pattern: str,
    root: Path,
    *,
    path: Path | None = None,
    glob: str | None = None,
    ignore_case: bool = False,
    output_mode: OutputMode = "files_with_matches",
    context: int = 0,
    max_results: int = 100,
    timeout: float = 60,
    backend: Backend = "auto",
    outside: Iterable[Path] = (),
) -> SearchResult:
    """Search file contents for `pattern` (a ripgrep regex) under `path` (default: `root`); see the package doc.

    `max_results` caps files (files_with_matches, count) or matching lines (content); `context` lines around each
    match are shown in content mode; `outside`: the folders the session's commands may write (no `rg` is taken from a
    PATH entry there). Raises `SearchError` for an invalid regex or a path that does not exist.
    """
    scope = Scope.make(root, path)
    max_results = max(max_results, 1)
    rg = _pick_backend(backend, outside)
    glob_filter = GlobFilter.make(glob, scope) if glob else None
    query = GrepQuery(pattern, scope, glob_filter, ignore_case, output_mode, max(context, 0), timeout)
    collected = Collected(mode=output_mode, cap=collect_cap(output_mode, max_results))
    if rg is not None:
        try:
            await grep_rg(rg, query, collected)
        except OSError:  # rg could not be started: search without it
            rg = None
            collected = Collected(mode=output_mode, cap=collect_cap(output_mode, max_results))
    if rg is None:
        await grep_python(query, collected)
    return grep_result(pattern, scope, glob, query.context, max_results, timeout, collected, rg is not None)


async def glob_files(
    pattern: str,
    root: Path,
    *,
    path: Path | None = None,
    max_results: int = 100,
    timeout: float = 60,
    backend: Backend = "auto",
    outside: Iterable[Path] = (),
) -> SearchResult:
    """The files under `path` (default: `root`) matching the glob `pattern`, newest first, at most `max_results`."""
    scope = Scope.make(root, path)
    if not scope.is_dir:
        raise SearchError(f"{scope.display_target} is a file, not a directory; glob searches a directory.")
    max_results = max(max_results, 1)
    matcher = GlobFilter.make(pattern, scope)
    if matcher.negated:
        raise SearchError(f"The glob {pattern!r} starts with '!'; glob needs a pattern of the files to list.")
    rg = _pick_backend(backend, outside)
    collected = Collected(mode="files_with_matches", cap=MAX_FILES_COLLECTED)
    if rg is not None:
        try:
            await list_rg(rg, scope, matcher, timeout, collected)
        except OSError:  # rg could not be started: list without it
            rg = None
            collected = Collected(mode="files_with_matches", cap=MAX_FILES_COLLECTED)
    if rg is None:
        await list_python(scope, matcher, timeout, collected)
    files = await anyio.to_thread.run_sync(newest_first, scope, collected.files)
    return glob_result(pattern, scope, files, max_results, timeout, collected, rg is not None)


def _pick_backend(backend: Backend, outside: Iterable[Path]) -> str | None:
    if backend == "python":
        return None
    rg = find_rg(outside)
    if rg is None and backend == "rg":
        raise SearchError("ripgrep (rg) is not installed.")
    return rg
