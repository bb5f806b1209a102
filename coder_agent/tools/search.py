"""grep and glob for the model: fast on big trees, respecting .gitignore, capped, with paths relative to the root.

This module owns:

* `grep`: a regex search, `files_with_matches` (default; matching files sorted by path), `content` (matching lines
  as `path:line:text`, context lines as `path-line-text`, groups apart by `--`) or `count` (`path:N` matching lines);
* `glob_files`: the files whose path matches a glob, newest modification time first;
* `SearchResult` (the text for the model, `matches` as absolute paths with a line for ACP locations, `truncated`)
  and `SearchError` (a message for the model: invalid regex, missing path);
* `find_rg`: the ripgrep binary, found beside this interpreter (the PyPI `ripgrep` wheel installs `rg` into the
  environment's scripts directory) or else on PATH. Without one, a pure-Python backend does the same work more
  slowly, so the tools never fail for want of ripgrep. `backend="python"` forces it (tests).

What is searched, in both backends:

* `.gitignore` rules are respected, also outside a git repository (`--no-require-git`); files given explicitly as
  `path` are searched even when ignored;
* hidden files and directories (dotfiles, `.github/`) are searched; `.git` directories never are;
* symbolic links are not followed; binary files (a NUL byte) are skipped.

The Python backend reads `.gitignore` files only (no `.ignore`, `.rgignore`, `.git/info/exclude` or global
excludes, which ripgrep also honours) and uses Python's `re`, close to but not the same as ripgrep's regex syntax.

Globs (grep's `glob`, glob_files' `pattern`): a glob without "/" matches file names at any depth ("*.py" is
"**/*.py"); a glob with "/" matches the path relative to the search directory, or relative to the root; "*" and "?"
stay within a path segment, "**" spans segments, `[abc]` and `{a,b}` work as usual; a leading "!" in grep's glob
excludes instead. ripgrep's own `--glob` would search ignored files that match it, so positive globs are applied
without letting them override .gitignore.

Searching a subdirectory of the root, ripgrep mishandles anchored patterns ("/build", "src/gen/") of .gitignore
files above the search directory (BurntSushi/ripgrep#2770); such searches therefore skip those parent files
(`--no-ignore-parent`) and pass their non-negated rules as exclusion globs instead.

The ripgrep process runs with stdin from /dev/null and its output piped to us (never to our stdout, which carries
ACP), and is killed on timeout, on cancellation, or once enough results were read.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import anyio
import anyio.abc
import anyio.to_thread

__all__ = [
    "Backend",
    "OutputMode",
    "SearchError",
    "SearchResult",
    "find_rg",
    "glob_files",
    "grep",
]

OutputMode = Literal["files_with_matches", "content", "count"]
Backend = Literal["auto", "rg", "python"]

_MAX_FILES_COLLECTED = 200_000  # file paths read before we stop counting ("more than N")
_MAX_LINE_CHARS = 500  # content lines are cut after this many characters
_MAX_FILE_BYTES = 50 * 1024 * 1024  # the Python backend skips larger files
_SNIFF = 8192  # a NUL byte in this many leading bytes marks a binary file
_TYPE_NAME = "coderagentglob"


class SearchError(Exception):
    """The search could not run (invalid regex, missing path, ...); the message is for the model."""


@dataclass(frozen=True)
class SearchResult:
    """The model's text, plus the results shown as (absolute path, line or None) for ACP locations."""

    text: str
    matches: list[tuple[Path, int | None]] = field(default_factory=list)
    truncated: bool = False
    """True if results were left out: capped at max_results, or the search stopped early (timeout)."""
    backend: Literal["rg", "python"] = "rg"


