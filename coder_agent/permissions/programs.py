"""What the policy knows about programs: wrappers it sees through, shells and interpreters, flags that run others.

`unwrap(words)` peels wrappers off one simple command (`sudo nice -n 5 rm x` → `rm x`), saying for each layer
whether an allow rule for the inner command may still apply (`nice` yes, `sudo` no), which words start a shell
command string to parse again (`bash -c '…'`, `watch '…'`, `eval …`), and what it could not follow. What a
program runs through its own options and arguments is in `embedded`; what it writes, in `writes`.
`remembered_as_prefix` says which programs an "always" may remember as a word prefix: never a shell, an
interpreter, a wrapper or a program whose every use can do anything (`rm`, `curl`, `ssh`, …); those are only
ever remembered as the exact command.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from coder_agent.permissions.words import reads_input

SYSTEM_DIRS = frozenset({"/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin", "/usr/local/sbin"})
SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "fish", "yash", "posh", "su"})
INTERPRETER = re.compile(
    r"(python|pypy|ipython)[0-9.]*|node(js)?|deno|bun|ruby|irb|perl[0-9.]*|php[0-9.]*|lua(jit)?[0-9.]*|tclsh|wish|"
    r"R|Rscript|julia|osascript|[gmn]?awk|sed|gsed|expect|groovy|scala|kotlinc?|java|jshell|pwsh|powershell|erl|"
    r"elixir|iex|ghci|runghc|swift|guile|racket|sbcl|clisp|ocaml|source|\.|eval|exec|trap"
)
BROAD_PROGRAMS = frozenset(
    {
        "rm", "rmdir", "mv", "cp", "dd", "chmod", "chown", "chgrp", "shred", "truncate", "ln", "rsync", "install",
        "kill", "pkill", "killall", "curl", "wget", "ssh", "scp", "sftp", "nc", "ncat", "netcat", "socat", "telnet",
        "ftp", "find", "git-config", "crontab", "at", "systemctl", "launchctl", "npx", "uvx", "bunx", "pnpx",
        "alias", "export", "declare", "typeset", "local", "readonly", "set", "unset", "shopt", "cd", "pushd",
        "hash", "enable", "script", "fd", "fdfind", "parallel",
    }
)  # fmt: skip
"""Programs (besides shells, interpreters and wrappers) whose "always" is only ever the exact command."""
BROAD_SUBCOMMANDS = frozenset(
    {
        ("git", "config"), ("docker", "run"), ("docker", "exec"), ("podman", "run"), ("podman", "exec"),
        ("kubectl", "exec"), ("npm", "exec"), ("pnpm", "exec"), ("pnpm", "dlx"), ("yarn", "dlx"), ("go", "run"),
        ("git", "submodule"), ("npm", "config"), ("pip", "config"),
    }
)  # fmt: skip
MULTI_WORD_COMMANDS = frozenset(
    {"git", "npm", "pnpm", "yarn", "bun", "cargo", "go", "uv", "pip", "pip3", "poetry", "docker", "podman",
     "kubectl", "make", "dotnet", "gh", "brew", "apt", "apt-get", "conda", "rustup", "terraform", "helm"}
)  # fmt: skip
"""Tools whose first word after the program is a subcommand: `git status` is remembered, not `git`."""

EXEC_FLAGS = frozenset(
    {
        "--pre", "--to-command", "--checkpoint-action", "--use-compress-program", "--rsh", "--upload-pack",
        "--receive-pack", "--exec", "--exec-batch", "--config-env", "--editor", "--pager", "--command", "--eval",
        "--init-file", "--rcfile", "--hook", "--ext-diff", "--textconv", "--filter", "--open-files-in-pager",
        "--script-shell", "--node-options", "--exec-path", "--unzip-command", "--rsh-command", "--info-script",
        "--new-volume-script", "--rmt-command", "--extcmd", "--use-askpass", "--toolexec", "--sendmail-cmd",
        "--compress-program", "--hostname-bin",
    }
)  # fmt: skip
"""Long flags that make any program run another command: like write flags, part of what the user approves
(what each known program runs from its options and arguments is in `embedded`)."""


@dataclass(frozen=True)
class Wrapper:
    """How a wrapper's own options look, so the command it runs can be found."""

    transparent: bool
    """An allow rule for the inner command still applies through it (it does not change what that command may do)."""
    takes_value: frozenset[str] = frozenset()
    flags: frozenset[str] = frozenset()
    positionals: int = 0
    """Words between its options and the command (timeout's duration, flock's lock file)."""
    assignments: bool = False
    """`NAME=value` words may come before the command (env, sudo)."""
    writes: frozenset[str] = frozenset()
    """Its own options whose value is a file it writes (`time -o FILE`)."""
    default: tuple[str, ...] = ()
    """The command it runs when none is given (xargs runs echo)."""
    code_string: bool = False
    """The words after its options are joined into a shell command line (watch)."""
    chdir: frozenset[str] = frozenset()
    """Its own options whose value is the folder the command runs in (`env -C DIR`, `sudo -D DIR`)."""


