"""The one glob matcher (`coder_agent.globs`): a table of globs and paths, and globs that would make a backtracking
matcher take exponential time finishing in a bounded number of steps."""

from __future__ import annotations

import pytest

from coder_agent.globs import compile_glob

CASES = [
    # glob, path, matches
    ("*.py", "main.py", True),
    ("*.py", "src/main.py", False),  # "*" stays within a segment
    ("src/*.py", "src/main.py", True),
    ("src/*.py", "src/pkg/mod.py", False),
    ("**/*.py", "main.py", True),  # "**/" may match no folder at all
    ("**/*.py", "src/pkg/mod.py", True),
    ("src/**", "src/pkg/mod.py", True),
    ("src/**", "srcs/x", False),
    ("a/**/b", "a/b", True),
    ("a/**/b", "a/x/y/b", True),
    ("a**b", "aXb", True),  # "**" inside a segment is "*" ...
    ("a**b", "a/b", False),  # ... so it does not cross "/"
    ("?.txt", "a.txt", True),
    ("?.txt", "ab.txt", False),
    ("?", "/", False),
    ("[ab].txt", "a.txt", True),
    ("[ab].txt", "c.txt", False),
    ("[!ab].txt", "c.txt", True),
    ("[!ab].txt", "a.txt", False),
    ("x[!a]y", "x/y", False),  # a negated class never matches "/"
    ("*.{yml,txt}", "ci.yml", True),
    ("*.{yml,txt}", "notes.txt", True),
    ("*.{yml,txt}", "main.py", False),
    ("{a,{b,c}}.md", "c.md", True),  # nested alternatives
    ("\\*.md", "*.md", True),  # a backslash escapes
    ("\\*.md", "x.md", False),
    ("[abc", "[abc", True),  # an unclosed class is literal
    ("{a,b", "{a,b", True),  # so is an unclosed brace
    ("file.py", "fileXpy", False),  # "." is literal
    ("#hash.txt", "#hash.txt", True),
    ("[]a].txt", "].txt", True),  # a "]" first in a class is one of its characters
    ("[a-c]x", "bx", True),
    ("[a-c]x", "dx", False),
    ("[z-a]x", "zx", False),  # a backwards range holds nothing
    ("[!a]", "/", False),
    ("*", "a\nb", True),  # "*" takes newlines (file names may hold them)
    ("**", "a/b/c", True),
    ("a/**", "a", False),  # the folder itself only for permission rules (`src/**`)
    ("**/b", "b", True),
    ("a/**/b/**/c", "a/x/b/y/z/c", True),
    ("{a/**,b}/x", "a/q/r/x", True),
    ("{*.py,src/**}", "src/a/b", True),
    ("x/*a*a*b", "x/aaab", True),
    ("x/*a*a*b", "x/aab/", False),
]


@pytest.mark.parametrize(("glob", "path", "expected"), CASES)
def test_glob_matches(glob: str, path: str, expected: bool) -> None:
    assert compile_glob(glob).matches(path) is expected


PATHOLOGICAL = [
    ("x/" + "*a" * 30 + "*b", "x/" + "a" * 5000),  # a backtracking matcher tries every split of the a's
    ("x/" + "*a" * 30 + "*b", "x/" + "a" * 5000 + "b"),
    ("**/" * 20 + "b", "/".join("a" * 400) + "/c"),
    ("{*a,*a*}" * 10 + "b", "a" * 3000),
    ("*[ab]" * 25 + "c", "ab" * 2000),
]


@pytest.mark.parametrize(("glob", "path"), PATHOLOGICAL, ids=range(len(PATHOLOGICAL)))
def test_a_glob_reads_a_path_once_in_bounded_steps(glob: str, path: str) -> None:
    """The work is counted, not timed: at most the automaton's states per character, whatever the glob."""
    compiled = compile_glob(glob)
    _, work = compiled.run(path)
    assert work <= 2 * compiled.size * (len(path) + 1)
    assert compiled.size <= 8 * len(glob) + 8


def test_rules_and_gitignore_use_the_linear_matcher() -> None:
    from coder_agent.permissions.rules import _glob_matches
    from coder_agent.tools.search.gitignore import parse_gitignore

    slow = "x/" + "*a" * 30 + "*b"
    assert _glob_matches(slow, "x/" + "a" * 5000) is False
    (rule,) = parse_gitignore(slow + "\n", "")
    assert rule.applies("x/" + "a" * 5000, is_dir=False) is False