@functools.cache
def find_rg() -> str | None:
    """The ripgrep executable: the environment's scripts directory (PyPI `ripgrep` wheel), this interpreter's
    directory, or PATH; None if there is none."""
    name = "rg.exe" if os.name == "nt" else "rg"
    for directory in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        if directory:
            candidate = os.path.join(directory, name)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate
    return shutil.which("rg")


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
) -> SearchResult:
    """Search file contents for `pattern` (a ripgrep regex) under `path` (default: `root`); see the module doc.

    `max_results` caps files (files_with_matches, count) or matching lines (content); `context` lines around each
    match are shown in content mode. Raises `SearchError` for an invalid regex or a path that does not exist.
    """
    scope = _Scope.make(root, path)
    max_results = max(max_results, 1)
    context = max(context, 0)
    rg = _pick_backend(backend)
    collected = _Collected(mode=output_mode, cap=_collect_cap(output_mode, max_results))
    glob_filter = _GlobFilter.make(glob, scope) if glob else None
    if rg is not None:
        try:
            await _grep_rg(rg, pattern, scope, glob_filter, ignore_case, output_mode, context, timeout, collected)
        except OSError:  # rg could not be started: search without it
            rg = None
            collected = _Collected(mode=output_mode, cap=_collect_cap(output_mode, max_results))
    if rg is None:
        await _grep_python(pattern, scope, glob_filter, ignore_case, output_mode, context, timeout, collected)
    return _grep_result(pattern, scope, glob, output_mode, context, max_results, timeout, collected, rg is not None)


async def glob_files(
    pattern: str,
    root: Path,
    *,
    path: Path | None = None,
    max_results: int = 100,
    timeout: float = 60,
    backend: Backend = "auto",
) -> SearchResult:
    """The files under `path` (default: `root`) matching the glob `pattern`, newest first, at most `max_results`."""
    scope = _Scope.make(root, path)
    if not scope.is_dir:
        raise SearchError(f"{scope.display_target} is a file, not a directory; glob searches a directory.")
    max_results = max(max_results, 1)
    matcher = _GlobFilter.make(pattern, scope)
    if matcher.negated:
        raise SearchError(f"The glob {pattern!r} starts with '!'; glob needs a pattern of the files to list.")
    rg = _pick_backend(backend)
    collected = _Collected(mode="files_with_matches", cap=_MAX_FILES_COLLECTED)
    if rg is not None:
        try:
            await _list_rg(rg, scope, matcher, timeout, collected)
        except OSError:  # rg could not be started: list without it
            rg = None
            collected = _Collected(mode="files_with_matches", cap=_MAX_FILES_COLLECTED)
    if rg is None:
        await _list_python(scope, matcher, timeout, collected)
    files = await anyio.to_thread.run_sync(_newest_first, scope, collected.files)
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
    return SearchResult(
        text="\n".join(lines),
        matches=[(scope.absolute(rel), None) for rel in shown],
        truncated=truncated,
        backend="rg" if rg is not None else "python",
    )


# --- scope: root, target, paths -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Scope:
    """Where a search runs. Result paths are posix paths relative to `base` (the root, or the target itself when
    it lies outside the root, in which case they are shown absolute)."""

    base: Path
    target: Path
    target_rel: str  # the target relative to base, "" when it is base
    is_dir: bool
    inside_root: bool

    @classmethod
    def make(cls, root: Path, path: Path | None) -> _Scope:
        root = Path(os.path.abspath(root))
        target = root if path is None else Path(os.path.abspath(root / path))
        if not target.exists():
            raise SearchError(f"The path {path} does not exist (searched relative to {root}).")
        is_dir = target.is_dir()
        try:
            rel = target.relative_to(root).as_posix()
            base, inside = root, True
        except ValueError:
            base, inside = (target if is_dir else target.parent), False
            rel = "" if is_dir else target.name
        return cls(base, target, "" if rel == "." else rel, is_dir, inside)

    @property
    def display_target(self) -> str:
        return self.display(self.target_rel) if self.target_rel else str(self.base)

    def display(self, rel: str) -> str:
        return rel if self.inside_root else str(self.base / rel)

    def absolute(self, rel: str) -> Path:
        return self.base / rel

    def relative_to_target(self, rel: str) -> str:
        """`rel` (relative to base) relative to the search directory."""
        if self.is_dir and self.target_rel and rel.startswith(self.target_rel + "/"):
            return rel[len(self.target_rel) + 1 :]
        return rel


def _pick_backend(backend: Backend) -> str | None:
    if backend == "python":
        return None
    rg = find_rg()
    if rg is None and backend == "rg":
        raise SearchError("ripgrep (rg) is not installed.")
    return rg


# --- globs and .gitignore rules -------------------------------------------------------------------------------------


