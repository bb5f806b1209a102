"""The permission policy, table-driven: containment × modes × rule kinds, every bypass family of issue 9,
wrappers, interpreters, write flags, what "always" remembers, fetch targets and key scrubbing.

Each row is (mode, config allow, config deny, session allow, action) → decision. Paths are written against a
real workspace built in `tmp_path` (`{out}` is a folder outside it, `{extra}` an additional root); fetch
targets are judged from given addresses (no DNS). A final property test generates command lines that run a
denied command in every disguise the grammar allows and checks none is ever allowed.
"""

from __future__ import annotations

import logging
import shlex
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from coder_agent import secrets
from coder_agent.permissions import Action, analyse, offer, resolve, restore_rules
from coder_agent.permissions.network import why_local
from tests.unit.permissions.workspace import Row, Workspace, make_workspace, rows


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    return make_workspace(tmp_path_factory)


# ---- containment × modes × rule kinds ----------------------------------------------------------------------

OUTSIDE_PATHS = [
    ("absolute", "{out}/x.txt"),
    ("dotdot", "../outside/x.txt"),
    ("dotdot-through-src", "src/../../outside/x.txt"),
    ("symlinked-folder", "link_out/x.txt"),
    ("symlinked-folder-in-src", "src/link_out/x.txt"),
    ("symlinked-file", "link_file"),
    ("dangling-symlink", "dangling"),
    ("dotdot-after-symlink", "link_in/../../outside/x.txt"),
    ("home", "~/.bashrc"),
]
CONTAINMENT: list[Row] = []
for name, path in OUTSIDE_PATHS:
    for mode in ("default", "accept-edits", "full-auto"):
        CONTAINMENT.append((f"edit-{name}-{mode}", mode, (), (), (), "edit", path, "ask"))
    CONTAINMENT.append((f"edit-{name}-always-edit-everything", "full-auto", (), (), ("edit:**",), "edit", path, "ask"))
    CONTAINMENT.append((f"edit-{name}-config-star", "accept-edits", ("edit:*", "edit:**"), (), (), "edit", path, "ask"))
    CONTAINMENT.append((f"read-{name}-full-auto", "full-auto", (), (), (), "read", path, "ask"))
    CONTAINMENT.append((f"edit-{name}-read-only", "read-only", (), (), (), "edit", path, "deny"))
CONTAINMENT += [
    ("edit-src-under-src-rule", "default", (), (), ("edit:src/**",), "edit", "src/a.py", "allow"),
    ("edit-src-symlink-under-src-rule", "default", (), (), ("edit:src/**",), "edit", "src/link_out/x.txt", "ask"),
    ("edit-inside-default", "default", (), (), (), "edit", "src/a.py", "ask"),
    ("edit-inside-accept", "accept-edits", (), (), (), "edit", "src/a.py", "allow"),
    ("edit-inside-full-auto", "full-auto", (), (), (), "edit", "src/a.py", "allow"),
    ("edit-inside-read-only", "read-only", (), (), (), "edit", "src/a.py", "deny"),
    ("read-inside-read-only", "read-only", (), (), (), "read", "src/a.py", "allow"),
    ("read-inside-default", "default", (), (), (), "read", "src/a.py", "allow"),
    ("search-inside-default", "default", (), (), (), "search", "src", "allow"),
    ("search-symlinked-root", "full-auto", (), (), (), "search", "link_out", "ask"),
    ("search-outside-root", "full-auto", (), (), (), "search", "{out}", "ask"),
    ("edit-inside-symlink-to-inside", "default", (), (), ("edit:src/**",), "edit", "link_in/a.py", "allow"),
    ("edit-extra-root-accept", "accept-edits", (), (), (), "edit", "{extra}/f.txt", "allow"),
    ("edit-extra-root-relative-rule", "default", (), (), ("edit:**",), "edit", "{extra}/f.txt", "ask"),
    ("edit-extra-root-absolute-rule", "default", (), (), ("edit:{extra}/**",), "edit", "{extra}/f.txt", "allow"),
    ("edit-outside-user-config-names-it", "default", ("edit:{out}/**",), (), (), "edit", "{out}/x.txt", "allow"),
    ("edit-outside-user-config-via-symlink", "default", ("edit:{out}/**",), (), (), "edit", "link_out/x", "allow"),
    ("edit-outside-remembered-absolute", "full-auto", (), (), ("edit:{out}/**",), "edit", "{out}/x.txt", "ask"),
    ("read-outside-config-edit-rule-only", "full-auto", ("edit:{out}/**",), (), (), "read", "{out}/x.txt", "ask"),
    ("read-outside-config-any-kind", "default", ("*:{out}/**",), (), (), "read", "{out}/x.txt", "allow"),
    ("edit-outside-config-other-folder", "default", ("edit:{extra}/**",), (), (), "edit", "{out}/x.txt", "ask"),
    # what git and the agent run from: an edit there would turn an allowed `git status` into any command
    ("edit-git-config-accept", "accept-edits", (), (), (), "edit", ".git/config", "ask"),
    ("edit-git-hook-edit-all", "default", (), (), ("edit:**",), "edit", ".git/hooks/pre-commit", "ask"),
    ("edit-git-hook-config-all", "accept-edits", ("edit:**",), (), (), "edit", ".git/hooks/pre-commit", "ask"),
    ("edit-nested-git-accept", "accept-edits", (), (), (), "edit", "src/sub/.git/config", "ask"),
    ("edit-git-file-accept", "accept-edits", (), (), (), "edit", ".git", "ask"),
    ("edit-git-extra-root-accept", "accept-edits", (), (), (), "edit", "{extra}/.git/config", "ask"),
    ("edit-project-config-accept", "accept-edits", (), (), (), "edit", ".coder-agent/config.toml", "ask"),
    ("edit-git-full-auto", "full-auto", (), (), (), "edit", ".git/config", "allow"),
    ("edit-git-config-names-it", "accept-edits", ("edit:.git/hooks/**",), (), (), "edit", ".git/hooks/x", "allow"),
    ("read-git-config", "default", (), (), (), "read", ".git/config", "allow"),
    ("edit-gitignore-accept", "accept-edits", (), (), (), "edit", ".gitignore", "allow"),
    ("edit-github-workflow-accept", "accept-edits", (), (), (), "edit", ".github/workflows/ci.yml", "allow"),
    # a hard link is the outside file itself: an editor writing in place would change it there
    ("edit-hard-link-accept", "accept-edits", (), (), (), "edit", "hard", "ask"),
    ("edit-hard-link-full-auto", "full-auto", (), (), (), "edit", "hard", "ask"),
    ("edit-hard-link-edit-all", "default", (), (), ("edit:**",), "edit", "hard", "ask"),
    ("read-hard-link", "default", (), (), (), "read", "hard", "allow"),
    ("command-writes-hard-link", "full-auto", (), (), (), "execute", "echo pwned > hard", "ask"),
]


