"""Bypasses a held-out attacker found in the policy, each tried for real against a workspace in `tmp_path`: a
redirection on a function's definition (it writes whenever the function runs), npm's own option spellings (a
long name shortened, one or three dashes), files `sed -i`, `perl -i`, `split`, `csplit` and `find -delete`
change by naming them, what test runners write, a tilde bash reads as a folder, a wrapper's folder, and
invisible characters in what a person is shown."""

from __future__ import annotations

import pytest

from coder_agent.visible import visible
from tests.unit.permissions.workspace import Workspace, make_workspace


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    return make_workspace(tmp_path_factory)


@pytest.mark.parametrize(
    ("allow", "command"),
    [
        ("execute:ls", "ls() { command ls; } > {out}/x; ls"),
        ("execute:ls", "ls() { command ls; } >> ~/.bashrc; ls"),
        ("execute:echo", "function echo { builtin echo hi; } 2> {out}/x; echo hi"),
        ("execute:echo", "f() ( echo hi ) &> {out}/x; f"),
        ("execute:*", "f() { echo hi; } > {out}/x; f"),
    ],
)
def test_a_redirection_on_a_function_definition_is_a_write(ws: Workspace, allow: str, command: str) -> None:
    """bash applies a function definition's redirections each time the function runs: `f() { …; } > F` writes F."""
    for mode in ("default", "full-auto"):
        line = command.replace("{out}", str(ws.out))  # the braces of a function body are not a format field
        verdict = ws.policy(mode, allow=(allow,)).decide(ws.action("execute", line))
        assert verdict.decision == "ask", (mode, verdict)
        assert "outside the workspace" in verdict.reason


def test_a_redirection_on_a_function_definition_inside_the_workspace_is_still_allowed(ws: Workspace) -> None:
    verdict = ws.policy("full-auto").decide(ws.action("execute", "f() { echo hi; } > out.txt; f"))
    assert verdict.decision == "allow"


@pytest.mark.parametrize(
    "command",
    [
        "npm test --scr=/srv/drop/sh",  # npm expands a unique prefix (`--scr` is `--script-shell`)
        "npm test --scr /srv/drop/sh",
        "npm test -script-shell=/srv/drop/sh",  # one dash
        "npm test -scr=/srv/drop/sh",
        "npm test ---script-shell=/srv/drop/sh",  # three dashes
        "npm test --node-o=--require=/srv/drop/x.js",
        "npm test --userc=/srv/drop/npmrc",
        "npm test --globalc=/srv/drop/npmrc",
        "npm test --pref=/tmp",
        "pnpm test --scr=/srv/drop/sh",
    ],
)
def test_npm_options_in_every_spelling_npm_accepts_are_not_covered_by_a_prefix_rule(
    ws: Workspace, command: str
) -> None:
    program = command.split()[0]
    verdict = ws.policy(allow=(f"execute:{program} test",)).decide(ws.action("execute", command))
    assert verdict.decision == "ask", verdict


def test_npm_abbreviated_script_shell_is_seen_by_a_deny_rule(ws: Workspace) -> None:
    verdict = ws.policy("full-auto", deny=("execute:rm",)).decide(ws.action("execute", "npm test --scr='rm -rf x'"))
    assert verdict.decision == "deny", verdict


@pytest.mark.parametrize(
    "command", ["npm test", "npm test -s", "npm test --silent", "npm test -- --watch", "npm run lint --if-present"]
)
def test_plain_npm_commands_are_still_covered(ws: Workspace, command: str) -> None:
    allow = f"execute:npm {command.split()[1]}"
    assert ws.policy(allow=(allow,)).decide(ws.action("execute", command)).decision == "allow"


@pytest.mark.parametrize(
    "command",
    [
        "sed -i s/a/b/ {out}/x",
        "sed --in-place s/a/b/ {out}/x",
        "sed -ni s/a/b/p {out}/x",
        "sed -s -i -e s/a/b/ {out}/x",
        "sed -i '/^#/d' src/a.py {out}/x",
        "sed -i.bak -f script.sed {out}/x",
        "gsed -i s/a/b/ {out}/x",
        "perl -pi -e s/a/b/ {out}/x",
        "perl -i.bak -pe s/a/b/ {out}/x",
        "split a.txt {out}/pre",
        "split -l 10 a.txt {out}/pre",
        "csplit --prefix={out}/p a.txt 1",
        "csplit -f {out}/p a.txt 1",
        "csplit -f{out}/p a.txt 1",
        "find {out} -delete",
        "find src {out} -name '*.pyc' -delete",
        "pytest --debug={out}/x.log",
        "pytest -o cache_dir={out}/c",
        "pytest --override-ini log_file={out}/l",
        "python -m pytest -o cache_dir={out}/c",
        "go test -trace={out}/t",
        "go test -cpuprofile {out}/c",
        "go test --blockprofile={out}/b",
        "go test -outputdir={out} -cpuprofile=c",
        "go test -coverprofile={out}/c",
        "env -C {out} touch x",  # a wrapper that changes the folder is followed like a cd
        "env --chdir={out} touch x",
        "env -C{out} rm -rf x",
        "env -C {out} sh -c 'echo hi > x'",
        "sudo -D {out} touch x",
        "sudo --chdir {out} touch x",
    ],
)
def test_files_a_command_visibly_writes_outside_the_workspace_ask_in_full_auto(ws: Workspace, command: str) -> None:
    verdict = ws.policy("full-auto").decide(ws.action("execute", ws.fill(command)))
    assert verdict.decision == "ask", verdict
    assert "outside the workspace" in verdict.reason