def _glob_regex(glob: str) -> str:
    """A regex (for fullmatch) for a gitignore-style glob: "*", "?", "**", "[...]", "{a,b}", "\\" escapes."""
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        char = glob[i]
        if char == "*":
            if glob.startswith("**", i):
                j = i + 2
                whole_segment = (i == 0 or glob[i - 1] == "/") and (j == n or glob[j] == "/")
                if whole_segment and j == n:
                    out.append(".*")
                    i = j
                    continue
                if whole_segment:
                    out.append("(?:.*/)?")
                    i = j + 1
                    continue
                out.append("[^/]*")
                i = j
                continue
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = glob.find("]", i + 2 if glob.startswith(("[!", "[^"), i) else i + 1)
            if end == -1:
                out.append(re.escape(char))
            else:
                body = glob[i + 1 : end]
                negate = body[:1] in ("!", "^")
                body = body[1:] if negate else body
                body = body.replace("\\", "\\\\").replace("[", "\\[")
                out.append(f"[{'^/' if negate else ''}{body}]")
                i = end
        elif char == "{":
            end = _matching_brace(glob, i)
            if end == -1:
                out.append(re.escape(char))
            else:
                alternatives = _split_top_level(glob[i + 1 : end])
                out.append("(?:" + "|".join(_glob_regex(alt) for alt in alternatives) + ")")
                i = end
        elif char == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(glob[i]))
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def _matching_brace(glob: str, start: int) -> int:
    depth = 0
    i = start
    while i < len(glob):
        if glob[i] == "\\":
            i += 2
            continue
        if glob[i] == "{":
            depth += 1
        elif glob[i] == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def _split_top_level(body: str) -> list[str]:
    parts: list[str] = []
    depth, current = 0, []
    i = 0
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body):
            current.append(body[i : i + 2])
            i += 2
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
        i += 1
    parts.append("".join(current))
    return parts


@dataclass(frozen=True)
class _GlobFilter:
    """A file glob as the model gave it (see the module doc for its meaning)."""

    pattern: str  # without a leading "!" or "./"
    negated: bool
    basename_only: bool  # no "/": matched against file names (rg --type) ...
    regex: re.Pattern[str]  # ... else against paths relative to the search directory or the root
    scope: _Scope

    @classmethod
    def make(cls, glob: str, scope: _Scope) -> _GlobFilter:
        negated = glob.startswith("!")
        pattern = glob[1:] if negated else glob
        while pattern.startswith("./"):
            pattern = pattern[2:]
        anchored = pattern.startswith("/")  # "/x" is x at the top of the search directory only
        pattern = pattern.lstrip("/")
        if not anchored and pattern.startswith("**/") and "/" not in pattern[3:]:
            pattern = pattern[3:]
        if not pattern:
            raise SearchError(f"The glob {glob!r} is empty.")
        basename_only = not anchored and "/" not in pattern
        try:
            regex = re.compile(f"(?s:{_glob_regex(pattern)})")
        except re.error as exc:
            raise SearchError(f"The glob {glob!r} is not valid: {exc}.") from None
        return cls(pattern, negated, basename_only, regex, scope)

    def matches(self, rel: str) -> bool:
        """Whether a file (path relative to base) matches the pattern itself (ignoring `negated`)."""
        if self.basename_only:
            return self.regex.fullmatch(rel.rsplit("/", 1)[-1]) is not None
        inner = self.scope.relative_to_target(rel)
        return self.regex.fullmatch(inner) is not None or self.regex.fullmatch(rel) is not None

    def accepts(self, rel: str) -> bool:
        """Whether a file is searched under this filter (`negated` excludes)."""
        return self.matches(rel) != self.negated

    def rg_args(self) -> list[str]:
        """ripgrep filter arguments that never un-ignore a file. For path globs ripgrep only pre-filters (its
        `--glob` overrides .gitignore); the caller must still check `accepts` against an ignore-aware listing."""
        if self.negated:
            return ["--glob", "!" + self.pattern]
        if self.basename_only:
            return ["--type-add", f"{_TYPE_NAME}:{self.pattern}", "--type", _TYPE_NAME]
        globs = ["/" + self.pattern]
        if self.scope.target_rel and self.scope.is_dir:
            globs.append(f"/{self.scope.target_rel}/{self.pattern}")
        return [arg for glob in globs for arg in ("--glob", glob)]

    @property
    def needs_listing(self) -> bool:
        return not self.negated and not self.basename_only