def _w(transparent: bool, takes: str = "", flags: str = "", **more: object) -> Wrapper:
    return Wrapper(transparent, frozenset(takes.split()), frozenset(flags.split()), **more)  # type: ignore[arg-type]


WRAPPERS: dict[str, Wrapper] = {
    "command": _w(True, "", "-p"),
    "builtin": _w(True),
    "exec": _w(True, "-a", "-c -l -cl"),
    "nohup": _w(True),
    "coproc": _w(True),
    "busybox": _w(True),
    "unbuffer": _w(True, "", "-p"),
    "chronic": _w(True, "", "-e -v -ev"),
    "setsid": _w(True, "", "-f --fork -w --wait -c --ctty"),
    "nice": _w(True, "-n --adjustment"),
    "ionice": _w(True, "-c --class -n --classdata", "-t --ignore"),
    "stdbuf": _w(True, "-i -o -e --input --output --error"),
    "timeout": _w(True, "-s --signal -k --kill-after", "--preserve-status --foreground -v --verbose", positionals=1),
    "time": _w(True, "-f --format -o --output", "-p -v --verbose --portability -a --append -q --quiet",
               writes=frozenset({"-o", "--output"})),
    "env": _w(True, "-u --unset -C --chdir", "-i --ignore-environment -0 --null -v --debug -", assignments=True,
              chdir=frozenset({"-C", "--chdir"})),
    "sudo": _w(
        False,
        "-u --user -g --group -C --close-from -D --chdir -h --host -p --prompt -r --role -t --type -U --other-user "
        "-T --command-timeout -R --chroot",
        "-A --askpass -b --background -E --preserve-env -H --set-home -k --reset-timestamp -K -n --non-interactive "
        "-P --preserve-groups -S --stdin -s --shell -i --login -B --bell -N --no-update",
        assignments=True,
        chdir=frozenset({"-D", "--chdir"}),
    ),
    "doas": _w(False, "-u -C", "-n -s -L"),
    "pkexec": _w(False, "--user", "--disable-internal-agent --keep-cwd"),
    "xargs": _w(
        False,
        "-I -d --delimiter -n --max-args -P --max-procs -L --max-lines -s --max-chars -E --eof -a --arg-file "
        "--process-slot-var",
        "-0 --null -r --no-run-if-empty -t --verbose -p --interactive -x --exit -o --open-tty",
        default=("echo",),
    ),
    "watch": _w(
        False,
        "-n --interval",
        "-d --differences -t --no-title -b --beep -e --errexit -g --chgexit -c --color -p --precise -w --no-wrap",
        code_string=True,
    ),
    "flock": _w(
        False,
        "-w --timeout -E --conflict-exit-code",
        "-s -x -e -u -n --shared --exclusive --unlock --nonblock -o --close --verbose -F --no-fork",
        positionals=1,
    ),
}  # fmt: skip
RUNNERS: dict[tuple[str, str], Wrapper] = {
    **{
        (tool, "run"): _w(
            True,
            "--with --python -p --project --directory --extra --group --package --env-file --index --only-group "
            "-n --name -e --env",
            "--frozen --locked --no-sync --isolated -q --quiet -v --verbose --all-extras --no-dev --no-project "
            "--active --offline",
        )
        for tool in ("uv", "poetry", "pipenv", "pdm", "hatch", "conda", "rye")
    },
    ("npm", "exec"): _w(False, "-p --package -w --workspace", "-y --yes --no -c"),
    ("pnpm", "exec"): _w(False, "", "-r --recursive"),
    ("pnpm", "dlx"): _w(False, "-p --package", ""),
    ("yarn", "dlx"): _w(False, "-p --package", ""),
    ("pipx", "run"): _w(False, "--spec --python", "--no-cache -q --quiet -v --verbose"),
}
FETCHING_RUNNERS = {"npx": _w(False, "-p --package", "-y --yes --no -q --quiet"), "uvx": RUNNERS[("uv", "run")],
                    "bunx": _w(False, "", "--bun")}  # fmt: skip
"""Runners that may download the program first: seen through, never transparent."""