@pytest.mark.parametrize("row", rows(*CONTAINMENT))
def test_containment(ws: Workspace, row: Row) -> None:
    verdict = ws.decide(row)
    assert verdict.decision == row[-1], verdict.reason


DENY_WINS: list[Row] = [
    ("deny-relative-inside", "full-auto", ("edit:**",), ("edit:src/**",), (), "edit", "src/a.py", "deny"),
    ("deny-absolute-outside", "full-auto", ("edit:{out}/**",), ("edit:{out}/**",), (), "edit", "{out}/x", "deny"),
    ("deny-read-secrets", "full-auto", (), ("read:**/.env",), (), "read", "src/deep/.env", "deny"),
    ("deny-any-kind", "full-auto", (), ("*:src/**",), (), "read", "src/a.py", "deny"),
    ("deny-command-write-target", "full-auto", (), ("edit:.env",), (), "execute", "echo x > .env", "deny"),
    ("deny-command-tee-target", "full-auto", (), ("edit:src/**",), (), "execute", "echo x | tee src/b", "deny"),
    ("deny-command-rm-operand", "full-auto", (), ("edit:src/**",), (), "execute", "rm -f src/a.py", "deny"),
    # case-insensitive file systems (macOS, Windows) reach the same file under another case or normal form
    ("deny-other-case", "full-auto", (), ("edit:src/**",), (), "edit", "SRC/a.py", "deny"),
    ("deny-other-case-absolute", "full-auto", ("edit:{out}/**",), ("edit:{out}/secret.txt",), (), "edit",
     "{out}/SECRET.TXT", "deny"),
    ("deny-other-normal-form", "full-auto", (), ("edit:caf\u00e9/**",), (), "edit", "cafe\u0301/menu.txt", "deny"),
    ("deny-command-other-case", "full-auto", (), ("execute:rm",), (), "execute", "RM -rf x", "deny"),
    ("deny-command-write-other-case", "full-auto", (), ("edit:.env",), (), "execute", "echo x > .ENV", "deny"),
    ("allow-stays-exact-case", "default", (), (), ("edit:src/**",), "edit", "SRC/a.py", "ask"),
    ("deny-command-after-cd", "full-auto", (), ("edit:src/**",), (), "execute", "cd src && echo > a.py", "deny"),
    ("deny-fetch-host", "full-auto", ("fetch:*",), ("fetch:evil.test",), (), "fetch", "http://evil.test/ 1.2.3.4",
     "deny"),
    ("deny-mcp-tool", "full-auto", (), ("other:mcp__gh__*",), (), "mcp-other", "mcp__gh__delete", "deny"),
]  # fmt: skip


@pytest.mark.parametrize("row", rows(*DENY_WINS))
def test_deny_wins(ws: Workspace, row: Row) -> None:
    verdict = ws.decide(row)
    assert verdict.decision == row[-1], verdict.reason


# ---- commands: every bypass family of issue 9 under `deny = ["execute:rm"]` in full-auto ---------------------

RM_DISGUISES = [
    "true && rm f",
    "echo; rm f",
    "/bin/rm f",
    "\\rm f",
    "'rm' f",
    '"rm" f',
    "r\\m f",
    "r''m f",
    "command rm f",
    "X=1 rm f",
    "X=1 Y=2 rm f",
    "ls | xargs rm",
    "ls | xargs -0 -n 1 rm -f",
    "find . -name f -delete",
    "(rm f)",
    "{ rm f; }",
    "false || rm f",
    "rm f &",
    "! rm f",
    "echo $(rm f)",
    "echo `rm f`",
    "cat <(rm f)",
    "echo $(echo $(rm f))",
    "x=$(rm f)",
    "export X=$(rm f)",
    "cat <<EOF\n$(rm f)\nEOF",
    "cat <<< $(rm f)",
    "if true; then rm f; fi",
    "for i in 1; do rm f; done",
    "while false; do rm f; done",
    "case x in x) rm f;; esac",
    "f() { rm f; }; f",
    "bash -c 'rm f'",
    'sh -c "rm f"',
    "zsh -c 'rm f'",
    "bash -lc 'rm f'",
    "bash -c \"bash -c 'rm f'\"",
    "eval rm f",
    "eval 'rm f'",
    "trap 'rm f' EXIT",
    "watch -n 1 rm f",
    "xargs sh -c 'rm f'",
    "find . -exec rm {} \\;",
    "find . -execdir rm {} +",
    "find . -ok rm {} \\;",
    "find . -exec sh -c 'rm f' \\;",
    "sudo rm f",
    "sudo -u root rm f",
    "doas rm f",
    "env rm f",
    "env -i PATH=/bin rm f",
    "nohup rm f",
    "timeout 5 rm f",
    "timeout -s KILL 5 rm f",
    "nice rm f",
    "nice -n 10 rm f",
    "ionice -c 3 rm f",
    "time rm f",
    "stdbuf -oL rm f",
    "setsid rm f",
    "chronic rm f",
    "exec rm f",
    "builtin command rm f",
    "uv run rm f",
    "npx rm f",
    "sudo nice timeout 5 env rm f",
    "rm -rf /",
    "git status; rm f",
    "echo ok | rm f",
    "a=1; rm f",
    "alias x='rm'; x f",
    "hash -p /bin/rm ls; ls f",
    "fd . -x rm",
    "script -qc 'rm f' /dev/null",
    "busybox rm f",
    # found by the adversarial pass
    "trap -- 'rm f' EXIT",
    "mapfile -C 'rm f' -c 1 < list",
    "readarray -t -C 'rm f' < list",
    "mapfile -C'rm f' < list",
]


@pytest.mark.parametrize("command", RM_DISGUISES)
def test_a_denied_command_is_denied_in_every_disguise(ws: Workspace, command: str) -> None:
    policy = ws.policy("full-auto", allow=("execute:*",), deny=("execute:rm",))
    verdict = policy.decide(ws.action("execute", command))
    assert verdict.decision == "deny", (command, verdict.reason, analyse(command))