@dataclass(frozen=True)
class _IgnoreRule:
    regex: re.Pattern[str]
    negated: bool
    dir_only: bool
    anchored: bool  # matched against the path relative to `base`, else against the name
    base: str  # directory of the .gitignore, relative to the scope base ("" for it)
    glob: str  # the pattern as written, without "!", leading "/" or trailing "/"

    def applies(self, rel: str, is_dir: bool) -> bool:
        if self.dir_only and not is_dir:
            return False
        if self.base:
            if not rel.startswith(self.base + "/"):
                return False
            rel = rel[len(self.base) + 1 :]
        subject = rel if self.anchored else rel.rsplit("/", 1)[-1]
        return self.regex.fullmatch(subject) is not None


def _parse_gitignore(text: str, base: str) -> list[_IgnoreRule]:
    rules: list[_IgnoreRule] = []
    for raw in text.splitlines():
        line = raw
        while line.endswith(" ") and not line.endswith("\\ "):
            line = line[:-1]
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        if negated or line.startswith(("\\!", "\\#")):  # "\!" and "\#" escape a literal first character
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        try:
            regex = re.compile(f"(?s:{_glob_regex(line)})")
        except re.error:
            continue
        rules.append(_IgnoreRule(regex, negated, dir_only, anchored, base, line))
    return rules


def _read_rules(directory: Path, base_rel: str) -> list[_IgnoreRule]:
    try:
        text = (directory / ".gitignore").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return _parse_gitignore(text, base_rel)


def _parent_rules(scope: _Scope) -> list[_IgnoreRule]:
    """The .gitignore rules of base and of every directory between it and the search directory (exclusive)."""
    if not scope.is_dir or not scope.target_rel:
        return []
    rules = _read_rules(scope.base, "")
    parts = scope.target_rel.split("/")
    for depth in range(1, len(parts)):
        rel = "/".join(parts[:depth])
        rules.extend(_read_rules(scope.base / rel, rel))
    return rules


def _ignored(rules: list[_IgnoreRule], rel: str, is_dir: bool) -> bool:
    for rule in reversed(rules):
        if rule.applies(rel, is_dir):
            return not rule.negated
    return False


def _parent_exclusion_globs(scope: _Scope) -> list[str]:
    """ripgrep exclusion globs standing for the parent .gitignore rules (negations cannot be expressed; dropped)."""
    globs: list[str] = []
    for rule in _parent_rules(scope):
        if rule.negated:
            continue
        suffix = "/" if rule.dir_only else ""
        if rule.base:
            prefix = f"/{rule.base}/" if rule.anchored else f"/{rule.base}/**/"
        else:
            prefix = "/" if rule.anchored else ""
        globs.append(f"!{prefix}{rule.glob}{suffix}")
    return globs


# --- ripgrep ---------------------------------------------------------------------------------------------------------


def _rg_common(rg: str, scope: _Scope) -> list[str]:
    args = [rg, "--no-config", "--hidden", "--no-require-git", "--color", "never", "--no-messages"]
    if scope.is_dir and scope.target_rel:
        args.append("--no-ignore-parent")
        for glob in _parent_exclusion_globs(scope):
            args += ["--glob", glob]
    args += ["--glob", "!.git"]
    return args


def _rg_target(scope: _Scope) -> str:
    return scope.target_rel or "."


