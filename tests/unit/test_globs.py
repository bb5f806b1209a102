"""Tests for coder_agent.tools.search.globs: the one glob → regex translation (a table of globs and paths)."""

from __future__ import annotations

import re

import pytest

from coder_agent.globs import compile_glob, glob_regex

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
]


@pytest.mark.parametrize(("glob", "path", "expected"), CASES)
def test_glob_matches(glob: str, path: str, expected: bool) -> None:
    assert (compile_glob(glob).fullmatch(path) is not None) is expected
    assert (re.fullmatch(f"(?s:{glob_regex(glob)})", path) is not None) is expected


def test_a_glob_that_makes_no_regex_raises_re_error() -> None:
    with pytest.raises(re.error):
        compile_glob("[z-a]")