NOT_UNDERSTOOD = [
    "$CMD f",
    "${CMD} f",
    "$(echo rm) f",
    "`echo rm` f",
    "echo rm f | bash",
    "bash < script.sh",
    "bash -s < x",
    "cat x | sh",
    "eval \"$CMD\"",
    "bash -c \"$CMD\"",
    "$'\\x72m' f",
    "{rm,f}",
    "r* f",
    "[[ $x -eq 'a[$(rm f)]' ]]",
    "echo ${x@P}",
    "echo 'x`rm f`'",
    "if true; then",
    "echo \"unterminated",
    "sudo --weird-flag rm f",
    "env -S 'rm f'",
    "source <(echo rm f)",
    ". <(echo rm f)",
    "bash <(echo rm f)",
    "echo rm | xargs -I X X f",
    "ls | xargs -i sh -c '{}'",
    "find . -exec sh -c '{}' \\;",
    "! if true; then rm f; fi",
    # found by the adversarial pass
    "r\\\nm f",
    "ls; r\\\nm f",
    "cat <<EOF\n`rm f`\nEOF",
    "cat <<-EOF\n\t${x:-`rm f`}\n\tEOF",
    "echo ${x:-`rm f`}",
    'echo "${x:-`rm f`}"',
    "source /dev/stdin <<< 'rm f'",
    ". /dev/fd/0 < script",
    "bash /dev/stdin <<< 'rm f'",
    "sh - < script",
    "bash /proc/self/fd/0 < script",
    "echo rm f | xargs env",
    "echo rm f | xargs -n2 nohup",
    "echo 5 rm f | xargs timeout",
    "echo rm f | xargs sudo",
    "at now <<< 'rm f'",
    "batch < jobs",
]  # fmt: skip


@pytest.mark.parametrize(
    "command",
    [
        "(" * 3000 + "rm f" + ")" * 3000,
        "$(" * 2000 + "rm f" + ")" * 2000,
        "if true; then " * 2000 + "rm f" + "; fi" * 2000,
    ],
    ids=["subshells", "substitutions", "ifs"],
)
def test_a_line_nested_beyond_the_parser_is_not_understood_and_does_not_crash(ws: Workspace, command: str) -> None:
    line = analyse(command)
    assert not line.understood
    policy = ws.policy("full-auto", allow=("execute:*",), deny=("execute:rm",))
    assert policy.decide(ws.action("execute", command)).decision in ("ask", "deny")


@pytest.mark.parametrize("command", NOT_UNDERSTOOD)
def test_what_the_parser_cannot_follow_asks_when_deny_rules_exist(ws: Workspace, command: str) -> None:
    assert not analyse(command).understood, command
    with_deny = ws.policy("full-auto", allow=("execute:*",), deny=("execute:rm",))
    assert with_deny.decide(ws.action("execute", command)).decision in ("ask", "deny")
    in_default = ws.policy("default", allow=("execute:*",))
    assert in_default.decide(ws.action("execute", command)).decision == "ask", "no allow rule covers it"
    without_deny = ws.policy("full-auto")
    assert without_deny.decide(ws.action("execute", command)).decision == "allow", "full-auto runs it"


ARGUMENT_NAMES_IT = [  # the command strings programs run from known options are parsed: test_embedded.py
    "strace rm f",
    "strace -f -o /dev/null rm f",
    "chroot / rm f",
    "unshare -r rm f",
    "taskset 1 rm f",
    "ls | parallel rm",
    "runuser -u me rm f",
    "runuser me -c 'rm f'",
    "systemd-run --user rm f",
    "ssh host rm f",
]


@pytest.mark.parametrize("command", ARGUMENT_NAMES_IT)
def test_a_denied_program_given_as_an_argument_asks(ws: Workspace, command: str) -> None:
    """Programs that run their arguments (wrappers the policy does not know, options and variables that hold a
    command) cannot be followed one by one; a denied program among the words asks instead of running."""
    with_deny = ws.policy("full-auto", allow=("execute:*",), deny=("execute:rm",))
    verdict = with_deny.decide(ws.action("execute", command))
    assert verdict.decision in ("ask", "deny"), (command, verdict.reason, analyse(command))
    in_default = ws.policy("default", allow=("execute:*",), deny=("execute:rm",))
    assert in_default.decide(ws.action("execute", command)).decision != "allow", "no prefix rule covers it"
    assert ws.policy("full-auto").decide(ws.action("execute", command)).decision == "allow", "no deny rule"
    exact = ws.policy("default", allow=(f"execute:={command}",), deny=("execute:rm",))
    if analyse(command).understood:
        assert exact.decide(ws.action("execute", command)).decision == "allow", "the user's exact approval holds"


NAMED_IN_WORDS = [
    ("strace -f git push", "ask"),
    ("ssh host git push origin", "ask"),
    ("ssh host git pull", "allow"),
    ("echo git", "allow"),
]


@pytest.mark.parametrize(("command", "expected"), NAMED_IN_WORDS)
def test_a_deny_rule_of_words_asks_when_they_appear_in_order(ws: Workspace, command: str, expected: str) -> None:
    policy = ws.policy("full-auto", deny=("execute:git push",))
    assert policy.decide(ws.action("execute", command)).decision == expected


# ---- allow rules: word prefixes, exact commands, write flags, wrappers -------------------------------------

