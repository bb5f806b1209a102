"""The syntax check after an edit (coder_agent.tools.editing.syntax): every language it knows, table-driven, and
only the problems an edit introduced."""

from __future__ import annotations

import pytest

from coder_agent.config import CHECK_LANGUAGES
from coder_agent.tools.editing.syntax import (
    LANGUAGE_NAMES,
    LANGUAGES,
    introduced_problems,
    language_of,
    problems_report,
    syntax_problems,
)

CASES = [
    # (file name, valid text, the same broken, about where the first problem is)
    ("a.py", "def f(x):\n    return x\n", "def f(x):\n    return (x\n", 2),
    ("a.pyi", "def f(x: int) -> int: ...\n", "def f(x: int) -> : ...\n", 1),
    ("a.js", "function f(x) {\n  return x;\n}\n", "function f(x) {\n  return x;\n", 1),
    ("a.jsx", "const a = <div>{x}</div>;\n", "const a = <div>{x</div>;\n", 1),
    (
        "a.ts",
        "function f(x: number): number {\n  return x;\n}\n",
        "function f(x: number: number {\n  return x;\n}\n",
        1,
    ),
    ("a.tsx", "const a = <b>{x}</b>;\n", "const a = <b>{x</b>;\n", 1),
    ("a.rs", "fn main() {\n    let x = 1;\n}\n", "fn main() {\n    let x = ;\n}\n", 2),
    ("a.go", "package main\n\nfunc main() {\n}\n", "package main\n\nfunc main( {\n}\n", 3),
    ("A.java", "class A {\n  int f() { return 1; }\n}\n", "class A {\n  int f() { return 1 }\n}\n", 2),
    ("a.c", "int f(void) {\n  return 1;\n}\n", "int f(void) {\n  return 1\n}\n", 2),
    ("a.cpp", "int f() {\n  return 1;\n}\n", "int f() {\n  return (1;\n}\n", 2),
    ("a.cs", "class A {\n  int F() { return 1; }\n}\n", "class A {\n  int F() { return 1 }\n}\n", 2),
    ("a.rb", "def f(x)\n  x + 1\nend\n", "def f(x)\n  x + \nend\n", 2),
    ("a.php", "<?php\nfunction f($x) {\n  return $x;\n}\n", "<?php\nfunction f($x) {\n  return $x\n}\n", 3),
    ("a.json", '{"a": [1, 2]}\n', '{"a": [1, 2}\n', 1),
    ("a.yaml", "a:\n  - 1\n  - 2\n", "a:\n  - 1\n - [2\n", 3),
    ("a.toml", 'a = 1\n[b]\nc = "x"\n', 'a = 1\n[b\nc = "x"\n', 2),
    ("a.css", "a { color: red; }\n", "a { color: red; \n", 1),
    ("a.html", "<p>hi</p>\n", "<p>hi</p\n", 1),
    ("a.sh", "if true; then\n  echo hi\nfi\n", "if true; then\n  echo hi\n", 1),
]


@pytest.mark.parametrize(("name", "valid", "broken", "line"), CASES)
def test_each_language_finds_errors_and_only_errors(name: str, valid: str, broken: str, line: int) -> None:
    assert syntax_problems(valid, name) == []
    problems = syntax_problems(broken, name)
    assert problems, f"{name}: the broken text parses cleanly"
    first = problems[0]
    assert 1 <= first.line <= broken.count("\n") + 1, name
    assert abs(first.line - line) <= 2 or first.line <= line <= first.last, f"{name}: {first}"


def test_every_language_is_tested_and_named_in_the_config() -> None:
    assert {language_of(name) for name, *_ in CASES} == LANGUAGE_NAMES == CHECK_LANGUAGES
    assert {language for language, _, _ in LANGUAGES.values()} == LANGUAGE_NAMES


def test_unknown_or_huge_files_are_not_checked() -> None:
    assert syntax_problems("whatever (", "notes.txt") is None
    assert language_of("Makefile") is None
    assert syntax_problems("x = (\n" * 300_000, "big.py") is None


def test_only_the_problems_an_edit_introduced_count() -> None:
    old = "def broken(:\n    pass\n\n\ndef fine():\n    return 1\n"
    moved = "import os\n\n" + old.replace("return 1", "return (1")
    problems = introduced_problems(old, moved, "a.py")
    assert problems is not None
    assert [p.line for p in problems] == [8], "the old error moved two lines down and is not reported again"
    assert introduced_problems(old, "import os\n\n" + old, "a.py") == []
    assert introduced_problems(None, "x = (\n", "new.py") == syntax_problems("x = (\n", "new.py")


def test_the_report_names_lines_and_leaves_the_choice_to_the_model() -> None:
    text = "def f():\n    return (1\n"
    problems = introduced_problems("def f():\n    return 1\n", text, "src/a.py")
    assert problems
    report = problems_report("src/a.py", "src/a.py", problems)
    assert report.startswith("Syntax check (python, tree-sitter): the change introduced 1 syntax error in src/a.py:")
    assert "- line 2: " in report and "     2\t    return (1" in report
    assert "The change was made as sent" in report