@pytest.mark.parametrize(
    "command",
    [
        "sed -i '/^#/d' src/a.py",
        "sed -i -e 's|/etc|x|' src/a.py",
        "perl -pi -e s/a/b/ src/a.py",
        "split -l 10 src/a.py part_",
        "csplit -f part_ src/a.py 1",
        "sed -n p {out}/secret.txt",
        "find . -name '*.pyc' -delete",
        "find {out} -name x -print",
    ],
)
def test_in_place_edits_and_splits_inside_the_workspace_are_allowed_in_full_auto(ws: Workspace, command: str) -> None:
    assert ws.policy("full-auto").decide(ws.action("execute", ws.fill(command))).decision == "allow"


@pytest.mark.parametrize(
    ("allow", "command"),
    [
        ("execute:rg", "rg --hostname-bin=./x --hyperlink-format='file://{host}{path}' foo"),  # rg runs the program
        ("execute:rg", "rg --hostname-bin ./x foo"),
        ("execute:pytest", "pytest --debug=x.log"),
        ("execute:pytest", "pytest -o cache_dir=c"),
        ("execute:pytest", "pytest --override-ini=log_file=l"),
        ("execute:pytest", "pytest -olog_file=l"),
        ("execute:python -m pytest", "python -m pytest --debug=x.log"),
        ("execute:python3 -m pytest", "python3 -m pytest -o cache_dir=c"),
        ("execute:go test", "go test -trace=t.out"),
        ("execute:go test", "go test --memprofile m.out"),
        ("execute:go test", "go test -outputdir=d -cpuprofile=c.out"),
    ],
)
def test_what_test_runners_and_rg_run_or_write_is_not_covered_by_a_prefix_rule(
    ws: Workspace, allow: str, command: str
) -> None:
    assert ws.policy(allow=(allow,)).decide(ws.action("execute", command)).decision == "ask"


@pytest.mark.parametrize(
    ("allow", "command"),
    [
        ("execute:pytest", "pytest -o xfail_strict=true -p no:cacheprovider"),
        ("execute:pytest", "pytest -x tests/"),
        ("execute:go test", "go test -race -count=1 ./..."),
        ("execute:rg", "rg -n foo"),
    ],
)
def test_plain_test_runs_are_still_covered(ws: Workspace, allow: str, command: str) -> None:
    assert ws.policy(allow=(allow,)).decide(ws.action("execute", command)).decision == "allow"


@pytest.mark.parametrize("command", ["python -mpytest --debug={out}/x", "python3 -Bm pytest -o cache_dir={out}/c"])
def test_pytest_run_as_a_module_in_any_spelling_is_read_as_pytest(ws: Workspace, command: str) -> None:
    assert ws.policy("full-auto").decide(ws.action("execute", ws.fill(command))).decision == "ask"


@pytest.mark.parametrize(
    "command",
    [
        "echo hi > ~+/../outside/x",  # bash: `~+` is $PWD, so this is the folder beside the workspace
        "echo hi > ~-/x",  # $OLDPWD: anywhere
        "cp a ~+/../outside/x",
        "touch ~+/../outside/x",
        "echo hi > ~0/../outside/x",
        "echo hi > ~+0/../outside/x",
        "cd ~- && echo hi > x",
        "cd ~+/.. && touch outside/x",
    ],
)
def test_a_tilde_bash_reads_as_a_folder_of_its_own_asks(ws: Workspace, command: str) -> None:
    for mode in ("full-auto", "default"):
        verdict = ws.policy(mode, allow=("execute:*",)).decide(ws.action("execute", command))
        assert verdict.decision == "ask", (mode, verdict)


def test_a_wrapper_that_changes_to_a_folder_inside_is_allowed(ws: Workspace) -> None:
    assert ws.policy("full-auto").decide(ws.action("execute", "env -C src touch x")).decision == "allow"


@pytest.mark.parametrize("hidden", ["\ufe0f", "\ufe00", "\U000e0100", "\U000e01ef", "\u180b", "\u2800"])
def test_zero_width_variation_selectors_and_blanks_are_written_as_escapes(hidden: str) -> None:
    """Variation selectors render as nothing and can carry a whole text unseen (one byte each): a title or command
    holding them must not look like one without."""
    shown = visible(f"rm -rf build{hidden * 3} x")
    assert hidden not in shown
    assert "\\u" in shown or "\\U" in shown


def test_an_emoji_keeps_its_presentation_selector_and_a_run_of_them_is_still_escaped() -> None:
    assert visible("echo \u26a0\ufe0f done") == "echo \u26a0\ufe0f done"
    assert visible("\u2764\ufe0e") == "\u2764\ufe0e"
    shown = visible("echo \u26a0\ufe0f\ufe0f\ufe0f x")
    assert shown == "echo \u26a0\ufe0f\\ufe0f\\ufe0f x", "one after the symbol; the ones after it carry text"
    assert visible("a\ufe0f") == "a\\ufe0f"
