"""`.gitignore` rules: parsing them, reading a folder's file, and deciding whether a path is ignored.

The Python backend applies these rules itself; the ripgrep backend uses them only for the `.gitignore` files above
the search directory (see `coder_agent.tools.search.ripgrep`). Only `.gitignore` files are read: not `.ignore`,
`.rgignore`, `.git/info/exclude` or global excludes, which ripgrep also honours.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from coder_agent.globs import Glob, compile_glob
from coder_agent.tools.search.scope import Scope

__all__ = ["IgnoreRule", "is_ignored", "parent_rules", "parse_gitignore", "read_rules"]


@dataclass(frozen=True)
class IgnoreRule:
    """One line of a `.gitignore`."""

    glob_matcher: Glob
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
        return self.glob_matcher.matches(subject)


def parse_gitignore(text: str, base: str) -> list[IgnoreRule]:
    """The rules of a `.gitignore` in the folder `base` (relative to the scope base); unusable lines are skipped."""
    rules: list[IgnoreRule] = []
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
        rules.append(IgnoreRule(compile_glob(line), negated, dir_only, anchored, base, line))
    return rules


def read_rules(directory: Path, base_rel: str) -> list[IgnoreRule]:
    """The rules of `directory`/.gitignore (none if it cannot be read)."""
    try:
        text = (directory / ".gitignore").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return parse_gitignore(text, base_rel)


def parent_rules(scope: Scope) -> list[IgnoreRule]:
    """The .gitignore rules of base and of every directory between it and the search directory (exclusive)."""
    if not scope.is_dir or not scope.target_rel:
        return []
    rules = read_rules(scope.base, "")
    parts = scope.target_rel.split("/")
    for depth in range(1, len(parts)):
        rel = "/".join(parts[:depth])
        rules.extend(read_rules(scope.base / rel, rel))
    return rules


def is_ignored(rules: list[IgnoreRule], rel: str, is_dir: bool) -> bool:
    """Whether `rel` is ignored: the last rule that applies decides."""
    for rule in reversed(rules):
        if rule.applies(rel, is_dir):
            return not rule.negated
    return False