ALLOW: list[Row] = [
    ("prefix-exact", "default", ("execute:git status",), (), (), "execute", "git status", "allow"),
    ("prefix-more-words", "default", ("execute:git status",), (), (), "execute", "git status --short", "allow"),
    ("prefix-system-path", "default", ("execute:git status",), (), (), "execute", "/usr/bin/git status", "allow"),
    ("prefix-quoted", "default", ("execute:git status",), (), (), "execute", "'git' \"status\"", "allow"),
    ("prefix-not-local-binary", "default", ("execute:git status",), (), (), "execute", "./git status", "ask"),
    ("prefix-not-other-word", "default", ("execute:git status",), (), (), "execute", "git statusx", "ask"),
    ("prefix-not-option-first", "default", ("execute:git status",), (), (), "execute", "git -c x=y status", "ask"),
    ("prefix-not-semicolon", "default", ("execute:git status",), (), (), "execute", "git status; rm -rf x", "ask"),
    ("prefix-not-and-curl", "default", ("execute:git status",), (), (), "execute", "git status && curl x", "ask"),
    ("prefix-not-pipe-sh", "default", ("execute:git status",), (), (), "execute", "git status | sh", "ask"),
    ("prefix-not-subst", "default", ("execute:git status",), (), (), "execute", "git status $(rm x)", "ask"),
    ("prefix-not-redirect", "default", ("execute:git status",), (), (), "execute", "git status > out.txt", "ask"),
    ("prefix-not-assignment", "default", ("execute:git status",), (), (), "execute", "X=1 git status", "ask"),
    ("prefix-not-sudo", "default", ("execute:git status",), (), (), "execute", "sudo git status", "ask"),
    ("prefix-not-xargs", "default", ("execute:git status",), (), (), "execute", "echo | xargs git status", "ask"),
    ("prefix-through-timeout", "default", ("execute:pytest",), (), (), "execute", "timeout 60 pytest -x", "allow"),
    ("prefix-through-uv-run", "default", ("execute:pytest",), (), (), "execute", "uv run pytest -x", "allow"),
    ("prefix-through-bash-c", "default", ("execute:pytest",), (), (), "execute", "bash -c 'pytest -q'", "allow"),
    ("prefix-not-through-npx", "default", ("execute:eslint",), (), (), "execute", "npx eslint .", "ask"),
    ("write-flag-output", "default", ("execute:git diff",), (), (), "execute", "git diff --output=/x", "ask"),
    ("write-flag-output-spaced", "default", ("execute:git diff",), (), (), "execute", "git diff --output /x", "ask"),
    ("write-flag-variable", "default", ("execute:git diff",), (), (), "execute", "git diff $OPTS", "ask"),
    ("write-flag-curl-o", "default", ("execute:curl",), (), (), "execute", "curl -o x http://e", "ask"),
    ("write-flag-sort-o", "default", ("execute:sort",), (), (), "execute", "sort -o x y", "ask"),
    ("write-flag-sed-i", "default", ("execute:sed",), (), (), "execute", "sed -i s/a/b/ f", "ask"),
    ("write-flag-basetemp", "default", ("execute:pytest",), (), (), "execute", "pytest --basetemp=/elsewhere/x", "ask"),
    ("write-tee", "default", ("execute:tee",), (), (), "execute", "tee f", "ask"),
    ("runs-rg-pre", "default", ("execute:rg",), (), (), "execute", "rg --pre ./x foo", "ask"),
    ("runs-rsync-e", "default", ("execute:rsync",), (), (), "execute", "rsync -e 'sh -c x' a b", "ask"),
    ("rg-plain", "default", ("execute:rg",), (), (), "execute", "rg -n foo src", "allow"),
    # arguments that choose what a build tool runs
    ("make-shell-override", "default", ("execute:make test",), (), (), "execute", "make test SHELL=/other/x", "ask"),
    ("make-variable-override", "default", ("execute:make test",), (), (), "execute", "make test CC='curl x|sh'",
     "ask"),
    ("make-other-makefile", "default", ("execute:make test",), (), (), "execute", "make test -f /other/x.mk", "ask"),
    ("make-eval", "default", ("execute:make",), (), (), "execute", "make --eval='x:;touch y' x", "ask"),
    ("make-plain", "default", ("execute:make test",), (), (), "execute", "make test -j4", "allow"),
    ("npm-script-shell", "default", ("execute:npm test",), (), (), "execute", "npm test --script-shell=/elsewhere/x",
     "ask"),
    ("git-status-no-optional-locks", "default", ("execute:git status",), (), (), "execute",
     "git status --porcelain", "allow"),
    ("write-flag-in-rule", "default", ("execute:=git diff --output=d.txt",), (), (), "execute",
     "git diff --output=d.txt", "allow"),
    ("two-rules-two-commands", "default", ("execute:git status", "execute:ls"), (), (), "execute",
     "ls -la && git status", "allow"),
    ("two-commands-one-rule", "default", ("execute:ls",), (), (), "execute", "ls && git push", "ask"),
    ("exact-same", "default", ("execute:=python3 -c 'print(1)'",), (), (), "execute", 'python3 -c "print(1)"', "allow"),
    ("exact-other", "default", ("execute:=python3 -c 'print(1)'",), (), (), "execute", "python3 -c 'print(2)'", "ask"),
    ("exact-not-under-sudo", "default", ("execute:=git status",), (), (), "execute", "sudo bash -c 'git status'",
     "ask"),
    ("exact-sudo-line", "default", ("execute:=sudo bash -c 'git status'",), (), (), "execute",
     "sudo bash -c 'git status'", "allow"),
    ("star-any-understood", "default", ("execute:*",), (), (), "execute", "make && ./run.sh | tee log", "allow"),
    ("star-not-not-understood", "default", ("execute:*",), (), (), "execute", "$X", "ask"),
    ("config-prefix-bash-inner-uncovered", "default", ("execute:bash",), (), (), "execute", "bash -c 'rm f'", "ask"),
    ("interpreter-config-prefix", "default", ("execute:python3",), (), (), "execute", "python3 -c 'x'", "allow"),
    ("session-prefix-python-not-restored", "default", (), (), ("execute:ls",), "execute", "python3 x.py", "ask"),
    ("read-only-denies-commands", "read-only", ("execute:*",), (), (), "execute", "ls", "deny"),
    ("default-asks-commands", "default", (), (), (), "execute", "ls", "ask"),
    ("accept-edits-asks-commands", "accept-edits", (), (), (), "execute", "ls", "ask"),
    ("full-auto-runs-commands", "full-auto", (), (), (), "execute", "ls && make", "allow"),
    ("full-auto-asks-outside-write", "full-auto", (), (), (), "execute", "echo x > {out}/f", "ask"),
    ("full-auto-asks-outside-tee", "full-auto", (), (), (), "execute", "echo x | tee -a ~/.bashrc", "ask"),
    ("full-auto-outside-write-named", "full-auto", ("edit:{out}/**",), (), (), "execute", "echo x > {out}/f",
     "allow"),
    ("full-auto-dev-null-is-fine", "full-auto", (), (), (), "execute", "make > /dev/null 2>&1", "allow"),
    ("full-auto-inside-write", "full-auto", (), (), (), "execute", "echo x > notes.txt", "allow"),
    # a relative write after `cd` lands where the cd went
    ("full-auto-cd-up-write", "full-auto", (), (), (), "execute", "cd .. && echo x > f", "ask"),
    ("full-auto-cd-out-tee", "full-auto", (), (), (), "execute", "cd {out}; echo x | tee f", "ask"),
    ("full-auto-subshell-cd", "full-auto", (), (), (), "execute", "(cd ..; echo x > f)", "ask"),
    ("full-auto-pushd", "full-auto", (), (), (), "execute", "pushd /elsewhere && echo x > f", "ask"),
    ("full-auto-cd-home", "full-auto", (), (), (), "execute", "cd && echo x >> .bashrc", "ask"),
    ("full-auto-cd-variable", "full-auto", (), (), (), "execute", "cd \"$D\" && echo x > f", "ask"),
    ("full-auto-cd-src-write", "full-auto", (), (), (), "execute", "cd src && echo x > f", "allow"),
    ("full-auto-cd-then-cd-up", "full-auto", (), (), (), "execute", "cd src && cd ../.. && touch f", "ask"),
    # the files a command names as operands it changes
    ("full-auto-rm-outside", "full-auto", (), (), (), "execute", "rm -rf {out}/secret.txt", "ask"),
    ("full-auto-rm-home", "full-auto", (), (), (), "execute", "rm -rf ~", "ask"),
    ("full-auto-rm-through-symlink", "full-auto", (), (), (), "execute", "rm -rf link_out/x", "ask"),
    ("full-auto-cp-outside", "full-auto", (), (), (), "execute", "cp src/a.py {out}/", "ask"),
    ("full-auto-cp-target-dir", "full-auto", (), (), (), "execute", "cp -t {out} src/a.py", "ask"),
    ("full-auto-mv-in-from-outside", "full-auto", (), (), (), "execute", "mv {out}/secret.txt .", "ask"),
    ("full-auto-touch-outside", "full-auto", (), (), (), "execute", "touch {out}/x", "ask"),
    ("full-auto-mkdir-outside", "full-auto", (), (), (), "execute", "mkdir -p {out}/d", "ask"),
    ("full-auto-chmod-outside", "full-auto", (), (), (), "execute", "chmod 600 {out}/secret.txt", "ask"),
    ("full-auto-truncate-outside", "full-auto", (), (), (), "execute", "truncate -s 0 {out}/secret.txt", "ask"),
    ("full-auto-install-outside", "full-auto", (), (), (), "execute", "install -m 755 x {out}/x", "ask"),
    ("full-auto-ln-outside", "full-auto", (), (), (), "execute", "ln -sf /bin/sh {out}/sh", "ask"),
    ("full-auto-rsync-outside", "full-auto", (), (), (), "execute", "rsync -a src/ {out}/", "ask"),
    ("full-auto-tar-x-outside", "full-auto", (), (), (), "execute", "tar -xf a.tar -C {out}", "ask"),
    ("full-auto-rm-inside", "full-auto", (), (), (), "execute", "rm -rf build src/deep", "allow"),
    ("full-auto-write-to-variable", "full-auto", (), (), (), "execute", "echo x >> $HOME/.bashrc", "ask"),
    ("full-auto-rm-variable", "full-auto", (), (), (), "execute", "rm -rf \"$HOME\"", "ask"),
    ("full-auto-rm-substitution", "full-auto", (), (), (), "execute", "rm -rf $(dirname $PWD)", "ask"),
    ("full-auto-rm-dot-star", "full-auto", (), (), (), "execute", "rm -rf .*", "ask"),
    ("full-auto-rm-star", "full-auto", (), (), (), "execute", "rm -rf build/*", "allow"),
    ("full-auto-cp-inside", "full-auto", (), (), (), "execute", "cp {out}/secret.txt src/", "allow"),
    ("full-auto-ln-to-outside-named-inside", "full-auto", (), (), (), "execute", "ln -s {out} here", "allow"),
    ("full-auto-chmod-inside", "full-auto", (), (), (), "execute", "chmod +x src/a.py", "allow"),
    ("full-auto-rm-outside-named", "full-auto", ("edit:{out}/**",), (), (), "execute", "rm {out}/secret.txt",
     "allow"),
    ("config-rm-rule-still-covers", "default", ("execute:rm",), (), (), "execute", "rm -rf build", "allow"),
    ("config-mkdir-rule-still-covers", "default", ("execute:mkdir -p",), (), (), "execute", "mkdir -p b/c", "allow"),
]  # fmt: skip