@dataclass
class Unwrapped:
    """One simple command with its wrappers peeled off."""

    argv: list[int]
    """Indexes into the words: the command that finally runs (empty: the wrappers alone)."""
    layers: list[int] = field(default_factory=list)
    """Where each wrapper layer starts (its words through the end are what a deny rule may name)."""
    transparent: bool = True
    """No layer changes what the inner command may do, so a word-prefix rule for it still applies."""
    code: list[tuple[str, int, bool]] = field(default_factory=list)
    """Shell command strings to parse as commands too: the string, the index of its (first) word, and whether
    it is every word from there joined (`eval a b`, `watch a b`) rather than that one word."""
    writes: list[str] = field(default_factory=list)
    """Files the wrappers' own options write."""
    placeholders: list[tuple[int, str]] = field(default_factory=list)
    """(index, token): from that word on, xargs replaces the token with its input (`xargs -I {}`)."""
    directories: list[str] = field(default_factory=list)
    """Folders the wrappers' own options run the command in (`env -C DIR`): relative files it writes are there."""
    problem: str | None = None


def program_name(word: str) -> str:
    """`/bin/rm` → `rm`; anything else as written (`./rm` stays `./rm`: it is another program)."""
    if "/" in word:
        folder, _, name = word.rpartition("/")
        if (folder or "/") in SYSTEM_DIRS and name:
            return name
    return word


def base_name(word: str) -> str:
    """The file name of a program, for deny rules: `/bin/rm`, `./rm` and `rm` are all `rm`."""
    return word.rpartition("/")[2] or word


def is_assignment(word: str) -> bool:
    return re.match(r"[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=", word) is not None


def _options(
    words: Sequence[str], start: int, spec: Wrapper, name: str, folders: list[str] | None = None
) -> tuple[int, bool, list[str], str | None]:
    """Skip a wrapper's options from `start`; (index after them, whether any were given, files written, problem).
    The folders its options run the command in are added to `folders`."""
    i = start
    given = False
    writes: list[str] = []
    folders = [] if folders is None else folders
    while i < len(words):
        word = words[i]
        if word == "--":
            return i + 1, given, writes, None
        if spec.assignments and is_assignment(word):
            i, given = i + 1, True
            continue
        if not word.startswith("-") or (word == "-" and "-" not in spec.flags):
            break
        given = True
        head, eq, value = word.partition("=")
        if eq and head in spec.takes_value:
            writes += [value] if head in spec.writes else []
            folders += [value] if head in spec.chdir else []
            i += 1
        elif word in spec.takes_value:
            if i + 1 >= len(words):
                return i, given, writes, f"`{name} {word}` is missing its value"
            writes += [words[i + 1]] if word in spec.writes else []
            folders += [words[i + 1]] if word in spec.chdir else []
            i += 2
        elif word in spec.flags or (name == "nice" and word[1:].isdigit()):
            i += 1
        elif not word.startswith("--") and word[:2] in spec.takes_value:
            folders += [word[2:]] if word[:2] in spec.chdir else []
            i += 1  # a value attached to a short option: -n5, -oL
        elif name == "xargs" and word[:2] in ("-i", "-e", "-l"):
            i += 1  # xargs' optional attached values
        elif not word.startswith("--") and len(word) > 2 and all(f"-{c}" in spec.flags for c in word[1:]):
            i += 1  # combined short flags: -Hn
        else:
            return i, given, writes, f"`{name}` has an option the policy does not know: `{word}`"
    return i, given, writes, None


def _shell(words: Sequence[str], start: int, out: Unwrapped) -> None:
    """A shell: its `-c` string is parsed as commands; a script or commands from its input cannot be seen."""
    i = start + 1
    code_at: int | None = None
    plain = True
    while i < len(words):
        word = words[i]
        if word in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            plain = plain and word in ("-o", "+o")
            i += 2
            continue
        if word == "--":
            i += 1
            break
        if word.startswith("--"):
            code_at = -1 if word == "--command" else code_at
            plain = plain and word in ("--login", "--noprofile", "--norc", "--posix", "--command")
            i += 1
            continue
        if word[:1] in ("-", "+") and len(word) > 1:
            if "c" in word[1:]:
                code_at = -1
            if "s" in word[1:] or "i" in word[1:]:
                plain = False
            plain = plain and all(c in "celuxvo" for c in word[1:])
            i += 1
            continue
        break
    if code_at == -1:
        if i >= len(words):
            out.problem = f"`{base_name(words[start])} -c` is missing its command string"
            return
        out.code.append((words[i], i, False))
        out.transparent = out.transparent and plain
        if not plain:
            out.argv = list(range(start, len(words)))
        return
    if base_name(words[start]) == "su":
        out.argv = list(range(start, len(words)))
        out.transparent = False
        return
    given_s = "s" in "".join(w[1:] for w in words[start + 1 : i] if w.startswith("-"))
    if i >= len(words) or given_s or reads_input(words[i]):
        out.problem = f"`{base_name(words[start])}` would run commands from its input, which cannot be checked"
        return
    out.argv = list(range(start, len(words)))  # a script file: an interpreter the policy cannot see into


