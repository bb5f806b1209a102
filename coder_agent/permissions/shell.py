"""Command lines parsed with a real shell grammar (tree-sitter-bash) into the simple commands they run.

`analyse(line)` finds every simple command a bash line runs: through `&&`, `||`, `;`, `&`, pipes, subshells,
`{ }`, `if`/`for`/`while`/`case`, functions, `$(…)`, backticks, `<(…)`, here-documents that expand, the
command strings of `bash -c`, `sh -c`, `eval`, `watch`, `trap`, `xargs sh -c`, and those other programs run from
their arguments (`find -exec`, `git -c alias.x='!…'`, `ssh -o ProxyCommand=…`, `zip -TT …`: `embedded`). Each is
normalised: quotes and backslashes removed, `/bin/rm` read as `rm`, `NAME=value` assignments and wrappers
(`sudo`, `env`, `timeout`, `xargs`, … in `programs`) peeled off. Each records the files it visibly writes
(redirections, `tee`, write flags) and whether a word-prefix rule may cover it at all.

What the parser cannot follow makes the line "not understood" (`problems`): syntax errors, a command name
that is not fixed text (`$CMD`, `$(…)`), a shell reading commands from its input, quoted text holding
`$(`/backticks that something could run later, and anything else unexpected. tree-sitter is imported on
first use, never at startup.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import TYPE_CHECKING

from coder_agent.permissions.embedded import KNOWN, environment, inspect
from coder_agent.permissions.options import Findings
from coder_agent.permissions.programs import SHELLS, base_name, program_name, unwrap
from coder_agent.permissions.words import (
    GLOB_CHARS,
    STRAY_READ_WRITE,
    joins_words,
    node_text,
    reads_input,
    redirection_texts,
    word_value,
)
from coder_agent.permissions.writes import SHORT_WRITE_FLAGS, file_operands, write_targets

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

MAX_DEPTH = 8
LITERAL_ARGS_ONLY = frozenset(SHORT_WRITE_FLAGS) | KNOWN | {
    "pytest", "py.test", "mypy", "tsc", "cargo", "eslint", "prettier", "jest", "vitest", "coverage", "tee", "sed",
    "dd", "find", "ruff", "black", "npm", "pnpm", "yarn", "uv", "pip",
}  # fmt: skip
"""Programs with flags that write files or run commands: an argument that is not fixed text could be one of them."""
RESERVED = frozenset(
    {"if", "then", "else", "elif", "fi", "do", "done", "case", "esac", "while", "until", "for", "in", "function",
     "select", "{", "}", "!", "[[", "]]", "coproc"}
)  # fmt: skip
"""Shell keywords: seen as a command name, the grammar misread the line (`! if …`), so it is not understood."""
_TOKEN = re.compile(r"[A-Za-z0-9_./+~-]+")
EXPANSIONS = frozenset(
    {"simple_expansion", "expansion", "command_substitution", "process_substitution", "arithmetic_expansion"}
)


@dataclass(frozen=True)
class SimpleCommand:
    """One command a line runs, normalised."""

    argv: tuple[str, ...]
    """The program (`/usr/bin/git` read as `git`; `./git` kept) and its arguments, unquoted."""
    literal: tuple[bool, ...]
    """Per word of `argv`: whether it is fixed text (no expansion, glob or brace)."""
    text: str
    """The canonical form: assignments, wrappers, the command and its redirections, quoted as a shell would."""
    writes: tuple[str, ...] = ()
    """Files it visibly writes ("" when the name is not known: `sed -i`, `find -delete`)."""
    exact_only: bool = False
    """Only an exact rule can allow it (assignments, `sudo`/`xargs`/`find -exec`, writes, unknown arguments)."""
    origin: str = ""
    """The source of the statement it belongs to, as written: what an exact rule for it names."""
    wrapped: bool = False
    """It runs through a wrapper (`timeout 5 pytest`): an "always" for it remembers the exact command."""
    touches: tuple[str, ...] = ()
    """Files it changes by naming them as operands (`rm x`, `cp a DEST`): judged like `writes` for where they
    are, without making the command exact-only."""
    mentions: tuple[str, ...] = ()
    """The words of its arguments, assignments and wrappers split at shell punctuation (`alias.x=!rm f` gives
    `alias.x`, `rm`, `f`): a program it may run from its arguments is among them."""
    hidden: tuple[str, ...] = ()
    """What it runs that its words do not show (a config file's programs, `awk`'s `system()` of a built string):
    deny rules cannot be checked against it (see `embedded`)."""
    globs: tuple[str, ...] = ()
    """Those of `writes` and `touches` the shell expands as globs (`> l*`, `rm -rf d/*/x`): where they land is
    found by expanding them."""


@dataclass(frozen=True)
class CommandLine:
    """What a command line runs, as far as the parser can tell."""

    source: str
    commands: tuple[SimpleCommand, ...] = ()
    """Every simple command; an allow rule must cover each of them."""
    invocations: tuple[tuple[str, ...], ...] = ()
    """Every word list a deny rule is held against: each command, and each wrapper layer with what it runs."""
    problems: tuple[str, ...] = ()
    """Why the line is not understood; empty when it is."""
    directories: tuple[str | None, ...] = ()
    """Where its `cd`s and `pushd`s go, in order (None: somewhere the parser cannot tell): relative files it
    writes may be there too."""

    @property
    def understood(self) -> bool:
        return not self.problems


@cache
def _parser() -> Parser:
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


@lru_cache(maxsize=256)
def analyse(line: str) -> CommandLine:
    """The simple commands `line` runs; see the module docstring."""
    walker = _Walker()
    try:
        walker.parse(line, 0)
    except RecursionError:
        walker.problem("the line is nested too deep to follow")
    invocations = tuple(dict.fromkeys(walker.invocations))
    if walker.problems:  # `<>` is not in the grammar: the file it opens is still a write
        for match in STRAY_READ_WRITE.finditer(line):
            target = _unquoted(match.group(1))
            walker.commands.append(SimpleCommand((), (), f"<> {shlex.quote(target)}", (target,), True, line))
    return CommandLine(line, tuple(walker.commands), invocations, tuple(walker.problems), tuple(walker.directories))


def _unquoted(word: str) -> str:
    try:
        return "".join(shlex.split(word)) or word
    except ValueError:
        return word


@dataclass
class _Word:
    value: str
    literal: bool


@dataclass
class _Walker:
    commands: list[SimpleCommand] = field(default_factory=list)
    invocations: list[tuple[str, ...]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    directories: list[str | None] = field(default_factory=list)
    forced_exact: bool = False
    """Inside a command string run through a wrapper that is not transparent (`sudo bash -c '…'`)."""
    context: str = ""
    """That wrapper, in front of every command text inside it, so `sudo bash -c 'x'` never reads as `x`."""
    origin: str = ""
    """The statement whose exact rule covers the commands being walked ("" : each command's own source)."""

    def problem(self, text: str) -> None:
        if text not in self.problems:
            self.problems.append(text)

    def parse(self, line: str, depth: int, *, context: str | None = None, origin: str = "") -> None:
        """Walk `line`; inside a wrapper that is not transparent (`context`), every command is exact-only."""
        saved = (self.forced_exact, self.context, self.origin)
        if context is not None:
            self.forced_exact = True
            self.context = f"{self.context}{context} ⟨"
            self.origin = self.origin or origin
        try:
            self._parse(line, depth)
        finally:
            self.forced_exact, self.context, self.origin = saved

    def _parse(self, line: str, depth: int) -> None:
        if depth > MAX_DEPTH:
            self.problem("command strings nested too deep")
            return
        if "\x00" in line:
            self.problem("a NUL character")
            return
        if joins_words(line):
            self.problem("a backslash-newline inside a word (bash joins the word's two halves)")
        tree = _parser().parse(line.encode("utf-8"))
        if tree.root_node.has_error:
            self.problem("the shell syntax could not be parsed")
        self.walk(tree.root_node, depth, ())

    # ---- the tree -------------------------------------------------------------------------------

    def walk(self, node: Node, depth: int, redirects: tuple[Node, ...]) -> None:
        """Find the simple commands under a statement node; `redirects` are those of enclosing statements."""
        kind = node.type
        if kind == "ERROR" or node.is_missing:
            self.problem("the shell syntax could not be parsed")
            return
        if kind == "comment" or not node.is_named:
            return
        if kind == "redirected_statement":
            own = tuple(c for c in node.named_children if c.type.endswith("_redirect"))
            for child in own:
                self.redirect(child, depth)
            saved = self.origin
            self.origin = self.origin or node_text(node)
            try:
                for child in node.named_children:
                    if child not in own:
                        self.walk(child, depth, redirects + own)
            finally:
                self.origin = saved
        elif kind == "function_definition":
            # `f() { …; } > F`: bash applies the definition's redirections each time f runs, so they are the
            # body's writes (a call of f is not followed: the body is judged where it is written)
            own = tuple(c for c in node.named_children if c.type.endswith("_redirect"))
            for child in own:
                self.redirect(child, depth)
            for child in node.named_children:
                if child not in own:
                    self.walk(child, depth, redirects + own)
        elif kind == "command":
            self.command(node, depth, redirects)
        elif kind.endswith("_redirect"):
            self.redirect(node, depth)
        elif kind in ("variable_assignment", "variable_assignments"):
            self.substitutions(node, depth)
            assignments = [node] if kind == "variable_assignment" else list(node.named_children)
            self.add([self.word(a) for a in assignments], [], [], redirects, assignments_only=True)
        elif kind in ("declaration_command", "unset_command"):
            self.substitutions(node, depth)
            words = [_Word(node_text(node.children[0]), True), *(self.word(c) for c in node.named_children)]
            self.add([], words, [], redirects, depth=depth)
        elif kind in ("raw_string", "word", "ansi_c_string", "string_content"):
            self.code_like(node_text(node))
        elif kind == "expansion" and "@P" in node_text(node):
            self.problem("a prompt expansion (`${…@P}`) can run commands")
        else:
            for child in node.children:
                self.walk(child, depth, redirects)

    def redirect(self, node: Node, depth: int) -> None:
        """A redirection's words may run commands; a here-document's line may go on with more statements."""
        if node.type != "heredoc_redirect":
            self.substitutions(node, depth)
            return
        start = next((node_text(c) for c in node.named_children if c.type == "heredoc_start"), "")
        for child in node.named_children:
            if child.type == "heredoc_body" and not any(q in start for q in "'\"\\") and "`" in node_text(child):
                self.problem("a here-document holds a backtick, which bash runs")
            if child.type in ("heredoc_body", "file_redirect"):
                self.substitutions(child, depth)
            elif child.type not in ("heredoc_start", "heredoc_end", "heredoc_content"):
                self.walk(child, depth, ())

    def substitutions(self, node: Node, depth: int) -> None:
        """Look inside a word, assignment or redirection for the commands it runs ($(…), `…`, <(…))."""
        if node.type == "ERROR" or node.is_missing:
            self.problem("the shell syntax could not be parsed")
        elif node.type in ("command_substitution", "process_substitution"):
            for statement in node.named_children:
                self.walk(statement, depth, ())
        elif node.type == "expansion" and "@P" in node_text(node):
            self.problem("a prompt expansion (`${…@P}`) can run commands")
        elif node.type in ("word", "string_content") and "`" in node_text(node):
            self.problem("a backtick the grammar did not read as a command, which bash runs")
        else:
            for child in node.children:
                self.substitutions(child, depth)

    def code_like(self, value: str) -> None:
        if "$(" in value or "`" in value:
            self.problem("quoted text holds `$(` or a backtick, which a command could run")

    # ---- words ----------------------------------------------------------------------------------

    def word(self, node: Node) -> _Word:
        if node.type != "variable_assignment":
            return _Word(*word_value(node))
        text = node_text(node)
        name_node = node.child_by_field_name("name")
        value_node = node.child_by_field_name("value")
        inner = self.word(value_node) if value_node is not None else _Word("", True)
        prefix = node_text(name_node) if name_node is not None else text.partition("=")[0]
        op = "+=" if text[len(prefix) :].startswith("+=") else "="
        return _Word(f"{prefix}{op}{inner.value}", inner.literal)

    # ---- commands -------------------------------------------------------------------------------

    def command(self, node: Node, depth: int, redirects: tuple[Node, ...]) -> None:
        for child in node.children:
            if child.type.endswith("_redirect"):
                self.redirect(child, depth)
            else:
                self.substitutions(child, depth)
        assignments: list[_Word] = []
        words: list[_Word] = []
        own_redirects: list[Node] = []
        for child in node.named_children:
            if child.type == "variable_assignment" and not words:
                assignments.append(self.word(child))
            elif child.type.endswith("_redirect"):
                own_redirects.append(child)
            elif child.type == "command_name":
                words.append(self.word(child.named_children[0]) if child.named_children else _Word("", False))
            elif child.type != "comment":
                words.append(self.word(child))
        self.add(assignments, words, own_redirects, redirects, depth=depth, origin=self.origin or node_text(node))

    def add(
        self,
        assignments: list[_Word],
        words: list[_Word],
        own_redirects: list[Node],
        redirects: tuple[Node, ...],
        *,
        depth: int = 0,
        assignments_only: bool = False,
        via: str | None = None,
        origin: str = "",
    ) -> None:
        """Record one simple command: unwrap it, find what it writes, and whether a prefix rule may cover it."""
        redirect_texts, writes, globs = redirection_texts([*own_redirects, *redirects])
        for word in assignments:
            self.code_like(word.value if word.literal else "")
        settings = Findings()
        environment([a.value for a in assignments], settings)
        self.embedded(
            settings, tuple(a.value for a in assignments), tuple(a.literal for a in assignments), depth, origin
        )
        if assignments_only or not words:
            text = " ".join([*(shlex.quote(a.value) for a in assignments), *redirect_texts])
            if text:
                text = self.context + text
                mentions = _tokens([a.value for a in assignments])
                self.commands.append(
                    SimpleCommand(
                        (), (), text, tuple(writes), True, self.origin or origin, mentions=mentions,
                        hidden=tuple(settings.hidden), globs=tuple(globs),
                    )
                )  # fmt: skip
            return
        values = [w.value for w in words]
        peeled = unwrap(values)
        if peeled.problem:
            self.problem(peeled.problem)
        self.directories += peeled.directories  # `env -C DIR touch x` writes DIR/x
        for start, token in peeled.placeholders:
            words = [*words[:start], *(_Word(w.value, w.literal and token not in w.value) for w in words[start:])]
        code_words: set[int] = set()
        for k in peeled.layers:
            if not words[k].literal:
                self.problem("a command name is not fixed text")
            self.invocations.append((base_name(values[k]), *values[k + 1 :]))
        exact = self.forced_exact or not peeled.transparent or bool(assignments) or via is not None
        for code, index, joined in peeled.code:
            span = range(index, len(words)) if joined else range(index, index + 1)
            code_words.update(span)
            if all(words[k].literal for k in span):
                wrapper = shlex.join([a.value for a in assignments] + values[:index])
                self.parse(code, depth + 1, context=wrapper if exact else None, origin=origin)
            else:
                self.problem("a command string that is not fixed text")
        if peeled.argv:
            argv_words = [words[k] for k in peeled.argv]
            head = argv_words[0]
            if not head.literal or not head.value:
                self.problem("a command name is not fixed text")
                return
            if head.value in RESERVED:
                self.problem(f"the shell keyword `{head.value}` where a command was expected")
            program = program_name(head.value)
            argv = (program, *(w.value for w in argv_words[1:]))
            literal = tuple(w.literal for w in argv_words)
            self.invocations.append((base_name(head.value), *argv[1:]))
            name = base_name(program)
            found = inspect(argv)
            code_words.update(peeled.argv[0] + k for k in self.embedded(found, argv, literal, depth, origin))
            layered, wrapper_words = Findings(), words[: peeled.argv[0]]  # `env NAME=value …`, `sudo NAME=value …`
            environment([w.value for w in wrapper_words], layered)
            wrapper_values = tuple(w.value for w in wrapper_words)
            wrapper_literal = tuple(w.literal for w in wrapper_words)
            code_words.update(self.embedded(layered, wrapper_values, wrapper_literal, depth, origin))
            found.hidden += settings.hidden + layered.hidden
            if (name in SHELLS or name in ("source", ".")) and not all(literal):
                self.problem(f"`{name}` runs code from a name that is not fixed text")
            if name in ("source", ".") and len(argv) > 1 and reads_input(argv[1]):
                self.problem(f"`{name}` would run commands from its input, which cannot be checked")
            if name == "alias":
                for k, arg in enumerate(argv[1:], start=1):
                    if "=" in arg and literal[k]:
                        code_words.add(peeled.argv[k])
                        self.parse(arg.partition("=")[2], depth + 1)
            if name == "hash" and "-p" in argv[1:-1]:
                self.invocations.append((base_name(argv[argv.index("-p") + 1]),))
            for k, code in _code_arguments(name, argv):
                code_words.add(peeled.argv[k])
                if literal[k]:
                    self.parse(code, depth + 1, context=name if exact else None, origin=origin)
                else:
                    self.problem("a command string that is not fixed text")
            writes += peeled.writes + write_targets(argv) + found.writes
            unknown_args = base_name(program) in LITERAL_ARGS_ONLY and not all(literal)
            lead = [shlex.quote(a.value) for a in assignments] + [shlex.quote(v) for v in values[: peeled.argv[0]]]
            text = self.context + " ".join([*lead, shlex.join(argv), *redirect_texts])
            exact_only = exact or bool(writes) or unknown_args or found.flagged
            wrapped = peeled.argv[0] > 0
            mentions = _tokens([*(a.value for a in assignments), *values[: peeled.argv[0]], *argv[1:]])
            touches = tuple(file_operands(argv))
            globbed = [w.value for w in argv_words[1:] if not w.literal and GLOB_CHARS.search(w.value)]
            globs += [t for t in (*writes, *touches) if any(t and t in g for g in globbed)]
            if name in ("cd", "pushd", "popd"):
                self.directories.append(_directory(name, argv, literal))
            self.commands.append(
                SimpleCommand(
                    argv, literal, text, tuple(writes), exact_only, self.origin or origin or text, wrapped, touches,
                    mentions, tuple(found.hidden), tuple(dict.fromkeys(globs)),
                )
            )  # fmt: skip
        for k, word in enumerate(words):
            if word.literal and k not in code_words:
                self.code_like(word.value)

    def embedded(
        self, found: Findings, argv: tuple[str, ...], literal: tuple[bool, ...], depth: int, origin: str
    ) -> set[int]:
        """Walk what a command runs from its arguments (`embedded.inspect`): each command line as commands of
        their own, only an exact rule allowing them (a deny rule sees inside); each run of words (`find -exec`) as
        one command. A command line that is not fixed text or does not parse is hidden instead. Returns the
        indexes of the words walked."""
        for problem in found.problems:
            self.problem(problem)
        self.invocations += found.invocations
        walked: set[int] = set()
        for k, code in found.code:
            if not literal[k] or not code.strip():
                found.hide("a command string that is not fixed text")
            elif not analyse(code).understood:
                found.hide(f"a command string the policy cannot follow: {'; '.join(analyse(code).problems)}")
            else:
                walked.add(k)
                self.parse(code, depth + 1, context=shlex.join(argv[:k]) or argv[0], origin=origin)
        for start, end, label, placeholder in found.runs:
            inner = [
                _Word(argv[j], literal[j] and not (placeholder and placeholder in argv[j])) for j in range(start, end)
            ]
            walked.update(range(start, end))
            saved = self.context
            self.context = f"{saved}{label} ⟨"
            try:
                self.add([], inner, [], (), depth=depth, via=label, origin=self.origin or origin)
            finally:
                self.context = saved
        return walked


def _code_arguments(name: str, argv: tuple[str, ...]) -> list[tuple[int, str]]:
    """(word index, command string) of the arguments a builtin runs as commands: `trap '…'`, `mapfile -C '…'`."""
    if name == "trap":
        k = 2 if argv[1:2] == ("--",) else 1
        if k < len(argv) and argv[k] != "-" and not (k == 1 and argv[k].startswith("-")):
            return [(k, argv[k])]
    if name in ("mapfile", "readarray"):
        found = []
        for k, arg in enumerate(argv[1:], start=1):
            if arg == "-C" and k + 1 < len(argv):
                found.append((k + 1, argv[k + 1]))
            elif arg.startswith("-C") and len(arg) > 2 and argv[k - 1] not in ("-d", "-u", "-n", "-O", "-s", "-c"):
                found.append((k, arg[2:]))
        return found
    return []


def _tokens(words: list[str]) -> tuple[str, ...]:
    return tuple(token for word in words for token in _TOKEN.findall(word))


def _directory(name: str, argv: tuple[str, ...], literal: tuple[bool, ...]) -> str | None:
    """Where `cd`/`pushd` go: the first operand, `~` for a bare `cd`, None when it cannot be told."""
    operands = [k for k in range(1, len(argv)) if not (argv[k].startswith("-") and argv[k] != "-")]
    if name == "popd" or (name == "pushd" and not operands):
        return None
    if not operands:
        return "~"
    k = operands[0]
    return argv[k] if literal[k] and argv[k] != "-" else None