@pytest.mark.parametrize("row", rows(*ALLOW))
def test_allow_rules_cover_every_simple_command(ws: Workspace, row: Row) -> None:
    verdict = ws.decide(row, fill=True)
    assert verdict.decision == row[-1], verdict.reason


DENY_PREFIX = [
    ("git push --force", "deny"),
    ("git -C repo push", "deny"),
    ("/usr/bin/git push origin", "deny"),
    ("cd x && git push", "deny"),
    ("GIT_TRACE=1 git push", "deny"),
    ("git status", "allow"),
    ("git pull", "allow"),
]


@pytest.mark.parametrize(("command", "expected"), DENY_PREFIX)
def test_a_deny_rule_with_words_matches_them_in_order(ws: Workspace, command: str, expected: str) -> None:
    policy = ws.policy("full-auto", deny=("execute:git push",))
    assert policy.decide(ws.action("execute", command)).decision == expected


# ---- what "always" remembers ---------------------------------------------------------------------------------

ALWAYS_COMMANDS = [
    ("git status --short", ["execute:git status"]),
    ("pytest -q tests", ["execute:pytest"]),
    ("npm run test", ["execute:npm run"]),
    ("bash -c 'ls -la'", ["execute:ls"]),
    ("ls && ls -la", ["execute:ls"]),
    ("ls | grep x", ["execute:ls", "execute:grep"]),
    ("python3 -c 'print(1)'", ["execute:=python3 -c 'print(1)'"]),
    ("node -e 1", ["execute:=node -e 1"]),
    ("bash script.sh", ["execute:=bash script.sh"]),
    ("env FOO=1 make", ["execute:=env FOO=1 make"]),
    ("FOO=1 make", ["execute:=FOO=1 make"]),
    ("ls | xargs wc -l", ["execute:ls", "execute:=xargs wc -l"]),
    ("find . -name '*.py'", ["execute:=find . -name '*.py'"]),
    ("timeout 5 pytest", ["execute:=timeout 5 pytest"]),
    ("nohup make", ["execute:=nohup make"]),
    ("sudo apt install x", ["execute:=sudo apt install x"]),
    ("git diff --output=d.txt", ["execute:=git diff --output=d.txt"]),
    ("git diff --output=/x", []),
    ("git diff HEAD", ["execute:git diff"]),
    ("echo hi > notes.txt", ["execute:=echo hi > notes.txt"]),
    ("cd src && pytest", ["execute:=cd src", "execute:pytest"]),
    ("git -C x status", ["execute:=git -C x status"]),
    ("rm -rf build", ["execute:=rm -rf build"]),
    ("curl https://example.test", ["execute:=curl https://example.test"]),
    ("npm exec foo", ["execute:=npm exec foo"]),
    ("uv run pytest", ["execute:=uv run pytest"]),
    ("$X", []),
    ("echo " + "x" * 400 + " > f", []),
    ("cat > f <<'EOF'\nhi\nEOF", []),
    ("echo safe \x1b[2K\x1b[Gecho > f", []),
    ("l\u200bs -la", []),
    ("git sta\u202etus", []),
]


