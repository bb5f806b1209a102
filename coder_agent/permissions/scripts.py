"""The little languages whose programs arrive as arguments and can run commands: sed, awk, sqlite3's dot-commands
and SQL, and vim's ex commands.

Each reader returns what the program runs or writes (`options.Findings`): a command it spells out as fixed text
(`sed 'e rm f'`, `awk 'BEGIN{system("rm f")}'`, `sqlite3 db '.shell rm f'`, `vim -c '!rm f'`) is code, parsed again
so deny rules see it; one it builds (`system("r" "m")`, sed's `s///e`, `edit()` in SQL, a script it sources) is
hidden; a file it names to write (`sed 'w out'`, `.output out`, `:w out`) is a write. A program the reader cannot
follow is hidden too: reading these languages is a guard rail, not a proof.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from collections.abc import Sequence

from coder_agent.permissions.options import Findings, Syntax, names_in, scan, words

HARMLESS_OUTPUTS = frozenset({"/dev/stdout", "/dev/stderr", "/dev/null", "-"})

# ---- sed ---------------------------------------------------------------------------------------------------

SED = Syntax(
    short_values="efl",
    short_optional="i",
    long_values=words("expression file line-length"),
    long_optional=words("in-place"),
    long_known=words("quiet silent debug posix regexp-extended separate sandbox unbuffered null-data zero-terminated "
                     "follow-symlinks binary"),
)  # fmt: skip
_SIMPLE = set("=dDgGhHnNpPxzF")


def inspect_sed(argv: Sequence[str], found: Findings) -> None:
    options, operands = scan(argv, SED)
    if any(names_in(option, {"--sandbox"}) for option in options):
        return
    scripts = [(o.value_index, o.value) for o in options if names_in(o, {"-e", "--expression"}) and o.value]
    if not scripts and not any(names_in(o, {"-f", "--file"}) for o in options) and operands:
        scripts = [(operands[0], argv[operands[0]])]
    for index, script in scripts:
        _sed_script(script, index, found)


def _sed_script(script: str, index: int, found: Findings) -> None:
    """GNU sed's commands, one after another: addresses, then a command and its arguments."""
    i, n = 0, len(script)

    def to_line_end(k: int) -> tuple[str, int]:
        end = script.find("\n", k)
        end = n if end == -1 else end
        return script[k:end].strip(), end

    while i < n:
        char = script[i]
        if char in " \t\n;}{!":
            i += 1
            continue
        if char == "#":
            i = to_line_end(i)[1]
            continue
        i = _sed_address(script, i)
        while i < n and script[i] in " \t!":
            i += 1
        if i >= n:
            return
        command = script[i]
        i += 1
        if command in _SIMPLE or command in "{}":
            continue
        if command in "lLqQvbtT:":
            while i < n and script[i] not in ";\n}":
                i += 1
        elif command in "aic":
            i = _sed_text_end(script, i)
        elif command in "rR":
            i = to_line_end(i)[1]
        elif command in "wW":
            target, i = to_line_end(i)
            _sed_write(found, target)
        elif command == "e":
            code, i = to_line_end(i)
            if code:
                found.run(index, code)
            else:
                found.hide("sed runs its pattern space as a command (`e`)")
        elif command in "sy":
            i = _sed_substitute(script, i, index, found, command == "s")
            if i < 0:
                return
        else:
            found.hide("a sed script the policy cannot read")
            return


def _sed_write(found: Findings, target: str) -> None:
    if target not in HARMLESS_OUTPUTS:
        found.writes.append(target)


def _sed_address(script: str, i: int) -> int:
    """The index after an address (`3`, `$`, `/re/I`, `\\%re%`, `first~step`, `a,+N`, `0,/re/`), if any."""
    for _ in range(2):
        if i < len(script) and script[i] in "/\\":
            delimiter = script[i] if script[i] == "/" else script[i + 1 : i + 2]
            i = _delimited_end(script, i + (1 if script[i] == "/" else 2), delimiter)
            while i < len(script) and script[i] in "IM":
                i += 1
        else:
            match = re.compile(r"[0-9$+~]+").match(script, i)
            i = match.end() if match else i
        if i < len(script) and script[i] == ",":
            i += 1
            continue
        break
    return i


