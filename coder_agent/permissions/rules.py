"""Permission rules: `kind:pattern` strings, the same in the config file, in memory and in the session store.

* Path kinds (`read`, `edit`, `delete`, `move`, `search`): a glob (`*` within a folder, `**` any depth).
  A relative glob is relative to the session's folder and only ever matches inside it (`edit:**` is the
  whole workspace, never more); an absolute glob (`edit:/srv/data/**`) matches resolved paths anywhere, and
  only an absolute glob in the user's own config can let a tool reach outside the workspace unasked. As
  deny rules, path globs and program names ignore case and Unicode normal form (`fold_case`).
* `execute`: `execute:git status` covers a simple command whose words start with `git status` and whose
  other words hold no write flag; it never covers a command run through `sudo`, `xargs`, `find -exec`,
  env assignments, or one that writes files (redirections, `tee`, `--output`): only an exact rule does,
  `execute:=<command as written>`. `execute:*` covers every command the parser understands. As a deny
  rule, `execute:git push` matches any command (or wrapper layer) of the program `git` whose later words
  include `push` (in that order), so `git -C x push` and `/usr/bin/git push` are caught too. Its words among
  another command's arguments (`strace git push`, `ssh host git push`, `git -c alias.p='!git push' p`) make
  that command ask (`mentioned_in`): a program that runs its arguments cannot be followed in general.
* `fetch`: a host (`fetch:docs.python.org`, `fetch:*.python.org`, `fetch:*`). Only a rule naming the host
  exactly lets a fetch reach a local or private address.
* MCP tools: a glob over the tool's name (`other:mcp__github__*`).
"""

from __future__ import annotations

import os
import re
import shlex
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path

from coder_agent.globs import compile_glob, escape, unescape
from coder_agent.permissions.paths import Place
from coder_agent.permissions.programs import base_name, program_name
from coder_agent.permissions.shell import SimpleCommand, analyse
from coder_agent.permissions.writes import is_write_flag

PATH_KINDS = frozenset({"read", "edit", "delete", "move", "search"})
ANY = frozenset({"", "*"})