@pytest.mark.parametrize(("command", "remembered"), ALWAYS_COMMANDS)
def test_always_remembers_what_the_prompt_showed_and_only_what_matches(
    ws: Workspace, command: str, remembered: list[str]
) -> None:
    policy = ws.policy("default")
    action = ws.action("execute", command)
    offered = offer(policy, action)
    assert [str(r) for r in offered.allow] == remembered
    labels = [c.label for c in offered.choices()]
    assert len(labels) == len(set(labels)), "no rule listed twice"
    if remembered:
        assert any(c.kind == "allow_always" for c in offered.choices())
        assert policy.with_session_rules(allow=offered.allow).decide(action).decision == "allow"
    else:
        assert all(c.kind != "allow_always" for c in offered.choices())


BROAD_REMEMBERED = [
    ("bash -c 'ls'", "bash -c 'rm -rf x'"),
    ("python3 -c 'print(1)'", "python3 -c 'import shutil'"),
    ("env FOO=1 make", "env FOO=1 rm -rf x"),
    ("xargs echo", "xargs rm"),
    ("find . -name x", "find . -delete"),
    ("timeout 5 pytest", "timeout 5 rm -rf x"),
    ("nohup make", "nohup rm -rf x"),
    ("FOO=1 make", "FOO=1 rm -rf x"),
    ("git diff", "git diff --output=/elsewhere/x"),
    ("git status", "git status > /elsewhere/x"),
    ("uv run pytest", "uv run rm -rf x"),
    ("sh -c 'echo hi'", "sh -c 'echo hi; rm -rf x'"),
]


@pytest.mark.parametrize(("approved", "later"), BROAD_REMEMBERED)
def test_an_always_never_lets_a_different_command_through(ws: Workspace, approved: str, later: str) -> None:
    policy = ws.policy("default")
    policy.remember(offer(policy, ws.action("execute", approved)).allow, allow=True)
    assert policy.decide(ws.action("execute", approved)).decision == "allow"
    assert policy.decide(ws.action("execute", later)).decision == "ask", policy.session_allow


ALWAYS_OTHER = [
    ("edit", "src/a.py", ["edit:src/**"], ["edit:src/**"]),
    ("edit", "top.txt", ["edit:**"], ["edit:**"]),
    ("edit", "src/deep/x.py", ["edit:src/deep/**"], ["edit:src/deep/**"]),
    ("edit", "{out}/x.txt", [], ["edit:{out}/**"]),
    ("edit", "link_out/x.txt", [], ["edit:{out}/**"]),
    ("edit", "{extra}/f.txt", ["edit:{extra}/**"], ["edit:{extra}/**"]),
    ("read", "{out}/secret.txt", [], ["read:{out}/**"]),
    ("fetch", "https://docs.example.test/a 93.184.216.34", ["fetch:docs.example.test"], ["fetch:docs.example.test"]),
    ("fetch", "http://127.0.0.1:8000/ 127.0.0.1", [], ["fetch:127.0.0.1"]),
    ("fetch", "http://internal.test/ 10.0.0.5", [], ["fetch:internal.test"]),
    ("mcp-other", "mcp__gh__create_issue", ["other:mcp__gh__create_issue"], ["other:mcp__gh__create_issue"]),
    ("fetch", "http://*.wild.test/ 93.184.216.34", ["fetch:\\*.wild.test"], ["fetch:\\*.wild.test"]),
]


@pytest.mark.parametrize(("kind", "subject", "allow", "deny"), ALWAYS_OTHER)
def test_always_for_files_fetches_and_tools(
    ws: Workspace, kind: str, subject: str, allow: list[str], deny: list[str]
) -> None:
    policy = ws.policy("default")
    offered = offer(policy, ws.action(kind, subject))
    assert [str(r) for r in offered.allow] == [ws.fill(r) for r in allow]
    assert [str(r) for r in offered.deny] == [ws.fill(r) for r in deny]


@pytest.mark.parametrize("folder", ["*", "**", "?rc", "[s]rc", "{src,x}", "s\\rc"])
def test_an_always_for_a_folder_named_like_a_glob_covers_that_folder_only(ws: Workspace, folder: str) -> None:
    """A cloned repository may name a folder `**`: the remembered rule names that folder, not every one."""

    def edit(path: str | Path) -> Action:
        return Action("edit", places=(resolve(path, [ws.work, ws.extra]),))

    (ws.work / folder).mkdir(exist_ok=True)
    policy = ws.policy("default")
    offered = offer(policy, edit(f"{folder}/x.py"))
    assert offered.allow, "an always is offered"
    policy.remember(offered.allow, allow=True)
    assert policy.decide(edit(f"{folder}/x.py")).decision == "allow"
    assert policy.decide(edit(f"{folder}/y.py")).decision == "allow"
    assert policy.decide(edit("src/a.py")).decision == "ask", policy.session_allow
    assert policy.decide(edit("top.txt")).decision == "ask", policy.session_allow
    assert f"`{folder}/`" in offered.choices()[1].label, "the label names the folder as it is"
    (ws.extra / folder).mkdir(exist_ok=True)
    policy.remember(offer(policy, edit(ws.extra / folder / "x.py")).allow, allow=True)
    assert policy.decide(edit(ws.extra / folder / "y.py")).decision == "allow"
    assert policy.decide(edit(ws.extra / "other.txt")).decision == "ask", policy.session_allow


def test_always_allow_edits_in_the_workspace_never_reaches_outside(ws: Workspace) -> None:
    policy = ws.policy("accept-edits")
    policy.remember(offer(policy, ws.action("edit", "top.txt")).allow, allow=True)
    assert [str(r) for r in policy.session_allow] == ["edit:**"]
    for _, path in OUTSIDE_PATHS:
        assert policy.decide(ws.action("edit", path)).decision == "ask", path


