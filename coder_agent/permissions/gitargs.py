"""What a git command line runs besides git: configuration given on the command line, and subcommands' options
that name a program.

`inspect_git(argv)` reads git's own options (`-c key=value`, `--config-env`, `--exec-path`), then its subcommand's:
`grep -O[cmd]`, `rebase -x`, `difftool -x`, `clone -u`/`--upload-pack`/`-c`/`--template`, `fetch`/`pull`/`ls-remote`
/`archive --upload-pack`/`--exec`, `push --receive-pack`, `log`/`diff`/`show … --ext-diff`/`--textconv`, `submodule
foreach`, `bisect run`, `config` setting a key whose value git runs (`alias.x '!…'`, `core.pager`, `core.sshCommand`,
`filter.*.clean`, …), `filter-branch` filters, `send-email`'s commands, and `ext::` addresses. In every spelling git
accepts: attached short values (`-O<cmd>`, `-x<cmd>`), `--name=value`, and long names shortened to a prefix. A
command line git would run is reported as code (parsed again, so deny rules see inside it); a program git would
take from somewhere the words do not show (the configured pager, an external diff, a template's hooks) as hidden.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from coder_agent.permissions.options import Findings, Opt, Syntax, names_in, scan, words

GLOBAL_VALUES = words("-C -c --git-dir --work-tree --namespace --super-prefix --config-env --attr-source --list-cmds")
COMMAND_KEYS = re.compile(
    r"core\.(pager|editor|sshcommand|fsmonitor|askpass|gitproxy|alternaterefscommand)|pager\..+|sequence\.editor"
    r"|credential(\..+)?\.helper|diff\.external|diff\..+\.(command|textconv)|filter\..+\.(clean|smudge|process)"
    r"|merge\..+\.driver|gpg(\..+)?\.program|sendemail\.(sendmailcmd|smtpserver|tocmd|cccmd|headercmd)"
    r"|web\.browser|(browser|man|difftool|mergetool)\..+\.(cmd|path)|uploadpack\.packobjectshook"
    r"|remote\..+\.(uploadpack|receivepack)|instaweb\.(httpd|browser)|trailer\..+\.(command|cmd)"
    r"|interactive\.difffilter|submodule\..+\.update|imap\.tunnel",
    re.IGNORECASE,
)
"""Configuration keys whose value is a command git runs."""
INDIRECT_KEYS = re.compile(
    r"include\.path|includeif\..+\.path|init\.templatedir|protocol\..+\.allow|(diff|merge)\.tool"
    r"|core\.hookspath",
    re.IGNORECASE,
)
"""Keys that make git run what something else says (another config file, a template's hooks, `ext::` addresses)."""
CONFIG_FILE_OPTIONS = words("-f --file --blob")
SUBCOMMAND_CODE: dict[str, tuple[str, frozenset[str]]] = {
    "rebase": ("x", words("exec")),
    "difftool": ("x", words("extcmd")),
    "clone": ("u", words("upload-pack")),
    "fetch": ("", words("upload-pack")),
    "pull": ("", words("upload-pack")),
    "ls-remote": ("", words("upload-pack exec")),
    "archive": ("", words("exec")),
    "push": ("", words("receive-pack exec")),
    "send-email": ("", words("sendmail-cmd smtp-server to-cmd cc-cmd header-cmd")),
    "filter-branch": (
        "",
        words("setup env-filter tree-filter index-filter parent-filter msg-filter commit-filter tag-name-filter"),
    ),
    "instaweb": ("db", words("httpd browser")),
}
"""Per subcommand: short letters and long options whose value is a command line git runs."""
SUBCOMMAND_VALUES: dict[str, tuple[str, frozenset[str]]] = {
    "grep": ("efABCm", words("max-count context after-context before-context threads")),
    "rebase": ("sXx", words("onto strategy strategy-option exec empty whitespace")),
    "difftool": ("tx", words("tool extcmd")),
    "clone": ("bcjou", words("branch config jobs origin upload-pack template reference depth separate-git-dir filter")),
    "log": ("n", words("max-count skip since until author committer grep format pretty output")),
    "diff": ("", words("output")),
    "show": ("", words("format pretty output")),
    "submodule": ("", words("reference depth jobs")),
    "config": ("f", words("file blob type default comment value")),
}
DIFF_KNOWN = words("text no-ext-diff no-textconv exit-code ext-diff textconv")
"""Diff options that share a prefix with the ones that run programs (`--text` is not `--textconv`)."""
HIDDEN_OPTIONS = {
    "ext-diff": "an external diff program from the configuration",
    "textconv": "text conversion programs from the configuration",
    "template": "the hooks of a template folder",
    "open-files-in-pager": "the pager the configuration names",
}


def inspect_git(argv: Sequence[str], found: Findings | None = None) -> Findings:
    """What `git …` runs besides git (see the module docstring)."""
    found = found if found is not None else Findings()
    for index, word in enumerate(argv):
        if word.startswith("ext::"):
            found.run(index, _ext_command(word[5:]))
    i = 1
    while i < len(argv):
        word = argv[i]
        head, eq, value = word.partition("=")
        if not word.startswith("-"):
            break
        if word in ("-c", "--config-env") or (word.startswith("-c") and not word.startswith("--")):
            setting = argv[i + 1] if word in ("-c", "--config-env") and i + 1 < len(argv) else word[2:]
            _config(found, i + (1 if word in ("-c", "--config-env") else 0), setting, env=word == "--config-env")
            i += 2 if word in ("-c", "--config-env") else 1
            continue
        if head == "--config-env":
            _config(found, i, value, env=True)
        elif head == "--exec-path" and eq:
            found.hide("git's own programs from another folder (`--exec-path`)")
        i += 2 if word in GLOBAL_VALUES else 1
    if i < len(argv):
        _subcommand(argv, i, found)
    return found


def _subcommand(argv: Sequence[str], at: int, found: Findings) -> None:
    name = argv[at]
    rest = list(argv[at:])
    short_code, long_code = SUBCOMMAND_CODE.get(name, ("", frozenset()))
    short_values, long_values = SUBCOMMAND_VALUES.get(name, ("", frozenset()))
    syntax = Syntax(
        short_values=short_values + short_code,
        short_optional="O" if name == "grep" else "",
        long_values=long_values | long_code,
        long_optional=words("open-files-in-pager") if name == "grep" else frozenset(),
        long_known=DIFF_KNOWN | frozenset(HIDDEN_OPTIONS),
    )
    options, operands = scan(rest, syntax)
    code_names = {f"-{c}" for c in short_code} | {f"--{n}" for n in long_code}
    for option in options:
        where = at + (option.value_index if option.value_index >= 0 else option.index)
        if names_in(option, code_names) and option.value is not None:
            found.run(where, _strip_bang(option.value))
        elif name == "grep" and names_in(option, {"-O", "--open-files-in-pager"}):
            if option.value:
                found.run(where, option.value)
            else:
                found.hide(f"git grep opens files in {HIDDEN_OPTIONS['open-files-in-pager']}")
        elif name == "clone" and names_in(option, {"-c", "--config"}) and option.value is not None:
            _config(found, where, option.value)
        elif hidden := next((why for opt, why in HIDDEN_OPTIONS.items() if names_in(option, {f"--{opt}"})), None):
            found.hide(f"git runs {hidden}")
    operand_words = [rest[k] for k in operands]
    if name == "submodule" and operand_words[:1] == ["foreach"]:
        first = at + operands[0] + 1
        while first < len(argv) and argv[first] in ("--recursive", "-q", "--quiet"):
            first += 1
        if first < len(argv):
            found.run(first, " ".join(argv[first:]))
    elif name == "bisect" and operand_words[:1] == ["run"] and at + operands[0] + 1 < len(argv):
        found.runs.append((at + operands[0] + 1, len(argv), "git bisect run", ""))
        found.flagged = True
    elif name == "config":
        _config_command(rest, at, options, operands, found)


def _config_command(rest: list[str], at: int, options: list[Opt], operands: list[int], found: Findings) -> None:
    """`git config [set] KEY VALUE`: a key whose value git runs is a command kept for later."""
    if any(names_in(option, {"-e", "--edit"}) for option in options):
        found.hide("git config opens the configured editor")
    positional = operands[1:] if operands and rest[operands[0]] == "set" else operands
    if len(positional) >= 2:
        key, value = rest[positional[0]], rest[positional[1]]
        _config(found, at + positional[1], f"{key}={value}")


def _config(found: Findings, index: int, setting: str, *, env: bool = False) -> None:
    """A `key=value` setting (`-c`, `clone -c`, `git config`): a command git will run is code; an alias is
    a git command line or a shell one."""
    key, _, value = setting.partition("=")
    if env:
        if COMMAND_KEYS.fullmatch(key) or INDIRECT_KEYS.fullmatch(key):
            found.hide(f"the value of the environment variable `{value}` as `{key}`")
        return
    if key.lower().startswith("alias."):
        found.flagged = True
        if value.startswith("!"):
            found.run(index, value[1:])
        else:
            try:
                inner = shlex.split(value)
            except ValueError:
                found.hide(f"the alias `{key}`, which cannot be read")
                return
            inner_found = inspect_git(["git", *inner])
            found.hidden += inner_found.hidden
            found.code += [(index, code) for _, code in inner_found.code]
            found.flagged = True
        return
    if COMMAND_KEYS.fullmatch(key):
        found.run(index, _strip_bang(value))
    elif INDIRECT_KEYS.fullmatch(key):
        found.hide(f"what `{key}` names")


def _strip_bang(value: str) -> str:
    """A `!command` (credential helpers, aliases, submodule updates) is a shell command without its `!`."""
    return value[1:] if value.startswith("!") else value


def _ext_command(spec: str) -> str:
    """An `ext::` address: words split at unescaped spaces (`% ` is a space, `%%` a percent sign), as a command."""
    out: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(spec):
        char = spec[i]
        if char == "%" and i + 1 < len(spec):
            current.append(" " if spec[i + 1] == " " else spec[i + 1] if spec[i + 1] == "%" else spec[i : i + 2])
            i += 2
            continue
        if char == " ":
            out.append("".join(current))
            current = []
        else:
            current.append(char)
        i += 1
    out.append("".join(current))
    return shlex.join(word for word in out if word)
