"""The ripgrep backend: finding `rg`, its command lines, running it, and parsing its `--null` output as it arrives.

`find_rg` looks beside this interpreter first (the PyPI `ripgrep` wheel installs `rg` into the environment's scripts
directory), then on PATH outside the folders the session's commands may write (`process.find_program`: an `rg` a
sandboxed command planted in a project's `.venv/bin` on PATH would run outside the walls, as the agent). The
process runs as `process.spawn_helper` (the environment every child gets, without secrets) with stdin from
/dev/null and its output piped to us (never to our stdout, which carries ACP), and is killed on timeout, on
cancellation, or once enough results were read.

Two ripgrep behaviours are worked around here:

* its `--glob` would search ignored files that match it, so a positive path glob only pre-filters, and the files
  searched are limited to those of an ignore-aware `--files` listing (`GlobFilter.needs_listing`); a name glob
  becomes a file type (`--type-add`), which respects ignores;
* searching a subdirectory of the root, it mishandles anchored patterns ("/build", "src/gen/") of .gitignore files
  above the search directory (BurntSushi/ripgrep#2770); such searches skip those parent files
  (`--no-ignore-parent`) and pass their non-negated rules as exclusion globs instead.
"""

from __future__ import annotations

import functools
import os
import re
import sys
import sysconfig
import time
from collections.abc import Callable, Iterable
from contextlib import suppress
from pathlib import Path

import anyio
import anyio.abc

from coder_agent.process import find_program, spawn_helper
from coder_agent.tools.search.gitignore import parent_rules
from coder_agent.tools.search.globs import GlobFilter
from coder_agent.tools.search.query import GrepQuery, OutputMode
from coder_agent.tools.search.results import MAX_FILES_COLLECTED, MAX_LINE_CHARS, Collected, regex_error_message
from coder_agent.tools.search.scope import Scope, SearchError

__all__ = ["find_rg", "grep_rg", "list_rg"]

_TYPE_NAME = "coderagentglob"
_STDERR_KEPT = 65536


def find_rg(outside: Iterable[Path] = ()) -> str | None:
    """The ripgrep executable: the environment's scripts directory (PyPI `ripgrep` wheel), this interpreter's
    directory, or PATH outside the folders `outside` (those the session's commands may write); None if there is
    none."""
    return _beside_interpreter() or find_program("rg", outside=outside)


@functools.cache
def _beside_interpreter() -> str | None:
    name = "rg.exe" if os.name == "nt" else "rg"
    for directory in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        if directory:
            candidate = os.path.join(directory, name)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate
    return None


async def grep_rg(rg: str, query: GrepQuery, collected: Collected) -> None:
    """Run the search with ripgrep into `collected`; SearchError if rg rejects the pattern. OSError if rg cannot
    be started (the caller falls back to Python)."""
    scope = query.scope
    deadline = time.monotonic() + query.timeout
    allowed: set[str] | None = None
    filter_args: list[str] = []
    if query.glob_filter is not None and scope.is_dir:
        filter_args = _filter_args(query.glob_filter)
        if query.glob_filter.needs_listing:  # keep only the files an ignore-aware listing has
            listing = Collected(mode="files_with_matches", cap=MAX_FILES_COLLECTED)
            await list_rg(rg, scope, query.glob_filter, query.timeout, listing)
            allowed = set(listing.files)
            if listing.timed_out:
                collected.time_out()
                return
            if not allowed:
                return
    args = _rg_common(rg, scope)
    # the user's filter first: a later --glob wins, and the exclusions must win over it
    args[1:1] = filter_args
    if query.ignore_case:
        args.append("--ignore-case")
    if query.mode == "files_with_matches":
        args += ["--files-with-matches", "--null"]
    elif query.mode == "count":
        args += ["--count", "--null", "--with-filename"]
    else:
        args += ["--line-number", "--null", "--no-heading", "--with-filename"]
        args += ["--max-columns", str(MAX_LINE_CHARS), "--max-columns-preview"]
        if query.context:
            args += ["--context", str(query.context)]
    args += ["--regexp", query.pattern, "--", _rg_target(scope)]

    parser = _RgParser(query.mode, collected, allowed)
    returncode, stderr, timed_out = await _run(args, scope.base, parser.feed, deadline - time.monotonic())
    if timed_out:
        collected.time_out()
    else:
        parser.finish()
    if returncode == 2 and not collected.any():
        message = stderr.decode("utf-8", "replace").strip()
        message = "\n".join(line.removeprefix("rg: ") for line in message.splitlines())
        raise SearchError(regex_error_message(query.pattern, message))


async def list_rg(rg: str, scope: Scope, matcher: GlobFilter, timeout: float, collected: Collected) -> None:
    """The files under the scope that `matcher` accepts, .gitignore respected, into `collected` (unsorted)."""
    args = [*_rg_common(rg, scope), "--files", "--null"]
    if matcher.basename_only and not matcher.negated:
        args[1:1] = _filter_args(matcher)
    args += ["--", _rg_target(scope)]
    parser = _RgParser("files_with_matches", collected, None, accept=matcher.accepts)
    _, _, timed_out = await _run(args, scope.base, parser.feed, timeout)
    if timed_out:
        collected.time_out()
    else:
        parser.finish()


