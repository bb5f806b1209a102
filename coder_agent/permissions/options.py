"""A program's options read the way its own parser reads them, and what a command was found to run or write.

`scan(argv, syntax)` reads options as getopt, git's parse-options and most tools do: short options combined in
one word (`-sSLo F`, `-kE'…'`: a letter that takes a value takes the rest of the word, or else the next word),
`--name=value` and `--name value`, long names shortened to a prefix where the program accepts that (`--open` for
`--open-files-in-pager`; a prefix that could be several names counts as each of them), options after operands
(GNU order), `--` ending them, and options written with one dash (`-cmd`, `-exec`). A letter the syntax does not
say takes a value is read as a flag, so an unknown option can only make more of a word look like options: what
is checked against these options errs on the side of finding them.

`Findings` is what the modules that know programs (`embedded`, `gitargs`, `scripts`, `writes`) report about one
command: command lines it runs (parsed again as commands, so deny rules see inside them), word ranges it runs as
a command (`find -exec … ;`), what it runs that its words do not show, and the files it writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["Findings", "Opt", "Syntax", "names_in", "scan"]


@dataclass(frozen=True)
class Syntax:
    """How one program writes its options (names without their dashes)."""

    short_values: str = ""
    """Letters that take a value: attached (`-oF`) or the next word (`-o F`)."""
    short_optional: str = ""
    """Letters whose value can only be attached (git grep's `-O[cmd]`)."""
    long_values: frozenset[str] = frozenset()
    """Long options that take a value (`--name=v` or `--name v`)."""
    long_optional: frozenset[str] = frozenset()
    """Long options whose value can only follow `=`."""
    long_known: frozenset[str] = frozenset()
    """Other long options it has (so a shortened name resolves to them, not to a dangerous one)."""
    abbreviate: bool = True
    """A long name may be shortened to a prefix (getopt_long, git, popt)."""
    single_dash: frozenset[str] = frozenset()
    """Long options written with one dash too (`-cmd`, `-exec`); with two dashes they are the same option."""
    single_dash_values: frozenset[str] = frozenset()
    """Those of them that take a value (the next word, or after `=`)."""
    permute: bool = True
    """Options may follow operands (GNU); False: the first operand ends the options."""


def words(text: str) -> frozenset[str]:
    return frozenset(text.split())


@dataclass(frozen=True)
class Opt:
    """One option found in a command's words."""

    names: tuple[str, ...]
    """With its dashes (`-o`, `--output`); a shortened long name gives every name it could be."""
    value: str | None
    index: int
    """The word holding the option."""
    value_index: int
    """The word holding its value (the same word when attached; -1 without one)."""


def scan(argv: Sequence[str], syntax: Syntax, start: int = 1) -> tuple[list[Opt], list[int]]:
    """The options of `argv[start:]` and the indexes of its operands."""
    options: list[Opt] = []
    operands: list[int] = []
    every_long = syntax.long_values | syntax.long_optional | syntax.long_known
    i = start
    while i < len(argv):
        word = argv[i]
        if word == "--":
            operands += range(i + 1, len(argv))
            break
        if word == "-" or not word.startswith("-") or len(word) < 2:
            operands.append(i)
            if not syntax.permute:
                operands += range(i + 1, len(argv))
                break
            i += 1
            continue
        bare = word.lstrip("-")
        head, eq, value = bare.partition("=")
        if head in syntax.single_dash and (word.startswith("--") or len(word) - len(bare) == 1):
            takes = head in syntax.single_dash_values
            if takes and not eq and i + 1 < len(argv):
                options.append(Opt((f"-{head}",), argv[i + 1], i, i + 1))
                i += 2
                continue
            options.append(Opt((f"-{head}",), value if eq else None, i, i if eq else -1))
        elif word.startswith("--"):
            names = _long_names(head, every_long, syntax.abbreviate)
            takes = any(name in syntax.long_values for name in names)
            dashed = tuple(f"--{name}" for name in names)
            if eq:
                options.append(Opt(dashed, value, i, i))
            elif takes and i + 1 < len(argv):
                options.append(Opt(dashed, argv[i + 1], i, i + 1))
                i += 1
            else:
                options.append(Opt(dashed, None, i, -1))
        else:
            i = _cluster(argv, i, syntax, options)
        i += 1
    return options, operands


def _long_names(head: str, every: frozenset[str], abbreviate: bool) -> tuple[str, ...]:
    if head in every or not abbreviate:
        return (head,)
    candidates = tuple(sorted(name for name in every if name.startswith(head)))
    return candidates or (head,)


def _cluster(argv: Sequence[str], i: int, syntax: Syntax, options: list[Opt]) -> int:
    """Combined short options in `argv[i]`; returns the index of the last word used."""
    word = argv[i]
    for k in range(1, len(word)):
        letter, rest = word[k], word[k + 1 :]
        if letter in syntax.short_values:
            if rest:
                options.append(Opt((f"-{letter}",), rest, i, i))
                return i
            if i + 1 < len(argv):
                options.append(Opt((f"-{letter}",), argv[i + 1], i, i + 1))
                return i + 1
            options.append(Opt((f"-{letter}",), None, i, -1))
            return i
        if letter in syntax.short_optional:
            options.append(Opt((f"-{letter}",), rest or None, i, i if rest else -1))
            return i
        options.append(Opt((f"-{letter}",), None, i, -1))
    return i


def names_in(option: Opt, names: frozenset[str] | set[str]) -> bool:
    """Whether the option is (or, shortened, could be) one of `names`."""
    return any(name in names for name in option.names)


@dataclass
class Findings:
    """What a command runs and writes beyond its own program, as far as its words show."""

    code: list[tuple[int, str]] = field(default_factory=list)
    """(index of the word holding it, a command line the program runs or keeps to run later)."""
    runs: list[tuple[int, int, str, str]] = field(default_factory=list)
    """(start, end, label, placeholder): the words `argv[start:end]` are a command it runs (`find -exec … ;`,
    `git bisect run …`); a word holding the placeholder (`{}`) is not fixed text."""
    hidden: list[str] = field(default_factory=list)
    """What it runs that its words do not show (a config file's programs, a script it reads): why, in words."""
    flagged: bool = False
    """Its options or arguments make it run another program (or decide what runs): only an exact rule allows it."""
    writes: list[str] = field(default_factory=list)
    """Files its options or arguments write ("" when the name is not known)."""
    invocations: list[tuple[str, ...]] = field(default_factory=list)
    """More word lists for deny rules (`find -delete` is an `rm`)."""
    problems: list[str] = field(default_factory=list)
    """What makes the line not understood (`find -exec` without its `;`)."""

    def run(self, index: int, code: str) -> None:
        """It runs the command line `code`, found in the word at `index`."""
        self.code.append((index, code))
        self.flagged = True

    def hide(self, why: str) -> None:
        """It runs something its words do not show."""
        if why not in self.hidden:
            self.hidden.append(why)
        self.flagged = True
