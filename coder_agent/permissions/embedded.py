"""What a command runs through its own options and arguments: the command strings other programs run.

`inspect(argv)` gives the `Findings` for one simple command: its exec flags make it exact-only (an allow rule for
`git grep` does not cover `git grep -O<cmd>`), the command lines it runs are parsed again by `shell` (so a deny
rule for `rm` catches `rm` inside `git -c alias.x='!rm f'`, `ssh -o ProxyCommand='rm f'`, `tar
--checkpoint-action=exec='rm f'`, `zip -TT 'rm f'`, `sqlite3 db '.shell rm f'`, `vim -c '!rm f'`, `find -exec`),
and what it runs that its words do not show is hidden (it asks when deny rules exist). Programs known here: git
(`gitargs`), sed, awk, sqlite3 and vim (`scripts`), make, tar, zip, ssh/scp/sftp, rsync, less, man, go, cargo,
npm/pnpm/yarn, pip, pytest (and `python -m pytest`: the files it writes), wget, curl, JavaScript tools' config
files, find/fd; and for every program the long flags in `EXEC_FLAGS`. Every option is read in each spelling its
program accepts (`options.scan`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from coder_agent.permissions.gitargs import inspect_git
from coder_agent.permissions.options import Findings, Syntax, names_in, scan, words
from coder_agent.permissions.programs import EXEC_FLAGS, base_name, is_assignment
from coder_agent.permissions.scripts import VIMS, inspect_awk, inspect_sed, inspect_sqlite, inspect_vim
from coder_agent.permissions.writes import RSYNC, TAR, WRITERS, tar_old_style

MAKES = frozenset({"make", "gmake", "bmake", "remake"})
MAKE = Syntax(
    short_values="CfIlWoE", short_optional="jO",
    long_values=words("directory file makefile include-dir old-file assume-old what-if new-file assume-new eval "
                      "jobserver-style"),
    long_optional=words("jobs load-average output-sync debug shuffle"),
    long_known=words("always-make environment-overrides ignore-errors keep-going just-print dry-run recon question "
                     "silent quiet touch trace version print-directory no-print-directory warn-undefined-variables "
                     "check-symlink-times no-builtin-rules no-builtin-variables no-keep-going stop print-data-base"),
)  # fmt: skip
TAR_CODE = words("--to-command --use-compress-program --rsh-command --rmt-command --info-script --new-volume-script")
SSH = Syntax(short_values="BbcDEeFIiJLlmOoPpQRSWw", abbreviate=False)
SSH_COMMAND_KEYS = frozenset({"proxycommand", "localcommand", "knownhostscommand"})
SSH_LIBRARY_KEYS = frozenset({"pkcs11provider", "securitykeyprovider"})
LESS = Syntax(
    short_values="bhjkoOpPtTxyz#D",
    long_values=words("lesskey-file lesskey-src lesskey-content log-file LOG-FILE tag prompt"),
)
MAN = Syntax(
    short_values="CPpMRLmSsTrEe", short_optional="HX",
    long_values=words("config-file pager preprocessor manpath encoding locale systems sections device prompt "
                      "extension"),
    long_optional=words("html gxditview"),
)  # fmt: skip
GO = Syntax(
    single_dash=words("exec toolexec vettool o C modfile overlay pgo ldflags gcflags asmflags gccgoflags tags"),
    single_dash_values=words("exec toolexec vettool o C modfile overlay pgo ldflags gcflags asmflags gccgoflags tags"),
    abbreviate=False,
)
PYTEST = Syntax(
    short_values="cpkmo",
    long_values=words("override-ini config-file rootdir confcutdir"),
    long_optional=words("debug"),
    abbreviate=False,
)
NODE_CONFIG = words("prefix userconfig globalconfig cwd use-yarnrc dir")
NODE_CODE = words("git shell editor browser viewer call script-shell onload-script")
NODE_NAMES = NODE_CONFIG | NODE_CODE | words("node-options node-gyp init-module")
NODE_EXACT = words("global")
"""npm options that are a prefix of one of `NODE_NAMES` but a name of their own (`--global`, not `--globalconfig`)."""
ENV_COMMANDS = frozenset(
    {
        "GIT_SSH_COMMAND", "GIT_SSH", "GIT_PAGER", "PAGER", "MANPAGER", "SYSTEMD_PAGER", "EDITOR", "VISUAL",
        "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "LESSOPEN", "LESSCLOSE", "GIT_EXTERNAL_DIFF", "GIT_PROXY_COMMAND",
        "GIT_ASKPASS", "SSH_ASKPASS", "SUDO_ASKPASS", "BROWSER", "RSYNC_RSH", "CVS_RSH", "SHELL", "PROMPT_COMMAND",
    }
)  # fmt: skip
"""Environment variables whose value is a command some program runs."""
ENV_HIDDEN = frozenset(
    {
        "LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH", "DYLD_INSERT_LIBRARIES", "BASH_ENV", "ENV", "MAKEFLAGS",
        "MFLAGS", "GNUMAKEFLAGS", "TAR_OPTIONS", "PERL5OPT", "NODE_OPTIONS", "RUBYOPT", "PYTHONSTARTUP", "LESSKEYIN",
        "GIT_EXEC_PATH", "GIT_TEMPLATE_DIR", "GIT_DIR", "GIT_CONFIG", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM",
        "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "PIP_CONFIG_FILE", "NPM_CONFIG_USERCONFIG", "CARGO_HOME",
        "RUSTC_WRAPPER", "CC", "CXX", "LESS", "MANOPT", "WGETRC", "CURL_HOME", "SSH_CONFIG",
    }
)  # fmt: skip
"""Environment variables that make programs run or load what they name (a library, a file of commands, options)."""
JS_CONFIG_TOOLS = frozenset({"eslint", "prettier", "jest", "vitest", "webpack", "rollup", "vite", "mocha"})


def inspect(argv: Sequence[str]) -> Findings:
    """What `argv` runs and writes through its options and arguments (see the module docstring)."""
    found = Findings()
    if not argv:
        return found
    name = base_name(argv[0])
    if any(word.partition("=")[0] in EXEC_FLAGS for word in argv[1:]):
        found.flagged = True
    reader = READERS.get(name)
    if reader is None and re.fullmatch(r"python[0-9.]*", name):
        _python_module(argv, found)
    if reader is None and name in MAKES:
        reader = _make
    elif reader is None and name in VIMS:
        reader = inspect_vim
    elif reader is None and re.fullmatch(r"[gmn]?awk", name):
        reader = inspect_awk
    if reader is not None:
        reader(argv, found)
    return found


def environment(words: Sequence[str], found: Findings, offset: int = 0) -> None:
    """`NAME=value` words (before a command, given to `env` or `export`): a command-valued variable's value is a
    command line (`GIT_SSH_COMMAND='…'`, `LESSOPEN='|…'`); a variable that makes programs load or read what it
    names (`LD_PRELOAD`, `BASH_ENV`, `MAKEFLAGS`, `GIT_CONFIG_*`) is hidden."""
    for k, word in enumerate(words):
        if not is_assignment(word):
            continue
        name, _, value = word.partition("=")
        name = name.rstrip("+")
        if name in ENV_COMMANDS and value.strip():
            found.run(k + offset, value.lstrip("|") if name.startswith("LESS") else value)
        elif name in ENV_HIDDEN or name.startswith("GIT_CONFIG_"):
            found.hide(f"`{name}` makes programs run or load what it names")


def _declare(argv: Sequence[str], found: Findings) -> None:
    environment(argv[1:], found, 1)


def _git(argv: Sequence[str], found: Findings) -> None:
    inspect_git(argv, found)


def _make(argv: Sequence[str], found: Findings) -> None:
    """make's arguments choose its recipes: `NAME=value` (the value may be a shell fragment: parsed), another
    makefile, folder or included file, or a makefile text to evaluate."""
    options, operands = scan(argv, MAKE)
    for option in options:
        if names_in(option, {"-E", "--eval"}):
            found.hide("make evaluates makefile text given on the command line (`--eval`)")
        elif names_in(option, {"-f", "--file", "--makefile", "-C", "--directory", "-I", "--include-dir"}):
            found.hide("make reads recipes from another makefile or folder")
    for k in operands:
        if is_assignment(argv[k]):
            found.run(k, argv[k].partition("=")[2])


def _tar(argv: Sequence[str], found: Findings) -> None:
    if len(argv) > 1 and not argv[1].startswith("-"):
        argv = tar_old_style(argv)
    options, _ = scan(argv, TAR)
    for option in options:
        if option.value is None:
            continue
        if names_in(option, TAR_CODE | {"-I", "-F"}):
            found.run(option.value_index, option.value)
        elif names_in(option, {"--checkpoint-action"}):
            action, _, command = option.value.partition("=")
            if action == "exec":
                found.run(option.value_index, command)
        elif names_in(option, {"--index-file"}):
            found.writes.append(option.value)


def _zip(argv: Sequence[str], found: Findings) -> None:
    """`zip -TT cmd` / `--unzip-command cmd` runs `cmd` to test the archive."""
    for k, word in enumerate(argv[1:], start=1):
        head, eq, value = word.partition("=")
        long = word.startswith("--") and len(head) > 3 and "--unzip-command".startswith(head)
        if long or (not word.startswith("--") and word.startswith("-") and "TT" in word):
            attached = value if eq else "" if long else word.partition("TT")[2].removeprefix("=")
            if attached:
                found.run(k, attached)
            elif k + 1 < len(argv):
                found.run(k + 1, argv[k + 1])
            else:
                found.hide("zip's unzip command")


def _ssh(argv: Sequence[str], found: Findings) -> None:
    """ssh, scp and sftp: `-o ProxyCommand=…`/`LocalCommand`/`KnownHostsCommand` are commands it runs here; a
    config file (`-F`) or a provider library is what it runs unseen; scp/sftp `-S program`, sftp `-D`, sftp's
    batch file (`!` runs a local command) too."""
    name = base_name(argv[0])
    options, _ = scan(argv, SSH)
    for option in options:
        value = option.value
        if names_in(option, {"-o"}) and value is not None:
            key, setting = _ssh_option(value)
            if key in SSH_COMMAND_KEYS and setting.strip():
                found.run(option.value_index, setting.strip())
            elif key in SSH_LIBRARY_KEYS or key == "match":
                found.hide(f"ssh's `{key}`")
        elif names_in(option, {"-F"}):
            found.hide("ssh reads a config file, which can hold commands (`ProxyCommand`, `Match exec`)")
        elif names_in(option, {"-I"}):
            found.hide("ssh loads a PKCS#11 library (native code)")
        elif value and (
            (name in ("scp", "sftp") and names_in(option, {"-S"})) or (name == "sftp" and names_in(option, {"-D"}))
        ):
            found.run(option.value_index, value)
        elif names_in(option, {"-b"}) and name == "sftp":
            found.hide("sftp runs a batch file, whose `!` lines are local commands")
        elif names_in(option, {"-E"}) and name == "ssh" and value:
            found.writes.append(value)


def _ssh_option(text: str) -> tuple[str, str]:
    """`Key=Value` or `Key Value`: the key in lower case, and the value."""
    match = re.match(r"\s*([A-Za-z0-9]+)\s*(?:=\s*|\s+)(.*)", text, re.S)
    return (match.group(1).lower(), match.group(2)) if match else (text.strip().lower(), "")


def _rsync(argv: Sequence[str], found: Findings) -> None:
    options, _ = scan(argv, RSYNC)
    for option in options:
        if names_in(option, {"-e", "--rsh"}) and option.value is not None:
            found.run(option.value_index, option.value)
        elif names_in(option, {"--write-batch", "--only-write-batch"}) and option.value:
            found.writes.append(option.value)


def _less(argv: Sequence[str], found: Findings) -> None:
    """less: `+cmd` runs less commands at start (`!` and `|` run shell commands); a lesskey file defines keys;
    `-o`/`-O` write a log file."""
    options, operands = scan(argv, LESS)
    for k in operands:
        if argv[k].startswith("+") and (shell := re.search(r"[!|](.*)", argv[k], re.S)):
            if shell.group(1).strip():
                found.run(k, shell.group(1))
            else:
                found.hide("less runs a shell command")
    for option in options:
        if names_in(option, {"-k", "--lesskey-file", "--lesskey-src", "--lesskey-content"}):
            found.hide("less reads key bindings that can run commands")
        elif names_in(option, {"-o", "-O", "--log-file", "--LOG-FILE"}) and option.value:
            found.writes.append(option.value)


def _man(argv: Sequence[str], found: Findings) -> None:
    options, _ = scan(argv, MAN)
    for option in options:
        if names_in(option, {"-P", "--pager", "-H", "--html"}) and option.value:
            found.run(option.value_index, option.value)
        elif names_in(option, {"-C", "--config-file"}):
            found.hide("man reads a config file, which names the programs it runs")


def _go(argv: Sequence[str], found: Findings) -> None:
    """`go test -exec cmd`, `-toolexec cmd`, `go vet -vettool=prog`, and linker flags that name a program."""
    if argv[1:3] == ["env", "-w"] or argv[1:2] == ["generate"]:
        found.flagged = True
    options, _ = scan(argv, GO)
    for option in options:
        if names_in(option, {"-exec", "-toolexec", "-vettool"}) and option.value:
            found.run(option.value_index, option.value)
        elif names_in(option, {"-ldflags", "-gccgoflags"}) and option.value and "extld" in option.value:
            found.hide("the Go linker runs an external linker named in its flags")
        elif names_in(option, {"-modfile", "-overlay", "-C"}):
            found.flagged = True


def _cargo(argv: Sequence[str], found: Findings) -> None:
    for word in argv[1:]:
        if word.partition("=")[0] in ("--config", "--manifest-path", "-C") or word.startswith("-Z"):
            found.hide("cargo reads configuration or a project from elsewhere (runners, wrappers, build scripts)")


def _node(argv: Sequence[str], found: Findings) -> None:
    """npm, pnpm, yarn: options that run another folder's scripts, read another config, or name a program. npm's
    option parser (nopt) takes any number of leading dashes (`-script-shell`, `---script-shell`) and a long
    name shortened to a unique prefix (`--scr` is `--script-shell`): a word that could be one of these names in
    any such spelling counts as each of them."""
    for k, word in enumerate(argv[1:], start=1):
        head, eq, value = word.partition("=")
        name = head.lstrip("-")
        if word == "-C" or not word.startswith("-") or word == "--":
            if word == "-C":
                found.hide(f"{base_name(argv[0])} runs scripts or reads configuration from elsewhere")
            continue
        if len(name) < 2 and not word.startswith("--"):
            continue  # a one-letter shorthand (`-s`, `-g`, `-w`)
        names = {name} if name in NODE_NAMES else {n for n in NODE_NAMES if n.startswith(name) and name}
        if not names or name in NODE_EXACT:
            continue
        if names & NODE_CODE:
            target = value if eq else argv[k + 1] if k + 1 < len(argv) else ""
            if target:
                found.run(k if eq else k + 1, target)
            else:
                found.hide(f"{base_name(argv[0])} runs a program an option names")
        if names - NODE_CODE:
            found.hide(f"{base_name(argv[0])} runs scripts or reads configuration from elsewhere")


PYTEST_INI_WRITES = frozenset({"cache_dir", "log_file", "junit_logging_file"})


def _pytest(argv: Sequence[str], found: Findings) -> None:
    """pytest: `--debug=FILE` writes a debug log; `-o`/`--override-ini` of `cache_dir` or `log_file` writes there."""
    options, _ = scan(argv, PYTEST)
    for option in options:
        if names_in(option, {"--debug"}) and option.value:
            found.writes.append(option.value)
        elif names_in(option, {"-o", "--override-ini"}) and option.value is not None:
            key, _, value = option.value.partition("=")
            if key.strip() in PYTEST_INI_WRITES:
                found.writes.append(value)


def _python_module(argv: Sequence[str], found: Findings) -> None:
    """`python -m pytest …` (`-mpytest`, `-Bm pytest`): pytest's options, read as `pytest` reads them."""
    for k, word in enumerate(argv[1:], start=1):
        if not word.startswith("-"):
            return  # a script: python's options are over
        if (match := re.fullmatch(r"-[A-Za-z]*m(.*)", word)) is not None:
            if match.group(1) == "pytest":
                _pytest(argv[k:], found)
            elif not match.group(1) and tuple(argv[k + 1 : k + 2]) == ("pytest",):
                _pytest(argv[k + 1 :], found)
            return