def _filter_args(glob_filter: GlobFilter) -> list[str]:
    """ripgrep filter arguments that never un-ignore a file. For path globs ripgrep only pre-filters (its
    `--glob` overrides .gitignore); the caller must still check `accepts` against an ignore-aware listing."""
    if glob_filter.negated:
        return ["--glob", "!" + glob_filter.pattern]
    if glob_filter.basename_only:
        return ["--type-add", f"{_TYPE_NAME}:{glob_filter.pattern}", "--type", _TYPE_NAME]
    scope = glob_filter.scope
    globs = ["/" + glob_filter.pattern]
    if scope.target_rel and scope.is_dir:
        globs.append(f"/{scope.target_rel}/{glob_filter.pattern}")
    return [arg for glob in globs for arg in ("--glob", glob)]


def _rg_common(rg: str, scope: Scope) -> list[str]:
    args = [rg, "--no-config", "--hidden", "--no-require-git", "--color", "never", "--no-messages"]
    if scope.is_dir and scope.target_rel:
        args.append("--no-ignore-parent")
        for glob in _parent_exclusion_globs(scope):
            args += ["--glob", glob]
    args += ["--glob", "!.git"]
    return args


def _parent_exclusion_globs(scope: Scope) -> list[str]:
    """ripgrep exclusion globs standing for the parent .gitignore rules (negations cannot be expressed; dropped)."""
    globs: list[str] = []
    for rule in parent_rules(scope):
        if rule.negated:
            continue
        suffix = "/" if rule.dir_only else ""
        if rule.base:
            prefix = f"/{rule.base}/" if rule.anchored else f"/{rule.base}/**/"
        else:
            prefix = "/" if rule.anchored else ""
        globs.append(f"!{prefix}{rule.glob}{suffix}")
    return globs


def _rg_target(scope: Scope) -> str:
    return scope.target_rel or "."


async def _run(
    args: list[str], cwd: Path, feed: Callable[[bytes], bool], timeout: float
) -> tuple[int | None, bytes, bool]:
    """Run a process, feeding its stdout to `feed` until it returns False (then the process is killed).

    Returns (returncode, the first 64 KiB of stderr, timed out). The process is killed on timeout and on
    cancellation, and always waited for.
    """
    stderr = bytearray()

    async def drain(stream: anyio.abc.ByteReceiveStream) -> None:
        async for chunk in stream:
            if len(stderr) < _STDERR_KEPT:
                stderr.extend(chunk[: _STDERR_KEPT - len(stderr)])

    timed_out = False
    process = await spawn_helper(args, cwd=cwd)  # the scrubbed environment; rg starts nothing itself
    assert process.stdout is not None
    assert process.stderr is not None
    try:
        with anyio.move_on_after(max(timeout, 0)) as scope:
            async with anyio.create_task_group() as group:
                group.start_soon(drain, process.stderr)
                async for chunk in process.stdout:
                    if not feed(chunk):
                        process.kill()
                        break
            await process.wait()
        timed_out = scope.cancelled_caught
    finally:
        if process.returncode is None:
            with suppress(ProcessLookupError):
                process.kill()
        with anyio.CancelScope(shield=True):
            await process.aclose()
    return process.returncode, bytes(stderr), timed_out


_CONTENT_LINE = re.compile(rb"(\d+)([:-])(.*)", re.DOTALL)


class _RgParser:
    """Turns ripgrep's `--null` output into `Collected` results as chunks arrive."""

    def __init__(
        self,
        mode: OutputMode,
        collected: Collected,
        allowed: set[str] | None,
        accept: Callable[[str], bool] | None = None,
    ) -> None:
        self.mode = mode
        self.collected = collected
        self.allowed = allowed
        self.accept = accept
        self.buffer = b""

    def feed(self, chunk: bytes) -> bool:
        data = self.buffer + chunk
        separator = b"\0" if self.mode == "files_with_matches" else b"\n"
        records = data.split(separator)
        self.buffer = records.pop()
        return self._records(records)

    def finish(self) -> None:
        if self.buffer:
            self._records([self.buffer])
            self.buffer = b""

    def _records(self, records: list[bytes]) -> bool:
        collected = self.collected
        if self.mode == "files_with_matches":
            for record in records:
                rel = _rel(record)
                wanted = (self.allowed is None or rel in self.allowed) and (self.accept is None or self.accept(rel))
                if wanted and not collected.add_file(rel):
                    return False
            return True
        if self.mode == "count":
            for record in records:
                name, _, number = record.partition(b"\0")
                rel = _rel(name)
                wanted = self.allowed is None or rel in self.allowed
                if wanted and not collected.add_count(rel, int(number or b"0")):
                    return False
            return True
        for record in records:
            name, sep, rest = record.partition(b"\0")
            if not sep:  # a "--" between context groups; we draw our own
                continue
            match = _CONTENT_LINE.fullmatch(rest)
            if match is None:
                continue
            rel = _rel(name)
            if self.allowed is not None and rel not in self.allowed:
                continue
            text = match.group(3).decode("utf-8", "replace").removesuffix("\r")
            if not collected.add_line(rel, int(match.group(1)), match.group(2) == b":", text):
                return False
        return True


def _rel(raw: bytes) -> str:
    rel = os.fsdecode(raw)
    if os.sep != "/":
        rel = rel.replace(os.sep, "/")
    while rel.startswith("./"):
        rel = rel[2:]
    return rel