@dataclass(frozen=True)
class Rule:
    """One `kind:pattern` rule; see the module docstring for what each kind's pattern means."""

    kind: str
    pattern: str

    @classmethod
    def parse(cls, text: str) -> Rule:
        kind, sep, pattern = text.partition(":")
        if not sep or not kind.strip():
            raise ValueError(f"permission rule {text!r} should look like 'edit:src/**' or 'execute:git status'")
        rule = cls(kind.strip(), pattern.strip())
        if rule.kind == "execute" and rule.exact and not analyse(rule.pattern[1:]).understood:
            raise ValueError(f"permission rule {text!r}: the command could not be parsed")
        if rule.kind == "execute" and not rule.exact and rule.pattern not in ANY:
            try:
                shlex.split(rule.pattern)
            except ValueError:
                raise ValueError(f"permission rule {text!r}: unbalanced quotes") from None
        return rule

    def __str__(self) -> str:
        return f"{self.kind}:{self.pattern}"

    def applies_to(self, kind: str) -> bool:
        return self.kind in ("*", kind)

    # ---- paths ----------------------------------------------------------------------------------

    @property
    def absolute(self) -> bool:
        return self.pattern.startswith(("/", "~"))

    def matches_place(self, place: Place, *, fold: bool = False) -> bool:
        """A relative glob matches inside the session folder only; an absolute one matches the resolved path.
        `fold` (deny rules): case and Unicode normal form are ignored, since a case-insensitive file system
        (macOS, Windows) reaches `SRC/a.py` as `src/a.py`."""
        if self.absolute:
            pattern, subject = _real_pattern(self.pattern), place.real.as_posix()
        elif not place.in_cwd:
            return False
        elif self.pattern in ANY or self.pattern == "**":
            return True
        else:
            pattern, subject = self.pattern.removeprefix("./"), place.relative
        if fold:
            return _glob_matches(fold_case(pattern), fold_case(subject))
        return _glob_matches(pattern, subject)

    # ---- commands -------------------------------------------------------------------------------

    @property
    def exact(self) -> bool:
        return self.pattern.startswith("=")

    @cached_property
    def words(self) -> tuple[str, ...]:
        try:
            return tuple(shlex.split(self.pattern))
        except ValueError:
            return tuple(self.pattern.split())

    @cached_property
    def exact_texts(self) -> frozenset[str]:
        return _exact_texts(self.pattern[1:]) if self.exact else frozenset()

    def covers(self, command: SimpleCommand) -> bool:
        """As an allow rule: whether it lets this simple command run."""
        if self.exact:
            return command.text in self.exact_texts
        if self.pattern in ANY:
            return True
        if command.exact_only or not command.argv:
            return False
        words = (program_name(self.words[0]), *self.words[1:]) if self.words else ()
        n = len(words)
        if not n or tuple(command.argv[:n]) != words or not all(command.literal[:n]):
            return False
        return not any(is_write_flag(word) for word in command.argv[n:])

    def denies(self, invocation: Sequence[str]) -> bool:
        """As a deny rule: whether it names this command or wrapper layer (program, then words in order)."""
        if self.exact:
            return False
        if self.pattern in ANY:
            return True
        if not self.words or not invocation or _program(self.words[0]) != _program(invocation[0]):
            return False
        rest = iter(invocation[1:])
        return all(any(word == got for got in rest) for word in self.words[1:])

    def denies_command(self, command: SimpleCommand) -> bool:
        return self.exact and command.text in self.exact_texts

    def mentioned_in(self, command: SimpleCommand) -> bool:
        """As a deny rule: whether its words appear among the command's arguments, in order (`strace rm f`,
        `git -c alias.x='!rm f' x`): a program that runs its arguments could run the denied one."""
        if self.exact or self.pattern in ANY or not self.words:
            return False
        first, tokens = _program(self.words[0]), command.mentions
        for i, token in enumerate(tokens):
            if _program(token) == first:
                rest = iter(tokens[i + 1 :])
                if all(any(word == got for got in rest) for word in self.words[1:]):
                    return True
        return False

    # ---- hosts and tools ------------------------------------------------------------------------

    def matches_host(self, host: str, *, explicit: bool = False) -> bool:
        """`explicit`: only a rule naming this very host counts (for local and private addresses)."""
        pattern = self.pattern.lower().rstrip(".")
        if explicit:
            return pattern == host
        return pattern in ANY or _glob_matches(pattern, host)

    def matches_tool(self, tool: str) -> bool:
        return self.pattern in ANY or _glob_matches(self.pattern, tool)


def fold_case(text: str) -> str:
    """`text` with case and Unicode normal form folded away (deny rules match what a file system may equate)."""
    return unicodedata.normalize("NFC", text).casefold()


def _program(word: str) -> str:
    """A program's name as a deny rule compares it: `/bin/rm`, `./RM` and `rm` are all `rm`."""
    return fold_case(base_name(word))


@cache
def _exact_texts(line: str) -> frozenset[str]:
    return frozenset(command.text for command in analyse(line).commands)


@cache
def _real_pattern(pattern: str) -> str:
    """An absolute glob with its fixed folder part resolved (a rule for `/home/u/x/**` matches where it leads)."""
    pattern = os.path.expanduser(pattern)
    fixed, _, _ = re.split(r"(?<!\\)([*?\[{])", pattern, maxsplit=1)[0].rpartition("/")
    fixed = unescape(fixed)
    folder = os.path.realpath(fixed or "/")
    tail = pattern[len(escape(fixed)) :]
    return (escape(folder).rstrip("/") + tail) if tail else escape(folder)


def _glob_matches(pattern: str, subject: str) -> bool:
    """A rule's glob (`coder_agent.globs`); `src/**` also matches the folder `src` itself."""
    if compile_glob(pattern).matches(subject):
        return True
    return pattern.endswith("/**") and compile_glob(pattern[:-3]).matches(subject)


def folder_rule(kind: str, place: Place) -> Rule:
    """The rule for a path's folder: relative inside the session folder, absolute in another root or outside.
    The folder's name is escaped, so a folder named `**` gives a rule for that folder alone."""
    if place.in_cwd:
        folder = place.relative.rpartition("/")[0]
        return Rule(kind, f"{escape(folder)}/**" if folder else "**")
    return Rule(kind, f"{escape(Path(place.real).parent.as_posix().rstrip('/'))}/**")