def _delimited_end(script: str, i: int, delimiter: str) -> int:
    """The index after the next unescaped `delimiter` (brackets kept whole), from `i`."""
    while i < len(script):
        char = script[i]
        if char == "\\":
            i += 2
            continue
        if char == "[":
            close = script.find("]", i + 2)
            if close != -1 and "\n" not in script[i:close]:
                i = close + 1
                continue
        if char == delimiter:
            return i + 1
        i += 1
    return len(script)


def _sed_substitute(script: str, i: int, index: int, found: Findings, flags: bool) -> int:
    """`s/re/replacement/flags` (or `y/a/b/`): its `e` flag runs the result, `w file` writes; -1 to stop."""
    if i >= len(script):
        found.hide("a sed script the policy cannot read")
        return -1
    delimiter = script[i]
    i = _delimited_end(script, _delimited_end(script, i + 1, delimiter), delimiter)
    while flags and i < len(script) and script[i] not in ";\n}":
        if script[i] == "e":
            found.hide("sed runs the substitution's result as a command (`s///e`)")
        elif script[i] == "w":
            end = script.find("\n", i)
            end = len(script) if end == -1 else end
            _sed_write(found, script[i + 1 : end].strip())
            return end
        elif not (script[i].isdigit() or script[i] in "gpiImM \t"):
            found.hide("a sed script the policy cannot read")
            return -1
        i += 1
    return i


def _sed_text_end(script: str, i: int) -> int:
    """After `a`, `i` or `c`: their text runs to the end of the line, continued by a trailing backslash."""
    while i < len(script):
        if script[i] == "\\" and i + 1 < len(script):
            i += 2
            continue
        if script[i] == "\n":
            return i
        i += 1
    return i


# ---- awk ---------------------------------------------------------------------------------------------------

AWK = Syntax(
    short_values="FvfileEW",
    short_optional="opdD",
    long_values=words("field-separator assign file include load source exec"),
    long_optional=words("pretty-print profile dump-variables debug"),
    long_known=words("sandbox posix traditional lint characters-as-bytes bignum optimize"),
)
_AWK_STRING = r'"((?:[^"\\]|\\.)*)"'
_AWK_SYSTEM = re.compile(r"\bsystem\s*\(")
_AWK_LITERAL_SYSTEM = re.compile(r"\bsystem\s*\(\s*" + _AWK_STRING + r"\s*\)")
_AWK_PIPE = re.compile(r"(?<!\|)\|(?!\|)")
_AWK_LITERAL_PIPES = re.compile(_AWK_STRING + r"\s*\|\s*getline|\|&?\s*" + _AWK_STRING)
_AWK_WRITE = re.compile(r">>?\s*" + _AWK_STRING)


def inspect_awk(argv: Sequence[str], found: Findings) -> None:
    options, operands = scan(argv, AWK)
    if any(names_in(option, {"-S", "--sandbox"}) for option in options):
        return
    if any(names_in(option, {"-l", "--load"}) for option in options):
        found.hide("awk loads an extension library (native code)")
    for option in options:
        if names_in(option, {"-o", "-p", "-d", "--pretty-print", "--profile", "--dump-variables"}) and option.value:
            found.writes.append(option.value)
    programs = [(o.value_index, o.value) for o in options if names_in(o, {"-e", "--source"}) and o.value]
    has_file = any(names_in(o, {"-f", "--file", "-E", "--exec", "-i", "--include"}) for o in options)
    if not programs and not has_file and operands:
        programs = [(operands[0], argv[operands[0]])]
    for index, program in programs:
        _awk_program(program, index, found)


