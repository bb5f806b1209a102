"""Reading git's config files as git reads them, for the walls: which files they include and where their hooks are
(so those stay read-only), and which of their settings could make git run a program (so a repository a command
made keeps only the settings that cannot).

`parse(text)` gives the entries in order, as `Entry(section, subsection, key, value)` (section and key lower-cased
as git compares them; `value` None for a bare key, which git reads as true), or raises `Malformed` where git would
refuse the file too. `includes(path, home)` follows `include.path` and every `includeIf.*.path` (whatever the
condition: a condition that does not hold today may hold tomorrow) from a file, recursively.
`safe(entry)` says whether a setting is one of those known to run nothing and redirect nothing (an allowlist:
`core.fsmonitor`, `core.hooksPath`, aliases, filters, drivers, includes, programs and the rest are not), and
`render(entries)` writes entries back as a config file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

MAX_INCLUDE_DEPTH = 10
"""As git: deeper includes are refused."""
MAX_INCLUDES = 64
"""The most included files followed from one file (a command may write one that includes itself a thousand
times)."""
MAX_CONFIG_BYTES = 1 << 20
"""A bigger config is not read (its includes and hooks path are not looked up; git itself reads it)."""

SAFE_KEYS: dict[str, frozenset[str]] = {
    "core": frozenset(
        {
            "repositoryformatversion",
            "filemode",
            "bare",
            "logallrefupdates",
            "ignorecase",
            "precomposeunicode",
            "symlinks",
            "autocrlf",
            "eol",
            "safecrlf",
            "checkstat",
            "trustctime",
            "quotepath",
            "abbrev",
            "compression",
            "loosecompression",
            "bigfilethreshold",
            "commentchar",
            "whitespace",
            "protecthfs",
            "protectntfs",
            "preloadindex",
            "untrackedcache",
            "sparsecheckout",
            "sparsecheckoutcone",
            "longpaths",
            "fscache",
        }
    ),
    "extensions": frozenset({"objectformat", "refstorage", "worktreeconfig", "preciousobjects"}),
    "user": frozenset({"name", "email", "signingkey", "useconfigonly"}),
    "init": frozenset({"defaultbranch"}),
    "pull": frozenset({"rebase", "ff"}),
    "push": frozenset({"default", "autosetupremote", "followtags"}),
    "fetch": frozenset({"prune", "prunetags"}),
    "merge": frozenset({"ff", "conflictstyle", "log"}),
    "rebase": frozenset({"autosquash", "autostash", "updaterefs"}),
    "commit": frozenset({"verbose", "cleanup", "gpgsign"}),
    "status": frozenset({"showuntrackedfiles", "short", "branch", "relativepaths"}),
    "log": frozenset({"date", "decorate", "follow"}),
    "index": frozenset({"version", "threads", "skiphash", "sparse"}),
    "gc": frozenset({"auto", "autodetach", "reflogexpire"}),
    "i18n": frozenset({"commitencoding", "logoutputencoding"}),
}
"""Sections without a subsection, and their keys that run nothing."""
SAFE_SUBSECTION_KEYS: dict[str, frozenset[str]] = {
    "remote": frozenset({"url", "pushurl", "fetch", "push", "tagopt", "prune", "mirror", "skipdefaultupdate"}),
    "branch": frozenset({"remote", "merge", "rebase", "pushremote", "description"}),
    "submodule": frozenset({"url", "active", "branch", "path", "shallow"}),
}
"""Sections with a subsection (`[remote "origin"]`), and their keys that run nothing (not `remote.*.uploadpack`,
`remote.*.vcs`, `submodule.*.update`...)."""


class Malformed(ValueError):
    """The text is not a config file git would read."""


@dataclass(frozen=True)
class Entry:
    section: str
    subsection: str | None
    key: str
    value: str | None

    @property
    def name(self) -> str:
        middle = f".{self.subsection}" if self.subsection is not None else ""
        return f"{self.section}{middle}.{self.key}"


_known: dict[Path, tuple[tuple[int, ...], list[Entry] | Malformed | None]] = {}
"""What `read` found in each file, by the file's identity, size and times (a file read again is read only if one
of these changed; the walls look every command)."""
MAX_KNOWN = 512


def read(path: Path) -> list[Entry] | None:
    """The entries of a config file; None if it is missing, too big or unreadable; `Malformed` if malformed."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    known = _known.get(path)
    if known is None or known[0] != key:
        known = (key, _read(path))
        if len(_known) >= MAX_KNOWN:
            _known.clear()
        _known[path] = known
    if isinstance(known[1], Malformed):
        raise Malformed(str(known[1]))
    return None if known[1] is None else list(known[1])


def _read(path: Path) -> list[Entry] | Malformed | None:
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError:
        return None
    if len(data) > MAX_CONFIG_BYTES:
        return None
    try:
        return parse(data.decode("utf-8", errors="surrogateescape"))
    except Malformed as exc:
        return exc


def parse(text: str) -> list[Entry]:
    """The entries of a config file's text, in order (see the module docstring)."""
    entries: list[Entry] = []
    section: tuple[str, str | None] | None = None
    lines = text.replace("\r\n", "\n").split("\n")
    index = 0
    while index < len(lines):
        line = lines[index].lstrip(" \t")
        index += 1
        if line.startswith("\ufeff"):
            line = line[1:]
        if line.startswith("["):
            section, line = _section_header(line)
            line = line.lstrip(" \t")
        if not line or line[0] in "#;":
            continue
        if section is None:
            raise Malformed("a setting before any section")
        key, rest = _key(line)
        if rest is None:
            entries.append(Entry(section[0], section[1], key, None))
            continue
        value, index = _value(rest, lines, index)
        entries.append(Entry(section[0], section[1], key, value))
    return entries