def test_stored_rules_broader_than_an_always_are_dropped_on_reopen() -> None:
    stored = ["execute:bash", "execute:python3", "execute:git status", "execute:=python3 -c 'x'", "fetch:*",
              "fetch:docs.example.test", "edit:**", "execute:env", "execute:xargs", "execute:'unbalanced"]  # fmt: skip
    kept = [str(r) for r in restore_rules([*stored, "fetch:\\*.wild.test"], allow=True)]
    assert kept == ["execute:git status", "execute:=python3 -c 'x'", "fetch:docs.example.test", "edit:**",
                    "fetch:\\*.wild.test"]  # fmt: skip
    assert [str(r) for r in restore_rules(["execute:bash"], allow=False)] == ["execute:bash"]


# ---- fetch targets -------------------------------------------------------------------------------------------

LOCAL_ADDRESSES = [
    "127.0.0.1", "127.8.9.10", "10.0.0.1", "172.16.0.1", "172.31.255.254", "192.168.1.1", "169.254.169.254",
    "100.64.0.1", "0.0.0.0", "::1", "::", "fc00::1", "fd00:ec2::254", "fe80::1", "::ffff:127.0.0.1",
    "::ffff:10.0.0.1", "2002:7f00:1::", "64:ff9b::a9fe:a9fe", "224.0.0.1", "198.18.0.1",
    "::7f00:1", "::127.0.0.1", "::a9fe:a9fe", "::ffff:0:7f00:1", "::ffff:0:a9fe:a9fe", "fec0::1",
]  # fmt: skip
PUBLIC_ADDRESSES = ["8.8.8.8", "93.184.216.34", "172.32.0.1", "1.1.1.1", "2606:4700:4700::1111"]


@pytest.mark.parametrize("address", LOCAL_ADDRESSES)
def test_local_and_private_fetch_targets_ask_in_every_mode(ws: Workspace, address: str) -> None:
    assert why_local(address) is not None
    subject = f"http://some.host.test/ {address}"
    for mode in ("default", "accept-edits", "full-auto"):
        policy = ws.policy(mode, allow=("fetch:*", "fetch:*.test"), session=("fetch:some.host.test",))
        assert policy.decide(ws.action("fetch", subject)).decision == "ask", mode


@pytest.mark.parametrize("address", PUBLIC_ADDRESSES)
def test_public_fetch_targets_follow_the_mode(ws: Workspace, address: str) -> None:
    assert why_local(address) is None
    subject = f"https://docs.example.test/ {address}"
    assert ws.policy("full-auto").decide(ws.action("fetch", subject)).decision == "allow"
    assert ws.policy("default").decide(ws.action("fetch", subject)).decision == "ask"
    assert ws.policy("read-only").decide(ws.action("fetch", subject)).decision == "ask"


FETCH: list[Row] = [
    ("one-address-of-many-local", "full-auto", (), (), (), "fetch", "http://a.test/ 8.8.8.8,127.0.0.1", "ask"),
    ("user-config-names-local-host", "default", ("fetch:127.0.0.1",), (), (), "fetch",
     "http://127.0.0.1:8000/ 127.0.0.1", "allow"),
    ("user-config-names-localhost", "default", ("fetch:localhost",), (), (), "fetch",
     "http://localhost:3000/ 127.0.0.1", "allow"),
    ("session-cannot-name-local", "default", (), (), ("fetch:localhost",), "fetch", "http://localhost/ 127.0.0.1",
     "ask"),
    ("always-is-one-host", "default", (), (), ("fetch:docs.example.test",), "fetch",
     "https://docs.example.test/x 93.184.216.34", "allow"),
    ("always-not-other-host", "default", (), (), ("fetch:docs.example.test",), "fetch",
     "https://evil.example.test/ 93.184.216.34", "ask"),
    ("glob-host-rule", "default", ("fetch:*.example.test",), (), (), "fetch", "https://a.example.test/ 1.1.1.1",
     "allow"),
    ("decimal-ip-host", "full-auto", (), (), (), "fetch", "http://2130706433/ 127.0.0.1", "ask"),
    ("always-for-a-star-host-is-that-host", "default", (), (), ("fetch:\\*.wild.test",), "fetch",
     "https://a.wild.test/ 93.184.216.34", "ask"),
]  # fmt: skip


@pytest.mark.parametrize("row", rows(*FETCH))
def test_fetch_rules(ws: Workspace, row: Row) -> None:
    verdict = ws.decide(row)
    assert verdict.decision == row[-1], verdict.reason


# ---- modes × other kinds -------------------------------------------------------------------------------------

MODES_TABLE: list[Row] = [
    ("mcp-read-default", "default", (), (), (), "mcp-read", "mcp__fs__list", "allow"),
    ("mcp-other-default", "default", (), (), (), "mcp-other", "mcp__gh__create", "ask"),
    ("mcp-other-accept-edits", "accept-edits", (), (), (), "mcp-other", "mcp__gh__create", "ask"),
    ("mcp-other-full-auto", "full-auto", (), (), (), "mcp-other", "mcp__gh__create", "allow"),
    ("mcp-other-read-only", "read-only", (), (), (), "mcp-other", "mcp__gh__create", "deny"),
    ("mcp-delete-rule", "default", (), (), ("delete:mcp__gh__delete",), "mcp-delete", "mcp__gh__delete", "allow"),
    ("mcp-glob-rule", "default", ("other:mcp__gh__*",), (), (), "mcp-other", "mcp__gh__create", "allow"),
    ("mcp-glob-other-server", "default", ("other:mcp__gh__*",), (), (), "mcp-other", "mcp__jira__create", "ask"),
]


@pytest.mark.parametrize("row", rows(*MODES_TABLE))
def test_modes_and_mcp_tools(ws: Workspace, row: Row) -> None:
    verdict = ws.decide(row)
    assert verdict.decision == row[-1], verdict.reason


# ---- keys stay home ------------------------------------------------------------------------------------------

ENVIRON = {
    "PATH": "/usr/bin",
    "HOME": "/home/u",
    "HARMLESS_SETTING": "visible",
    "OPENAI_API_KEY": "sk-openai-0123456789",
    "ANTHROPIC_API_KEY": "sk-ant-0123456789",
    "AZURE_API_BASE": "https://x.openai.azure.test",
    "AZURE_CLIENT_SECRET": "azure-secret-0123",
    "COHERE_API_KEY": "cohere-0123456789",
    "CO_API_KEY": "cohere-short-alias",
    "HF_TOKEN": "hf_0123456789abcdef",
    "AWS_ACCESS_KEY_ID": "AKIA0123456789",
    "AWS_SECRET_ACCESS_KEY": "aws-secret-0123456789",
    "AWS_PROFILE": "work",
    "CODER_AGENT_API_KEY": "sk-agent-0123456789",
    "MY_CUSTOM_KEY": "custom-0123456789",
    "GROQ_API_KEY": "gsk_0123456789",
    "XAI_API_KEY": "xai-0123456789",
}
SCRUBBED = sorted(set(ENVIRON) - {"PATH", "HOME", "HARMLESS_SETTING"})