def _awk_program(program: str, index: int, found: Findings) -> None:
    literal_systems = list(_AWK_LITERAL_SYSTEM.finditer(program))
    literal_pipes = list(_AWK_LITERAL_PIPES.finditer(program))
    for match in literal_systems + literal_pipes:
        text = next(group for group in match.groups() if group is not None)
        found.run(index, _awk_unescape(text))
    if len(_AWK_SYSTEM.findall(program)) > len(literal_systems) or len(_AWK_PIPE.findall(program)) > len(literal_pipes):
        found.hide("awk runs commands its program builds (`system()`, pipes)")
    for match in _AWK_WRITE.finditer(program):
        target = _awk_unescape(match.group(1))
        if target not in HARMLESS_OUTPUTS:
            found.writes.append(target)


def _awk_unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), text)


# ---- sqlite3 -----------------------------------------------------------------------------------------------

SQLITE = Syntax(
    single_dash=words(
        "cmd init separator newline nullvalue vfs maxsize mmap heap pagecache lookaside safe unsafe-testing "
        "version help A archive deserialize readonly bail echo header noheader batch interactive append zip "
        "csv html line list box column json markdown quote table tabs ascii memtrace nofollow stats escape "
        "nonce no-rowid-in-view"
    ),
    single_dash_values=words("cmd init separator newline nullvalue vfs maxsize mmap heap pagecache escape nonce"),
    abbreviate=False,
)
_RUNNING_SQL = re.compile(r"\b(edit|load_extension|fts3_tokenizer)\s*\(", re.IGNORECASE)
_WRITING_SQL = re.compile(
    r"\b(?:attach\s+(?:database\s+)?|vacuum\s+(?:\w+\s+)?into\s+|writefile\s*\(\s*)'((?:[^']|'')*)'", re.IGNORECASE
)
_SAFE_DOT = words(
    "tables schema indexes indices headers header mode dump databases show width nullvalue separator stats timer "
    "eqp explain echo bail dbinfo fullschema lint print help version changes limits quit exit parameter dbconfig "
    "imposter prompt scanstats selftest sha3sum testcase testctrl vfsinfo vfslist vfsname expert recover "
    "filectrl connection crnl binary check clone auth"
)


def inspect_sqlite(argv: Sequence[str], found: Findings) -> None:
    options, operands = scan(argv, SQLITE)
    if any(names_in(option, {"-safe"}) for option in options):
        return
    if any(names_in(option, {"-version", "-help"}) for option in options):
        return
    for option in options:
        if names_in(option, {"-cmd"}) and option.value is not None:
            _sqlite_input(option.value, option.value_index, found)
        elif names_in(option, {"-init"}):
            found.hide("sqlite3 reads commands from an init file")
        elif names_in(option, {"-unsafe-testing"}):
            found.hide("sqlite3's unsafe testing mode")
        elif names_in(option, {"-A", "-archive"}):
            found.writes.append("")
    inputs = operands[1:]
    if not inputs and not any(names_in(option, {"-cmd"}) for option in options):
        found.hide("sqlite3 reads its commands from its input, which cannot be checked")
    for k in inputs:
        _sqlite_input(argv[k], k, found)


def _sqlite_input(text: str, index: int, found: Findings) -> None:
    """One argument of SQL, or one dot-command (an argument starting with `.`)."""
    stripped = text.lstrip()
    if not stripped.startswith("."):
        if _RUNNING_SQL.search(stripped):
            found.hide("SQL that runs a program or loads native code (`edit()`, `load_extension()`)")
        found.writes += [match.group(1).replace("''", "'") for match in _WRITING_SQL.finditer(stripped)]
        return
    try:
        parts = shlex.split(stripped[1:])
    except ValueError:
        found.hide("a dot-command the policy cannot read")
        return
    if not parts:
        return
    command, arguments = parts[0].lower(), parts[1:]
    if command in ("shell", "system"):
        # sqlite3 joins the words back for system(3), double-quoting each that holds a space: what the shell reads
        found.run(index, " ".join(f'"{word}"' if " " in word else word for word in arguments))
    elif command in ("once", "output", "excel", "log", "save", "backup", "open", "read", "import", "load", "cd"):
        _sqlite_file_command(command, arguments, index, found)
    elif command not in _SAFE_DOT:
        found.hide(f"the dot-command `.{command}`")