def _section_header(line: str) -> tuple[tuple[str, str | None], str]:
    end = 1
    while end < len(line) and (line[end].isalnum() or line[end] in "-."):
        end += 1
    name = line[1:end]
    if not name:
        raise Malformed("an empty section name")
    if end < len(line) and line[end] == "]":
        if "." in name:  # the old form [section.subsection]
            head, _, tail = name.partition(".")
            return (head.lower(), tail.lower()), line[end + 1 :]
        return (name.lower(), None), line[end + 1 :]
    rest = line[end:].lstrip(" \t")
    if not rest.startswith('"'):
        raise Malformed(f"a malformed section header [{name}")
    subsection, position = [], 1
    while position < len(rest) and rest[position] != '"':
        char = rest[position]
        if char == "\\" and position + 1 < len(rest):
            position += 1
            char = rest[position]
        elif char == "\n":
            raise Malformed("a newline in a subsection name")
        subsection.append(char)
        position += 1
    if rest[position + 1 : position + 2] != "]":
        raise Malformed(f"a malformed section header [{name}")
    return (name.lower(), "".join(subsection)), rest[position + 2 :]


def _key(line: str) -> tuple[str, str | None]:
    end = 0
    while end < len(line) and (line[end].isalnum() or line[end] == "-"):
        end += 1
    key = line[:end]
    if not key or not key[0].isalpha():
        raise Malformed(f"a malformed setting {line[:40]!r}")
    rest = line[end:].lstrip(" \t")
    if not rest or rest[0] in "#;":
        return key.lower(), None
    if rest[0] != "=":
        raise Malformed(f"a malformed setting {line[:40]!r}")
    return key.lower(), rest[1:]


ESCAPES = {"n": "\n", "t": "\t", "b": "\b", "\\": "\\", '"': '"'}


def _value(rest: str, lines: list[str], index: int) -> tuple[str, int]:
    """A value from the text after `=`, which may continue on the next lines (a `\\` at the end of a line)."""
    out: list[str] = []
    pending_space = ""  # whitespace inside a value counts (as spaces, as git reads it) only if more follows
    quoted = False
    started = False
    position = 0
    while True:
        if position >= len(rest):
            if quoted:
                raise Malformed("an unterminated quote")
            return "".join(out), index
        char = rest[position]
        position += 1
        if char == "\\":
            if position >= len(rest):  # a continuation: the value goes on on the next line
                if index >= len(lines):
                    return "".join(out), index
                rest, position, index = lines[index], 0, index + 1
                continue
            escaped = rest[position]
            position += 1
            if escaped not in ESCAPES:
                raise Malformed(f"an unknown escape \\{escaped}")
            out.append(pending_space + ESCAPES[escaped])
            pending_space, started = "", True
        elif char == '"':
            quoted = not quoted
            out.append(pending_space)
            pending_space, started = "", True
        elif not quoted and char in "#;":
            return "".join(out), index
        elif not quoted and char in " \t":
            if started:
                pending_space += " "
        else:
            out.append(pending_space + char)
            pending_space, started = "", True


def includes(path: Path, home: Path) -> list[Path]:
    """The files `path` includes, recursively (relative ones from the including file's folder; `~/` from `home`),
    whether they exist or not, each once and `MAX_INCLUDES` at most; a malformed or unreadable file includes
    nothing."""
    found: dict[Path, None] = {}
    _include(path, home, 0, found)
    return list(found)


def _include(path: Path, home: Path, depth: int, found: dict[Path, None]) -> None:
    if depth >= MAX_INCLUDE_DEPTH:
        return
    try:
        entries = read(path) or []
    except Malformed:
        return
    for entry in entries:
        if entry.key != "path" or entry.section not in ("include", "includeif") or not entry.value:
            continue
        target = expand(entry.value, home, path.parent)
        if target in found or len(found) >= MAX_INCLUDES:
            continue
        found[target] = None
        _include(target, home, depth + 1, found)


def expand(value: str, home: Path, relative_to: Path) -> Path:
    """A path as git reads it in a config file: `~/` from the home folder, relative ones from `relative_to`."""
    if value == "~" or value.startswith("~/"):
        return Path(os.path.normpath(home / value[2:]))
    return Path(os.path.normpath(relative_to / value))


def values(paths: list[Path], section: str, key: str) -> list[str]:
    """Every value of `section.key` in these files (not following their includes: pass those too)."""
    found: list[str] = []
    for path in paths:
        try:
            entries = read(path) or []
        except Malformed:
            continue
        found += [e.value for e in entries if e.section == section and e.key == key and e.value is not None]
    return found


def safe(entry: Entry) -> bool:
    """Whether a setting is one known to run no program and send git nowhere else (see `SAFE_KEYS`)."""
    if entry.subsection is None:
        return entry.key in SAFE_KEYS.get(entry.section, frozenset())
    if entry.section in ("color", "advice"):
        return True
    return entry.key in SAFE_SUBSECTION_KEYS.get(entry.section, frozenset())


def render(entries: list[Entry]) -> str:
    """Entries as a config file's text (each section once, in the order first seen)."""
    sections: dict[tuple[str, str | None], list[Entry]] = {}
    for entry in entries:
        sections.setdefault((entry.section, entry.subsection), []).append(entry)
    out: list[str] = []
    for (section, subsection), group in sections.items():
        sub = "" if subsection is None else ' "' + subsection.replace("\\", "\\\\").replace('"', '\\"') + '"'
        out.append(f"[{section}{sub}]")
        for entry in group:
            out.append(f"\t{entry.key}" if entry.value is None else f"\t{entry.key} = {_quote(entry.value)}")
    return "\n".join(out) + "\n" if out else ""


def _quote(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{escaped}"'
