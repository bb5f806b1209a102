"""Rules that let programs run: the flags and arguments through which a program runs another command, in every
spelling its own option parser accepts, as a table. Each row is tried twice:

* the allow-rule case: under the rule a user would write for the program (`execute:git grep`), the row's command
  with a harmless command in it (`echo hi`) is not allowed by that rule (it asks), while the plain command is;
* the deny case: in full-auto with `deny = ["execute:rm"]`, the row's command with `rm` inside (disguised by quoting
  so that only parsing the string finds it) is denied; a row whose program runs what its words do not show asks.

Then the visible writes of full-auto (attached short flags, links made earlier on the line, CDPATH, quoted pieces,
every redirection operator, globs) as a table of their own.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from coder_agent.permissions import analyse
from tests.unit.permissions.workspace import Workspace, make_workspace


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    return make_workspace(tmp_path_factory)


BENIGN = "echo hi"
DENIED = "r\\m -rf f"
"""`rm -rf f` as a shell reads it: the backslash hides it from anything that does not parse the string."""

# (rule, the plain command the rule allows, the command with {c} (the command string, quoted), {b} (quoted, after a
# `!`), {w} (as words)); ran: True when the string is parsed (the deny case denies), False when it is hidden (asks)
RUNS: list[tuple[str, str, str, bool]] = [
    # git
    ("execute:git grep", "git grep -n x", "git grep -O{c} x", True),
    ("execute:git grep", "git grep -n x", "git grep -iO{c} x", True),
    ("execute:git grep", "git grep -n x", "git grep --open-files-in-pager={c} x", True),
    ("execute:git grep", "git grep -n x", "git grep --open={c} x", True),
    ("execute:git grep", "git grep -n x", "git grep -O x", False),
    ("execute:git rebase", "git rebase main", "git rebase -x {c} main", True),
    ("execute:git rebase", "git rebase main", "git rebase -x{c} main", True),
    ("execute:git rebase", "git rebase main", "git rebase -ix {c} main", True),
    ("execute:git rebase", "git rebase main", "git rebase --exec={c} main", True),
    ("execute:git rebase", "git rebase main", "git rebase --exe {c} main", True),
    ("execute:git difftool", "git difftool HEAD", "git difftool -x {c}", True),
    ("execute:git difftool", "git difftool HEAD", "git difftool -yx{c}", True),
    ("execute:git difftool", "git difftool HEAD", "git difftool --extcmd={c}", True),
    ("execute:git difftool", "git difftool HEAD", "git difftool --extc {c}", True),
    ("execute:git clone", "git clone https://h/r d", "git clone -u {c} https://h/r d", True),
    ("execute:git clone", "git clone https://h/r d", "git clone -u{c} https://h/r d", True),
    ("execute:git clone", "git clone https://h/r d", "git clone --upload-pack={c} /srv/r d", True),
    ("execute:git clone", "git clone https://h/r d", "git clone --upload {c} /srv/r d", True),
    ("execute:git clone", "git clone https://h/r d", "git clone -c core.sshCommand={c} ssh://h/r d", True),
    ("execute:git clone", "git clone https://h/r d", "git clone --config=core.fsmonitor={c} /srv/r d", True),
    ("execute:git clone", "git clone https://h/r d", "git clone --template=/srv/t https://h/r d", False),
    ("execute:git clone", "git clone https://h/r d", "git clone 'ext::sh -c {w}' d", True),
    ("execute:git fetch", "git fetch origin", "git fetch --upload-pack={c} origin", True),
    ("execute:git pull", "git pull origin", "git pull --upload-pack {c} origin", True),
    ("execute:git push", "git push origin", "git push --receive-pack={c} origin", True),
    ("execute:git ls-remote", "git ls-remote origin", "git ls-remote --exec={c} origin", True),
    ("execute:git log", "git log -n 3", "git log --ext-diff", False),
    ("execute:git log", "git log -n 3", "git log --ext", False),
    ("execute:git diff", "git diff --text", "git diff --textconv", False),
    ("execute:git diff", "git diff --text", "git diff --textc", False),
    ("execute:git", "git status", "git -c core.pager={c} log", True),
    ("execute:git", "git status", "git -c alias.x={b} x", True),
    ("execute:git", "git status", "git -c alias.x='grep -O{w}' x", True),
    ("execute:git", "git status", "git -c core.fsmonitor={c} status", True),
    ("execute:git", "git status", "git -c credential.helper={b} fetch", True),
    ("execute:git", "git status", "git -c diff.x.textconv={c} diff", True),
    ("execute:git", "git status", "git -c filter.x.clean={c} add .", True),
    ("execute:git", "git status", "git -c core.hooksPath=/srv/h commit", False),
    ("execute:git", "git status", "git --config-env=core.pager=PAGER_CMD log", False),
    ("execute:git", "git status", "git --exec-path=/srv/bin status", False),
    ("execute:git config", "git config user.name me", "git config alias.x {b}", True),
    ("execute:git config", "git config user.name me", "git config --global core.pager {c}", True),
    ("execute:git config", "git config user.name me", "git config set core.sshCommand {c}", True),
    ("execute:git config", "git config user.name me", "git config -f .git/config core.editor {c}", True),
    ("execute:git submodule", "git submodule update", "git submodule foreach {c}", True),
    ("execute:git submodule", "git submodule update", "git submodule foreach --recursive {c}", True),
    ("execute:git bisect", "git bisect good", "git bisect run {w}", True),
    ("execute:git filter-branch", "git filter-branch -f", "git filter-branch --tree-filter {c} HEAD", True),
    ("execute:git send-email", "git send-email x.patch", "git send-email --sendmail-cmd={c} x.patch", True),
    # make
    ("execute:make test", "make test -j4", "make test -kE 'x:;${{shell {w}}}'", False),
    ("execute:make test", "make test -j4", "make test -E {c}", False),
    ("execute:make test", "make test -j4", "make test --eval={c}", False),
    ("execute:make test", "make test -j4", "make test --ev {c}", False),
    ("execute:make test", "make test -j4", "make test -kf /srv/x.mk", False),
    ("execute:make test", "make test -j4", "make test -C/srv", False),
    ("execute:make test", "make test -j4", "make test CC={c}", True),
    ("execute:make test", "make test -j4", "make test SHELL={c}", True),
    # zip and tar
    ("execute:zip", "zip -r a.zip src", "zip a.zip f -T -TT {c}", True),
    ("execute:zip", "zip -r a.zip src", "zip a.zip f -T -TT={c}", True),
    ("execute:zip", "zip -r a.zip src", "zip a.zip f -T -TT{c}", True),
    ("execute:zip", "zip -r a.zip src", "zip a.zip f -qTT {c}", True),
    ("execute:zip", "zip -r a.zip src", "zip a.zip f -T --unzip-command={c}", True),
    ("execute:zip", "zip -r a.zip src", "zip a.zip f -T --unzip-c {c}", True),
    ("execute:tar", "tar -xf a.tar", "tar --to-command={c} -xf a.tar", True),
    ("execute:tar", "tar -xf a.tar", "tar --to-c {c} -xf a.tar", True),
    ("execute:tar", "tar -xf a.tar", "tar --checkpoint=1 --checkpoint-action=exec={c} -xf a.tar", True),
    ("execute:tar", "tar -xf a.tar", "tar -I {c} -xf a.tar", True),
    ("execute:tar", "tar -xf a.tar", "tar -xf a.tar -I{c}", True),
    ("execute:tar", "tar -xf a.tar", "tar -xvI {c} -f a.tar", True),
    ("execute:tar", "tar -xf a.tar", "tar xIf {c} a.tar", True),
    ("execute:tar", "tar -xf a.tar", "tar --use-compress-program={c} -xf a.tar", True),
    ("execute:tar", "tar -xf a.tar", "tar --use-c={c} -xf a.tar", True),
    ("execute:tar", "tar -xf a.tar", "tar -F {c} -xf a.tar", True),
    ("execute:tar", "tar -xf a.tar", "tar --rsh-command={c} -xf h:a.tar", True),
    # sqlite3
    ("execute:sqlite3", "sqlite3 db 'select 1'", "sqlite3 db {dot_shell}", True),
    ("execute:sqlite3", "sqlite3 db 'select 1'", "sqlite3 db {dot_system}", True),
    ("execute:sqlite3", "sqlite3 db 'select 1'", "sqlite3 -cmd {dot_shell} db 'select 1'", True),
    ("execute:sqlite3", "sqlite3 db 'select 1'", "sqlite3 --cmd {dot_shell} db 'select 1'", True),
    ("execute:sqlite3", "sqlite3 db 'select 1'", "sqlite3 db 'select 1' {dot_shell}", True),
    ("execute:sqlite3", "sqlite3 db 'select 1'", "sqlite3 db {dot_once}", True),
    ("execute:sqlite3", "sqlite3 db 'select 1'", "sqlite3 db {dot_read}", True),
    ("execute:sqlite3", "sqlite3 db 'select 1'", "sqlite3 db", False),
    ("execute:sqlite3", "sqlite3 db 'select 1'", "echo .tables | sqlite3 db", False),
    ("execute:sqlite3", "sqlite3 db 'select 1'", "sqlite3 db '.read x.sql'", False),
    ("execute:sqlite3", "sqlite3 db 'select 1'", "sqlite3 db '.load ./x'", False),
    ("execute:sqlite3", "sqlite3 db 'select 1'", "sqlite3 db \"select edit('x', 'vi')\"", False),
    ("execute:sqlite3", "sqlite3 db 'select 1'", "sqlite3 -init x.sql db 'select 1'", False),
    # ssh, scp, sftp, rsync
    ("execute:ssh", "ssh host uptime", "ssh -o ProxyCommand={c} host", True),
    ("execute:ssh", "ssh host uptime", "ssh -oProxyCommand={c} host", True),
    ("execute:ssh", "ssh host uptime", "ssh -o 'proxycommand '{c} host", True),
    ("execute:ssh", "ssh host uptime", "ssh -o PermitLocalCommand=yes -o LocalCommand={c} host", True),
    ("execute:ssh", "ssh host uptime", "ssh -o KnownHostsCommand={c} host", True),
    ("execute:ssh", "ssh host uptime", "ssh -F ./cfg host", False),
    ("execute:ssh", "ssh host uptime", "ssh -o PKCS11Provider=./x.so host", False),
    ("execute:scp", "scp a host:b", "scp -S {c} a host:b", True),
    ("execute:scp", "scp a host:b", "scp -o ProxyCommand={c} a host:b", True),
    ("execute:sftp", "sftp host", "sftp -b batch host", False),
    ("execute:rsync", "rsync -a src/ host:dst/", "rsync -e {c} -a src/ host:dst/", True),
    ("execute:rsync", "rsync -a src/ host:dst/", "rsync -ave {c} src/ host:dst/", True),
    ("execute:rsync", "rsync -a src/ host:dst/", "rsync --rsh={c} -a src/ host:dst/", True),
    # pagers, editors, little languages
    ("execute:less", "less README.md", "less +!{w} README.md", True),
    ("execute:less", "less README.md", "less -k keys README.md", False),
    ("execute:man", "man ls", "man -P {c} ls", True),
    ("execute:man", "man ls", "man --pager={c} ls", True),
    ("execute:man", "man ls", "man -H{c} ls", True),
    ("execute:vim", "vim README.md", "vim -c {b} README.md", True),
    ("execute:vim", "vim README.md", "vim +{b} README.md", True),
    ("execute:vim", "vim README.md", "vim --cmd {b} README.md", True),
    ("execute:vim", "vim README.md", "vim -c 'r !'{c} README.md", True),
    ("execute:vim", "vim README.md", "vim -c 'call system(\"x\")' README.md", False),
    ("execute:vim", "vim README.md", "vim -S x.vim README.md", False),
    ("execute:awk", "awk '{{print $1}}' f", "awk {awk_system} f", True),
    ("execute:awk", "awk '{{print $1}}' f", "awk {awk_pipe} f", True),
    ("execute:awk", "awk '{{print $1}}' f", 'awk \'BEGIN{{system("r" "m f")}}\' f', False),
    ("execute:awk", "awk '{{print $1}}' f", "awk 'BEGIN{{c=\"x\"; c | getline}}' f", False),
    ("execute:sed", "sed -n 1,5p f", "sed {sed_e} f", True),
    ("execute:sed", "sed -n 1,5p f", "sed -n -e p -e {sed_e} f", True),
    ("execute:sed", "sed -n 1,5p f", "sed 's/x/y/e' f", False),
    # other programs the rules commonly allow
    ("execute:find", "find . -name x", "find . -exec {w} ';'", True),
    ("execute:find", "find . -name x", "find . -okdir {w} +", True),
    ("execute:go test", "go test ./...", "go test -exec={c} ./...", True),
    ("execute:go test", "go test ./...", "go test -toolexec {c} ./...", True),
    ("execute:go test", "go test ./...", "go test --exec {c} ./...", True),
    ("execute:cargo build", "cargo build --release", "cargo build --config 'build.rustc-wrapper=\"x\"'", False),
    ("execute:npm test", "npm test", "npm test --script-shell={c}", True),
    ("execute:npm test", "npm test", "npm test --prefix /srv/other", False),
    ("execute:pip install", "pip install -e .", "pip install /srv/pkg", False),
    ("execute:pip install", "pip install -e .", "pip install -e ../other", False),
    ("execute:wget", "wget https://h/x", "wget --use-askpass={c} https://h/x", True),
    ("execute:wget", "wget https://h/x", "wget -e robots=off https://h/x", False),
    ("execute:curl", "curl https://h/x", "curl -K cfg https://h/x", False),
    ("execute:curl", "curl https://h/x", "curl -sK cfg https://h/x", False),
    ("execute:eslint", "eslint .", "eslint -c /srv/x.config.js .", False),
    # variables whose value a program runs, or that make it load what they name
    ("execute:git fetch", "git fetch origin", "GIT_SSH_COMMAND={c} git fetch origin", True),
    ("execute:git fetch", "git fetch origin", "env GIT_SSH_COMMAND={c} git fetch origin", True),
    ("execute:git fetch", "git fetch origin", "export GIT_SSH_COMMAND={c}; git fetch origin", True),
    ("execute:git log", "git log -n 3", "PAGER={c} git log -n 3", True),
    ("execute:less", "less README.md", "LESSOPEN='|'{c} less README.md", True),
    ("execute:ls", "ls -la", "LD_PRELOAD=./x.so ls -la", False),
    ("execute:make test", "make test -j4", "MAKEFLAGS=-E make test", False),
    ("execute:git log", "git log -n 3", "GIT_CONFIG_PARAMETERS='core.pager=x' git log", False),
]


def fill(template: str, command: str) -> str:
    return template.format(
        c=shlex.quote(command),
        b=shlex.quote(f"!{command}"),
        w=command,
        dot_shell=shlex.quote(f".shell {command}"),
        dot_system=shlex.quote(f".system {command}"),
        dot_once=shlex.quote(f".once '|{command}'"),
        dot_read=shlex.quote(f".read '|{command}'"),
        awk_system=shlex.quote('BEGIN{system("' + command.replace("\\", "\\\\") + '")}'),
        awk_pipe=shlex.quote('{print | "' + command.replace("\\", "\\\\") + '"}'),
        sed_e=shlex.quote(f"1e {command}"),
    )


def ids(table: list[tuple[str, str, str, bool]]) -> list[str]:
    return [f"{row[2]}" for row in table]


@pytest.mark.parametrize(("rule", "plain", "template", "ran"), RUNS, ids=ids(RUNS))
def test_an_allow_rule_does_not_let_the_program_run_another(
    ws: Workspace, rule: str, plain: str, template: str, ran: bool
) -> None:
    policy = ws.policy("default", allow=(rule,))
    assert policy.decide(ws.action("execute", fill(plain, BENIGN))).decision == "allow", "the rule works"
    command = fill(template, BENIGN)
    line = analyse(command)
    assert line.understood, line.problems
    verdict = policy.decide(ws.action("execute", command))
    assert verdict.decision == "ask", (command, verdict.reason)
    assert any(c.exact_only for c in line.commands)
    exact = ws.policy("default", allow=(f"execute:={command}".replace("{", "{{").replace("}", "}}"),))
    if "|" not in command:
        assert exact.decide(ws.action("execute", command)).decision == "allow", "an exact rule allows it"


@pytest.mark.parametrize(("rule", "plain", "template", "ran"), RUNS, ids=ids(RUNS))
def test_a_deny_rule_looks_inside_the_strings_programs_run(
    ws: Workspace, rule: str, plain: str, template: str, ran: bool
) -> None:
    command = fill(template, DENIED)
    line = analyse(command)
    for mode in ("full-auto", "auto"):
        policy = ws.policy(mode, allow=("execute:*", rule), deny=("execute:rm",))
        policy.sandboxed = True
        verdict = policy.decide(ws.action("execute", command))
        if ran:
            assert verdict.decision == "deny", (command, mode, verdict.reason, line)
        else:
            assert verdict.decision == "ask", (command, mode, verdict.reason, line)
    assert ws.policy("full-auto").decide(ws.action("execute", command)).decision == "allow", "no deny rule: runs"


# ---- the visible writes of full-auto --------------------------------------------------------------------------

WRITES = [
    # attached short flags and combined ones
    ("curl -sSLo {out}/f https://h/x", "ask"),
    ("curl -sSLo f https://h/x", "allow"),
    ("curl -o{out}/f https://h/x", "ask"),
    ("wget -qO{out}/f https://h/x", "ask"),
    ("wget -qO- https://h/x", "allow"),
    ("wget -P{out} https://h/x", "ask"),
    ("sort -o{out}/f x", "ask"),
    ("sort -ro{out}/f x", "ask"),
    ("install -Dt {out} x", "ask"),
    ("cp -at {out} x", "ask"),
    ("mv -ft{out} x", "ask"),
    ("ln -st {out} x", "ask"),
    ("tar -C {out} -xf a.tar", "ask"),
    ("tar -xf a.tar -C{out}", "ask"),
    ("tar --directory={out} -xf a.tar", "ask"),
    ("tar --dir {out} -xf a.tar", "ask"),
    ("tar xfC a.tar {out}", "ask"),
    ("tar -czf {out}/a.tgz src", "ask"),
    ("tar -czf a.tgz src", "allow"),
    ("unzip -d{out} a.zip", "ask"),
    ("unzip -qd {out} a.zip", "ask"),
    ("unzip a.zip -d {out}", "ask"),
    ("strace -o{out}/log ls", "ask"),
    ("strace -o /dev/null ls", "allow"),
    ("git archive -o{out}/a.tar HEAD", "ask"),
    ("find . -fprint {out}/x", "ask"),
    ("gcc -o{out}/a.out a.c", "ask"),
    # what the little languages write
    ("sed -n 'w {out}/x' f", "ask"),
    ("sed 's/a/b/w {out}/x' f", "ask"),
    ("sed 's/a/b/w /dev/stdout' f", "allow"),
    ("awk '{{print > \"{out}/x\"}}' f", "ask"),
    ("sqlite3 db '.output {out}/x' 'select 1'", "ask"),
    ("sqlite3 db \"vacuum into '{out}/x'\"", "ask"),
    ("vim -c 'w {out}/x' -c q f", "ask"),
    # a link made earlier on the same line, and folders other commands make
    ("ln -s {out} x && echo hi > x/f", "ask"),
    ("ln -s {out} x; cd x; touch f", "ask"),
    ("ln -s {out} x && echo hi > x/../f", "ask"),
    ("cp -a link_out y && echo hi > y/f", "ask"),
    ("mkdir -p build && echo hi > build/f", "allow"),
    ("mkdir -p build/a && cd build/a && touch f", "allow"),
    ("mkdir x && ln -s {out} x/y && echo hi > x/y/f", "ask"),
    ("echo hi > newdir/f", "allow"),
    # CDPATH sends a relative cd elsewhere
    ("export CDPATH={out}; cd sub && touch f", "ask"),
    ("CDPATH={root} cd outside && touch f", "ask"),
    ("cd ./src && touch f", "allow"),
    # quoted pieces, every redirection operator, globs and braces
    ('echo hi > "{out}"/f', "ask"),
    ("echo hi > '{out}'/f", "ask"),
    ('echo hi > "{out}/"f', "ask"),
    ("echo hi 1<>{out}/f", "ask"),
    ("echo hi <>{out}/f", "ask"),
    ("exec 3<>{out}/f", "ask"),
    ("echo hi >| {out}/f", "ask"),
    ("echo hi &>> {out}/f", "ask"),
    ("echo hi >& {out}/f", "ask"),
    ("echo hi 2> {out}/f", "ask"),
    ("echo hi >> l*/secret.txt", "ask"),
    ("echo hi > link_o?t/secret.txt", "ask"),
    ("echo hi > link_f*", "ask"),
    ("rm -rf l*/secret.txt", "ask"),
    ("echo hi > l*/new", "allow"),  # no match: the word stays as written (and the write fails)
    ("rm -rf {{{out},x}}", "ask"),
    ("rm -rf build/*", "allow"),
    ("echo hi > 'l*'/f", "allow"),
]


@pytest.mark.parametrize(("command", "expected"), WRITES, ids=[row[0] for row in WRITES])
def test_full_auto_asks_for_a_visible_write_outside(ws: Workspace, command: str, expected: str) -> None:
    text = command.format(out=ws.out, root=ws.root)
    verdict = ws.policy("full-auto").decide(ws.action("execute", text))
    assert verdict.decision == expected, (text, verdict.reason, analyse(text))


def test_a_cdpath_in_the_environment_makes_a_relative_cd_unknown(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    command = "cd src && touch f"
    assert ws.policy("full-auto").decide(ws.action("execute", command)).decision == "allow"
    monkeypatch.setenv("CDPATH", str(ws.out))
    verdict = ws.policy("full-auto").decide(ws.action("execute", command))
    assert verdict.decision == "ask", verdict.reason
    assert Path(ws.work / "src").is_dir()