@pytest.mark.parametrize("name", SCRUBBED)
def test_child_processes_get_no_key(name: str) -> None:
    secrets.add_key_variable("MY_CUSTOM_KEY")
    env = secrets.child_environ(ENVIRON)
    assert name not in env
    assert {"PATH", "HOME", "HARMLESS_SETTING"} <= set(env)
    assert secrets.editor_terminal_env(ENVIRON)[name] == ""
    if len(ENVIRON[name]) >= secrets.MIN_SECRET_LENGTH:
        assert ENVIRON[name] not in secrets.redact(f"x {ENVIRON[name]} y", ENVIRON)


def test_short_values_and_other_variables_are_not_redacted() -> None:
    env = {"OPENAI_API_KEY": "short", "HARMLESS_SETTING": "visible-value-123"}
    assert secrets.redact("short visible-value-123", env) == "short visible-value-123"


def test_log_lines_are_redacted(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-log-leak-0123456789")
    logger = logging.getLogger("test.redaction")
    handler = caplog.handler
    handler.addFilter(secrets.RedactingFilter())
    try:
        logger.warning("frame: %s", {"text": "key=sk-ant-log-leak-0123456789"})
    finally:
        handler.removeFilter(handler.filters[-1])
    assert "sk-ant-log-leak" not in caplog.text
    assert "[redacted ANTHROPIC_API_KEY]" in caplog.text


# ---- the property: a denied simple command is never allowed ------------------------------------------------

RM_NAMES = ["rm", "/bin/rm", "/usr/bin/rm", "\\rm", "'rm'", '"rm"', "r\\m", "r''m", '"r"m']
RM_PREFIXES = ["", "X=1 ", "command ", "sudo ", "env ", "env -i ", "nohup ", "timeout 5 ", "nice -n 3 ", "time ",
               "stdbuf -oL ", "setsid ", "exec ", "sudo -u x env A=b timeout 1 "]  # fmt: skip
BENIGN = ["echo x", "ls -la", "git status", "true", "cat f", "pytest -q", "grep -r x .", "make"]

benign = st.sampled_from(BENIGN).map(lambda text: (text, False))
denied = st.builds(
    lambda prefix, name, args: (f"{prefix}{name} {args}".rstrip(), True),
    st.sampled_from(RM_PREFIXES),
    st.sampled_from(RM_NAMES),
    st.sampled_from(["", "-rf x", "f", "-- -f", "'a b'"]),
)


FORMS = ["subshell", "group", "subst", "procsub", "bash", "sh", "eval", "if", "for", "func", "not", "background",
         "xargs-sh", "find-exec", "sudo-sh", "watch", "git-rebase", "git-alias", "zip", "sqlite", "ssh-proxy",
         "tar-checkpoint", "vim", "make-var"]  # fmt: skip


def _combine(children: st.SearchStrategy[tuple[str, bool]]) -> st.SearchStrategy[tuple[str, bool]]:
    def join(op: str, a: tuple[str, bool], b: tuple[str, bool]) -> tuple[str, bool]:
        return f"{a[0]} {op} {b[0]}", a[1] or b[1]

    def wrap(form: str, a: tuple[str, bool]) -> tuple[str, bool]:
        text = a[0]
        quoted = shlex.quote(text)
        forms = {
            "subshell": f"( {text} )",
            "group": f"{{ {text}; }}",
            "subst": f"echo $( {text} )",
            "procsub": f"cat <( {text} )",
            "bash": f"bash -c {quoted}",
            "sh": f"sh -c {quoted}",
            "eval": f"eval {quoted}",
            "if": f"if true; then {text}; fi",
            "for": f"for i in 1 2; do {text}; done",
            "func": f"f() {{ {text}; }}; f",
            "not": f"! {text}",
            "background": f"{text} &",
            "xargs-sh": f"echo | xargs sh -c {quoted}",
            "find-exec": f"find . -exec sh -c {quoted} \\;",
            "sudo-sh": f"sudo sh -c {quoted}",
            "watch": f"watch -n 1 {quoted}",
            "git-rebase": f"git rebase -x {quoted} main",
            "git-alias": f"git -c alias.x={shlex.quote('!' + text)} x",
            "zip": f"zip a.zip f -T -TT {quoted}",
            "sqlite": f"sqlite3 db {shlex.quote('.shell ' + text)}",
            "ssh-proxy": f"ssh -o ProxyCommand={quoted} host",
            "tar-checkpoint": f"tar --checkpoint-action=exec={quoted} -cf a.tar .",
            "vim": f"vim -c {shlex.quote('!' + text)}",
            "make-var": f"make CC={quoted}",
        }
        return forms[form], a[1]

    ops = st.sampled_from(["&&", "||", ";", "|", "&"])
    forms = st.sampled_from(FORMS)
    return st.one_of(st.builds(join, ops, children, children), st.builds(wrap, forms, children))


command_lines = st.recursive(st.one_of(benign, denied), _combine, max_leaves=6).filter(lambda pair: pair[1])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(line=command_lines)
@example(line=("sqlite3 db '.shell bash -c '\"'\"'X=1 r\\m'\"'\"''", True))  # found in CI: sqlite3 re-quotes the words
def test_no_command_line_running_a_denied_command_is_ever_allowed(ws: Workspace, line: tuple[str, bool]) -> None:
    text, _ = line
    action = ws.action("execute", text)
    for mode, allow in (("full-auto", ("execute:*",)), ("default", ("execute:*", "execute:rm")), ("full-auto", ())):
        policy = ws.policy(mode, allow=allow, deny=("execute:rm",))
        verdict = policy.decide(action)
        assert verdict.decision != "allow", (text, mode, verdict.reason)


# ---- why it asks ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("subject", "by_mode"),
    [("src/a.py", True), ("{out}/x.txt", False), (".git/config", False), ("hard", False)],
)
def test_the_verdict_says_when_only_the_mode_asks(ws: Workspace, subject: str, by_mode: bool) -> None:
    verdict = ws.policy("default").decide(ws.action("edit", ws.fill(subject)))
    assert verdict.decision == "ask"
    assert verdict.by_mode is by_mode