async def _grep_rg(
    rg: str,
    pattern: str,
    scope: _Scope,
    glob_filter: _GlobFilter | None,
    ignore_case: bool,
    mode: OutputMode,
    context: int,
    timeout: float,
    collected: _Collected,
) -> None:
    deadline = time.monotonic() + timeout
    allowed: set[str] | None = None
    filter_args: list[str] = []
    if glob_filter is not None and scope.is_dir:
        filter_args = glob_filter.rg_args()
        if glob_filter.needs_listing:  # rg's --glob would un-ignore files: keep only files an ignore-aware listing has
            listing = _Collected(mode="files_with_matches", cap=_MAX_FILES_COLLECTED)
            await _list_rg(rg, scope, glob_filter, timeout, listing)
            allowed = set(listing.files)
            if listing.timed_out:
                collected.timed_out = True
                collected.complete = False
                return
            if not allowed:
                return
    args = _rg_common(rg, scope)
    # the user's filter first: a later --glob wins, and the exclusions must win over it
    args[1:1] = filter_args
    if ignore_case:
        args.append("--ignore-case")
    if mode == "files_with_matches":
        args += ["--files-with-matches", "--null"]
    elif mode == "count":
        args += ["--count", "--null", "--with-filename"]
    else:
        args += ["--line-number", "--null", "--no-heading", "--with-filename"]
        args += ["--max-columns", str(_MAX_LINE_CHARS), "--max-columns-preview"]
        if context:
            args += ["--context", str(context)]
    args += ["--regexp", pattern, "--", _rg_target(scope)]

    parser = _RgParser(mode, collected, allowed)
    returncode, stderr, timed_out = await _run(args, scope.base, parser.feed, deadline - time.monotonic())
    if not timed_out:
        parser.finish()
    collected.timed_out |= timed_out
    if timed_out:
        collected.complete = False
    if returncode == 2 and not collected.any():
        message = stderr.decode("utf-8", "replace").strip()
        message = "\n".join(line.removeprefix("rg: ") for line in message.splitlines())
        raise SearchError(_regex_error_message(pattern, message))


async def _list_rg(rg: str, scope: _Scope, matcher: _GlobFilter, timeout: float, collected: _Collected) -> None:
    args = [*_rg_common(rg, scope), "--files", "--null"]
    if matcher.basename_only and not matcher.negated:
        args[1:1] = matcher.rg_args()
    args += ["--", _rg_target(scope)]
    parser = _RgParser("files_with_matches", collected, None, accept=matcher.accepts)
    _, _, timed_out = await _run(args, scope.base, parser.feed, timeout)
    if not timed_out:
        parser.finish()
    else:
        collected.timed_out = True
        collected.complete = False


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
            if len(stderr) < 65536:
                stderr.extend(chunk[: 65536 - len(stderr)])

    timed_out = False
    async with await anyio.open_process(
        args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd
    ) as process:
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
    return process.returncode, bytes(stderr), timed_out


_CONTENT_LINE = re.compile(rb"(\d+)([:-])(.*)", re.DOTALL)