def unwrap(words: Sequence[str]) -> Unwrapped:
    """Peel wrappers (and shells' `-c`) off a simple command's words; see `Unwrapped`."""
    out = Unwrapped(argv=[])
    i = 0
    while i < len(words):
        name = base_name(words[i])
        pair = (name, words[i + 1]) if i + 1 < len(words) else None
        if name == "command" and i + 1 < len(words) and words[i + 1] in ("-v", "-V"):
            break  # a lookup, not a run
        if name in SHELLS:
            out.layers.append(i)
            _shell(words, i, out)
            return out
        if name == "script":
            out.layers.append(i)
            out.argv = list(range(i, len(words)))
            out.transparent = False
            for k in range(i + 1, len(words)):
                if (words[k] == "--command" or re.fullmatch(r"-[A-Za-z]*c", words[k])) and k + 1 < len(words):
                    out.code.append((words[k + 1], k + 1, False))
                elif words[k].startswith("--command="):
                    out.problem = "`script --command=…`: give the command as a separate word"
            return out
        if name in ("at", "batch") and not any(w in ("-l", "-d", "-r", "-c", "-f") for w in words[i + 1 :]):
            out.layers.append(i)
            out.problem = f"`{name}` would run commands from its input, which cannot be checked"
            return out
        if name == "eval":
            out.layers.append(i)
            out.code.append((" ".join(words[i + 1 :]), i + 1, True))
            return out
        if pair in RUNNERS or name in FETCHING_RUNNERS or name in WRAPPERS:
            start = i + 2 if pair in RUNNERS else i + 1
            spec = RUNNERS[pair] if pair in RUNNERS else FETCHING_RUNNERS.get(name) or WRAPPERS[name]
            out.layers.append(i)
            after, given, writes, problem = _options(words, start, spec, name, out.directories)
            if problem:
                out.problem = problem
                return out
            out.writes += writes
            if name == "xargs" and (token := _xargs_placeholder(words[start:after])):
                out.placeholders.append((after, token))
            if (name == "env" and given) or writes:
                out.transparent = False
            out.transparent = out.transparent and spec.transparent
            if after + spec.positionals > len(words) and spec.positionals:
                out.problem = f"`{name}` is missing its arguments"
                return out
            after += spec.positionals
            if name == "flock" and after < len(words) and words[after] in ("-c", "--command"):
                if after + 1 >= len(words):
                    out.problem = "`flock -c` is missing its command string"
                    return out
                out.code.append((words[after + 1], after + 1, False))
                return out
            if spec.code_string and after < len(words):
                out.code.append((" ".join(words[after:]), after, True))
                return out
            if after >= len(words):
                if spec.default:
                    return out  # xargs alone runs echo: nothing more to check
                if any(base_name(words[k]) == "xargs" for k in out.layers[:-1]):
                    out.problem = f"`xargs` gives `{name}` the command to run from its input, which cannot be checked"
                out.argv = list(range(i, len(words)))  # the wrapper alone (`env`, `sudo -v`)
                return out
            i = after
            continue
        break
    out.argv = list(range(i, len(words)))
    return out


def _xargs_placeholder(options: Sequence[str]) -> str | None:
    """The token `xargs -I R` / `-i` / `--replace` replaces in the command's words."""
    for k, word in enumerate(options):
        if word == "-I" and k + 1 < len(options):
            return options[k + 1]
        if word.startswith("-I") and len(word) > 2:
            return word[2:]
        if word in ("-i", "--replace"):
            return "{}"
        if word.startswith("--replace="):
            return word.partition("=")[2] or "{}"
        if word.startswith("-i") and len(word) > 2:
            return word[2:]
    return None


def remembered_as_prefix(argv: Sequence[str]) -> tuple[str, ...] | None:
    """The word prefix an "always" remembers for this command; None when only the exact command may be."""
    if not argv or "/" in argv[0]:
        return None
    name = argv[0]
    if name in SHELLS or name in WRAPPERS or name in FETCHING_RUNNERS or name in BROAD_PROGRAMS:
        return None
    if INTERPRETER.fullmatch(name) or is_assignment(name):
        return None
    if len(argv) > 1 and (name, argv[1]) in (RUNNERS.keys() | BROAD_SUBCOMMANDS):
        return None
    if name in MULTI_WORD_COMMANDS and len(argv) > 1:
        sub = argv[1]
        if sub.startswith("-") or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._:-]*", sub):
            return None
        return (name, sub)
    return (name,)