def _pip(argv: Sequence[str], found: Findings) -> None:
    """pip install from a path outside the workspace runs that project's build code (inside it, the project's
    own code, like `make test`)."""
    if not set(argv[1:]) & {"install", "wheel", "download"}:
        return
    for word in argv[1:]:
        value = word.partition("=")[2] if word.startswith("--") and "=" in word else word
        if value.startswith(("/", "~", "file:", "git+file:")) or re.search(r"(^|/)\.\.(/|$)", value):
            found.hide("pip runs build code from outside the workspace")
            return


def _wget(argv: Sequence[str], found: Findings) -> None:
    options, _ = scan(argv, WRITERS["wget"][0])
    for option in options:
        if names_in(option, {"--use-askpass"}) and option.value:
            found.run(option.value_index, option.value)
        elif names_in(option, {"-e", "--execute", "--config"}):
            found.hide("wget runs wgetrc commands (which choose files and programs)")


def _curl(argv: Sequence[str], found: Findings) -> None:
    if any(word.partition("=")[0] in ("-K", "--config") or re.fullmatch(r"-[A-Za-z]*K.*", word) for word in argv):
        found.hide("curl reads a config file (which can choose output files)")


def _js_tool(argv: Sequence[str], found: Findings) -> None:
    """JavaScript tools' config files are code they run: one named on the command line may be from elsewhere."""
    if any(w.partition("=")[0] in ("-c", "--config", "--plugin", "--rulesdir", "--configLoader") for w in argv[1:]):
        found.hide(f"{base_name(argv[0])} runs a config file or plugin named on the command line")