class _RgParser:
    """Turns ripgrep's `--null` output into `_Collected` results as chunks arrive."""

    def __init__(
        self,
        mode: OutputMode,
        collected: _Collected,
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


def _regex_error_message(pattern: str, message: str) -> str:
    text = f"The search failed for pattern {pattern!r}:\n{message}" if message else f"The search failed: {pattern!r}"
    if "regex" in message.lower() or "parse" in message.lower():
        text += (
            "\nThe pattern is a regular expression (ripgrep/Rust syntax): escape literal characters such as "
            "( ) [ ] { } . * + ? | \\ with a backslash (e.g. `interface\\{\\}`, `foo\\(`); look-around and "
            "back-references are not supported."
        )
    return text


# --- Python backend --------------------------------------------------------------------------------------------------


def _walk(scope: _Scope, stop: Callable[[], bool]) -> Iterator[str]:
    """Files (paths relative to base) under the target: .gitignore respected, .git and symlinks skipped, sorted."""
    if not scope.is_dir:
        yield scope.target_rel
        return
    parent_rules = _parent_rules(scope)
    start = scope.target
    rules_by_dir: dict[str, list[_IgnoreRule]] = {}
    for directory, dirnames, filenames in os.walk(start):
        if stop():
            return
        dir_path = Path(directory)
        rel_dir = dir_path.relative_to(scope.base).as_posix()
        rel_dir = "" if rel_dir == "." else rel_dir
        inherited = rules_by_dir.pop(rel_dir, parent_rules)
        rules = inherited + _read_rules(dir_path, rel_dir)
        kept: list[str] = []
        for name in sorted(dirnames):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if name == ".git" or os.path.islink(os.path.join(directory, name)) or _ignored(rules, rel, True):
                continue
            kept.append(name)
            rules_by_dir[rel] = rules
        dirnames[:] = kept
        for name in sorted(filenames):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if name == ".git" or os.path.islink(os.path.join(directory, name)) or _ignored(rules, rel, False):
                continue
            yield rel


async def _in_thread(work: Callable[[threading.Event, float], None], timeout: float) -> None:
    stop = threading.Event()
    deadline = time.monotonic() + timeout
    try:
        await anyio.to_thread.run_sync(work, stop, deadline, abandon_on_cancel=True)
    finally:
        stop.set()


async def _list_python(scope: _Scope, matcher: _GlobFilter, timeout: float, collected: _Collected) -> None:
    def work(stop: threading.Event, deadline: float) -> None:
        def stopped() -> bool:
            if time.monotonic() > deadline:
                collected.timed_out = True
                collected.complete = False
                return True
            return stop.is_set()

        for rel in _walk(scope, stopped):
            if matcher.accepts(rel) and not collected.add_file(rel):
                return

    await _in_thread(work, timeout)


async def _grep_python(
    pattern: str,
    scope: _Scope,
    glob_filter: _GlobFilter | None,
    ignore_case: bool,
    mode: OutputMode,
    context: int,
    timeout: float,
    collected: _Collected,
) -> None:
    try:
        regex = re.compile(pattern, re.MULTILINE | (re.IGNORECASE if ignore_case else 0))
    except re.error as exc:
        raise SearchError(_regex_error_message(pattern, f"regex parse error: {exc}")) from None
    if "\n" in pattern:
        raise SearchError(_regex_error_message(pattern, "the literal '\\n' is not allowed in a regex"))

    def work(stop: threading.Event, deadline: float) -> None:
        def stopped() -> bool:
            if time.monotonic() > deadline:
                collected.timed_out = True
                collected.complete = False
                return True
            return stop.is_set()

        for rel in _walk(scope, stopped):
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
                if len(line) > _MAX_LINE_CHARS:
                    line = line[:_MAX_LINE_CHARS] + " [... omitted end of long line]"
                if not collected.add_line(rel, i + 1, i in hit_set, line):
                    return

    await _in_thread(work, timeout)


def _read_text(path: Path) -> str | None:
    try:
        if path.stat().st_size > _MAX_FILE_BYTES:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data[:_SNIFF]:
        return None
    return data.decode("utf-8", "replace")


# --- results ---------------------------------------------------------------------------------------------------------


def _collect_cap(mode: OutputMode, max_results: int) -> int:
    """How many results to read before stopping: all files (to sort and count them) or, for content, enough lines
    to fill max_results from the first files by path in most cases."""
    return _MAX_FILES_COLLECTED if mode != "content" else max(20 * max_results, 2000)


@dataclass
class _Collected:
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

    def _room(self, size: int) -> bool:
        if size >= self.cap:
            self.complete = False
            return False
        return True


def _grep_result(
    pattern: str,
    scope: _Scope,
    glob: str | None,
    mode: OutputMode,
    context: int,
    max_results: int,
    timeout: float,
    collected: _Collected,
    used_rg: bool,
) -> SearchResult:
    plus = "" if collected.complete else "+"
    where = f" in {scope.display_target}" if scope.target_rel else ""
    filtered = f" (files matching {glob!r})" if glob else ""
    out: list[str] = []
    matches: list[tuple[Path, int | None]] = []
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
        matches = [(scope.absolute(rel), None) for rel in shown]
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
        matches = [(scope.absolute(rel), None) for rel in shown]
    else:
        budget = max_results
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
                    matches.append((scope.absolute(rel), number))
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
                    f"[Showing the first {len(matches)} matching lines (by path) of {collected.matched_lines} in "
                    f"{file_count} file{'s' if file_count != 1 else ''}. "
                    if collected.complete
                    else f"[Showing {len(matches)} matching lines; the search stopped reading after "
                    f"{collected.matched_lines} in {file_count} files, so there are more. "
                )
                + f"{narrow}, or use output_mode='files_with_matches' or 'count'.]"
            )
    if collected.timed_out:
        out.append(_timeout_note(timeout))
    return SearchResult(
        text="\n".join(out), matches=matches, truncated=truncated, backend="rg" if used_rg else "python"
    )


def _timeout_note(timeout: float) -> str:
    return f"[The search timed out after {timeout:g} s; the results are incomplete. Narrow it with `path` or `glob`.]"


def _newest_first(scope: _Scope, files: list[str]) -> list[str]:
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