def _sqlite_file_command(command: str, arguments: list[str], index: int, found: Findings) -> None:
    files = [a for a in arguments if not a.startswith("-")]
    piped = next((a for a in arguments if a.startswith("|")), None)
    if piped is not None:
        found.run(index, piped[1:])
    elif command in ("read", "load", "cd") or (
        command in ("once", "excel") and any(a in ("-x", "-e") for a in arguments)
    ):
        found.hide(f"the dot-command `.{command}`")
    elif command == "import":
        return
    elif files and command in ("once", "output", "log", "save", "backup"):
        if files[-1] not in ("stdout", "off"):
            found.writes.append(files[-1])
    elif command == "open" and files:
        found.writes.append(files[-1])


# ---- vim's ex commands -------------------------------------------------------------------------------------

VIMS = frozenset({"vim", "vi", "nvim", "view", "vimdiff", "gvim", "gview", "ex", "evim", "nvi", "vimx", "rvim"})
VIM = Syntax(
    short_values="cSsuUiwWTtqrV",
    long_values=words("cmd startuptime remote-send remote-expr servername listen"),
    long_known=words("clean noplugin not-a-term ttyfail nofork headless embed remote remote-silent remote-wait "
                     "remote-tab version help"),
)  # fmt: skip
_EX_SHELL = re.compile(
    r"(?:!|r(?:e(?:ad?)?)?\s*!|w(?:r(?:i(?:te?)?)?)?\s+!|ter(?:m(?:i(?:n(?:al?)?)?)?)?\s)\s*(.*)", re.S
)
_EX_WRITE = re.compile(
    r"(?:w(?:r(?:i(?:te?)?)?)?|wq|x(?:it)?|exi(?:t)?|sav(?:eas?)?|up(?:d(?:ate?)?)?)!?\s*(?:>>)?\s*(\S.*)"
)
_EX_SAFE = re.compile(r"\d+|\$|[/?].*|q!?|qa(?:ll)?!?|wq!?|x!?|w!?|wa!?|xa!?|set?\s+(?:no)?(?:nu|number|list|paste)")


def inspect_vim(argv: Sequence[str], found: Findings) -> None:
    ex_mode = any(re.fullmatch(r"-[A-Za-z]*[eE][A-Za-z]*", word) for word in argv[1:])
    syntax = dataclasses.replace(VIM, short_values=VIM.short_values.replace("s", "")) if ex_mode else VIM
    options, operands = scan(argv, syntax)  # in ex mode (`-es`), `-s` is silent, not a script to read
    commands = [(o.value_index, o.value) for o in options if names_in(o, {"-c", "--cmd"}) and o.value is not None]
    commands += [(k, argv[k][1:]) for k in operands if argv[k].startswith("+")]
    for index, command in commands:
        _ex_command(command, index, found)
    for option in options:
        if names_in(option, {"-S", "-s", "--remote-send", "--remote-expr"}):
            found.hide("vim runs commands from a script or another vim")
        elif names_in(option, {"-u", "-U"}) and option.value not in ("NONE", "NORC", "DEFAULTS"):
            found.hide("vim reads commands from another vimrc")
        elif names_in(option, {"-w", "-W", "--startuptime"}) and option.value:
            found.writes.append(option.value)


def _ex_command(text: str, index: int, found: Findings) -> None:
    command = text.strip().lstrip(":").strip()
    if not command:
        return
    if shell := _EX_SHELL.fullmatch(command):
        if shell.group(1).strip():
            found.run(index, shell.group(1))
        else:
            found.hide("vim opens a shell or a terminal")
        return
    if write := _EX_WRITE.fullmatch(command):
        found.writes.append(write.group(1).strip())
        found.flagged = True
        return
    if not _EX_SAFE.fullmatch(command):
        found.hide(f"vim runs the ex command `{command[:40]}`")