def _find(argv: Sequence[str], found: Findings) -> None:
    """`find -exec/-execdir/-ok/-okdir … ;` (fd `-x`/`-X …`) runs the words between; `-delete` is an `rm`."""
    fd = base_name(argv[0]) != "find"
    i = 1
    while i < len(argv):
        if argv[i] in (("-x", "--exec", "-X", "--exec-batch") if fd else ("-exec", "-execdir", "-ok", "-okdir")):
            closers = () if fd else (";", "+")
            end = next((j for j in range(i + 1, len(argv)) if argv[j] in closers), len(argv) if fd else None)
            if end is None:
                found.problems.append("`find -exec` without its closing `;` or `+`")
                return
            if end > i + 1:
                found.runs.append((i + 1, end, f"{base_name(argv[0])} {argv[i]}", "{"))
            found.flagged = True
            i = end + 1
            continue
        if argv[i] == "-delete":
            found.invocations.append(("rm", "-delete"))
        i += 1


READERS: dict[str, Callable[[Sequence[str], Findings], None]] = {
    "git": _git,
    "tar": _tar, "gtar": _tar, "bsdtar": _tar,
    "zip": _zip,
    "ssh": _ssh, "scp": _ssh, "sftp": _ssh, "slogin": _ssh,
    "rsync": _rsync,
    "less": _less,
    "man": _man,
    "go": _go,
    "cargo": _cargo,
    "npm": _node, "pnpm": _node, "yarn": _node,
    "pip": _pip, "pip3": _pip, "uv": lambda argv, found: _pip(argv[1:], found) if argv[1:2] == ["pip"] else None,
    "wget": _wget,
    "curl": _curl,
    "sed": inspect_sed, "gsed": inspect_sed,
    "sqlite3": inspect_sqlite, "sqlite": inspect_sqlite,
    "find": _find, "fd": _find, "fdfind": _find,
    "pytest": _pytest, "py.test": _pytest,
    **dict.fromkeys(("export", "declare", "typeset", "local", "readonly"), _declare),
    **dict.fromkeys(JS_CONFIG_TOOLS, _js_tool),
}  # fmt: skip
KNOWN = frozenset(READERS) | MAKES | VIMS | {"awk", "gawk", "mawk", "nawk"}
"""Programs whose arguments can make them run something: an argument that is not fixed text could be one that does."""
