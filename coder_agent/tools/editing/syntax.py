"""The syntax check after an edit: the file parsed with tree-sitter before and after, and the syntax errors the
edit introduced (not those that were already there), with their line numbers.

A language is known by the file's extension (`LANGUAGES`); its grammar is a wheel of its own (`tree-sitter-python`,
…), imported the first time a file of that language is checked, never at start-up. A problem is a tree-sitter
`ERROR` node (the outermost one: text the grammar could not place) or a `MISSING` one (a token the parser had to
invent, like a closing bracket). Problems are told apart by what they are and the text of their line, so those of
lines the edit did not touch are recognised after it, wherever the lines moved. Files over `MAX_BYTES` are not
parsed. A grammar can lag its language: the report says so, and the edit stands either way.
"""

from __future__ import annotations

import importlib
import logging
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import PurePath
from typing import Any

from coder_agent.tools.file_view import number_line

__all__ = ["LANGUAGES", "SyntaxProblem", "introduced_problems", "language_of", "problems_report", "syntax_problems"]

log = logging.getLogger(__name__)

MAX_BYTES = 1_000_000
"""Bigger files are not parsed (an edit's check must stay quick)."""
MAX_SHOWN = 5

LANGUAGES: dict[str, tuple[str, str, str]] = {
    # extension: (language, grammar module, its function giving the language)
    ".py": ("python", "tree_sitter_python", "language"),
    ".pyi": ("python", "tree_sitter_python", "language"),
    ".js": ("javascript", "tree_sitter_javascript", "language"),
    ".mjs": ("javascript", "tree_sitter_javascript", "language"),
    ".cjs": ("javascript", "tree_sitter_javascript", "language"),
    ".jsx": ("javascript", "tree_sitter_javascript", "language"),
    ".ts": ("typescript", "tree_sitter_typescript", "language_typescript"),
    ".mts": ("typescript", "tree_sitter_typescript", "language_typescript"),
    ".cts": ("typescript", "tree_sitter_typescript", "language_typescript"),
    ".tsx": ("typescript", "tree_sitter_typescript", "language_tsx"),
    ".rs": ("rust", "tree_sitter_rust", "language"),
    ".go": ("go", "tree_sitter_go", "language"),
    ".java": ("java", "tree_sitter_java", "language"),
    ".c": ("c", "tree_sitter_c", "language"),
    ".h": ("c", "tree_sitter_c", "language"),
    ".cc": ("cpp", "tree_sitter_cpp", "language"),
    ".cpp": ("cpp", "tree_sitter_cpp", "language"),
    ".cxx": ("cpp", "tree_sitter_cpp", "language"),
    ".hpp": ("cpp", "tree_sitter_cpp", "language"),
    ".hh": ("cpp", "tree_sitter_cpp", "language"),
    ".hxx": ("cpp", "tree_sitter_cpp", "language"),
    ".cs": ("csharp", "tree_sitter_c_sharp", "language"),
    ".rb": ("ruby", "tree_sitter_ruby", "language"),
    ".php": ("php", "tree_sitter_php", "language_php"),
    ".json": ("json", "tree_sitter_json", "language"),
    ".yaml": ("yaml", "tree_sitter_yaml", "language"),
    ".yml": ("yaml", "tree_sitter_yaml", "language"),
    ".toml": ("toml", "tree_sitter_toml", "language"),
    ".css": ("css", "tree_sitter_css", "language"),
    ".html": ("html", "tree_sitter_html", "language"),
    ".htm": ("html", "tree_sitter_html", "language"),
    ".sh": ("bash", "tree_sitter_bash", "language"),
    ".bash": ("bash", "tree_sitter_bash", "language"),
}
LANGUAGE_NAMES = frozenset(language for language, _, _ in LANGUAGES.values())


@dataclass(frozen=True)
class SyntaxProblem:
    line: int
    """Where it starts (1-based)."""
    what: str
    """In words: "missing `)`", "unexpected `else:`"."""
    line_text: str
    last: int = 0
    """Where it ends, when that is a later line (the parser could not place lines `line`..`last`)."""
    last_text: str = ""


def language_of(path: str | PurePath) -> str | None:
    """The language the check knows the file by, from its extension; None if it knows none."""
    found = LANGUAGES.get(PurePath(path).suffix.lower())
    return found[0] if found else None


def syntax_problems(text: str, path: str | PurePath) -> list[SyntaxProblem] | None:
    """The file's syntax problems, in order; None when it is not checked (unknown language, too big, no grammar)."""
    found = LANGUAGES.get(PurePath(path).suffix.lower())
    data = text.encode("utf-8", errors="replace")
    if found is None or len(data) > MAX_BYTES:
        return None
    parser = _parser(found[1], found[2])
    if parser is None:
        return None
    tree = parser.parse(data)
    lines = text.split("\n")
    problems: list[SyntaxProblem] = []
    _collect(tree.root_node, lines, problems)
    return problems


def introduced_problems(old: str | None, new: str, path: str | PurePath) -> list[SyntaxProblem] | None:
    """The problems of `new` that `old` did not have (all of them for a new file); None when not checked."""
    after = syntax_problems(new, path)
    if after is None or not after:
        return after
    before = syntax_problems(old, path) if old is not None else []
    known = Counter(_key(problem) for problem in before or [])
    fresh: list[SyntaxProblem] = []
    for problem in after:
        key = _key(problem)
        if known[key] > 0:
            known[key] -= 1
        else:
            fresh.append(problem)
    return fresh


def problems_report(shown_path: str, path: str | PurePath, problems: list[SyntaxProblem]) -> str:
    """The model's text for the problems an edit introduced."""
    language = language_of(path) or "this language"
    count = len(problems)
    lines = [
        f"Syntax check ({language}, tree-sitter): the change introduced {count} syntax error{'s' if count != 1 else ''}"
        f" in {shown_path}:"
    ]
    for problem in problems[:MAX_SHOWN]:
        lines.append(f"- line {problem.line}: {problem.what}")
        lines.append(number_line(problem.line, problem.line_text, 200))
        if problem.last > problem.line:
            if problem.last > problem.line + 1:
                lines.append("   …")
            lines.append(number_line(problem.last, problem.last_text, 200))
    if count > MAX_SHOWN:
        lines.append(f"- … and {count - MAX_SHOWN} more")
    lines.append(
        "The change was made as sent. If these are mistakes, fix them with another edit; if the code is right (a "
        "grammar can lag the language), carry on."
    )
    return "\n".join(lines)


def _key(problem: SyntaxProblem) -> tuple[str, str]:
    return problem.what, problem.line_text.strip()


def _collect(node: Any, lines: list[str], problems: list[SyntaxProblem]) -> None:
    if node.is_missing or node.is_error:
        row, end = node.start_point[0], node.end_point[0]
        if node.end_point[1] == 0 and end > row:
            end -= 1  # the node ends with a line break
        text = lines[row].rstrip("\r") if row < len(lines) else ""
        if end > row and node.is_error:
            last_text = lines[end].rstrip("\r") if end < len(lines) else ""
            what = f"lines {row + 1}-{end + 1} do not parse (the error is in them, often near their end)"
            problems.append(SyntaxProblem(row + 1, what, text, end + 1, last_text))
        else:
            problems.append(SyntaxProblem(row + 1, _describe(node), text))
        return
    if node.has_error:
        for child in node.children:
            _collect(child, lines, problems)


def _describe(node: Any) -> str:
    if node.is_missing:
        return f"missing `{node.type}`"
    text = (node.text or b"").decode("utf-8", errors="replace").strip().split("\n", 1)[0]
    shown = text if len(text) <= 40 else text[:39] + "…"
    return f"unexpected `{shown}`" if shown else "a syntax error"


def _parser(module: str, function: str) -> Any:
    """A parser for one grammar (a new one each time: a parser is not shared between threads); None if the grammar
    cannot be loaded."""
    language = _language(module, function)
    if language is None:
        return None
    import tree_sitter

    return tree_sitter.Parser(language)


@cache
def _language(module: str, function: str) -> Any:
    try:
        import tree_sitter

        grammar = importlib.import_module(module)
        return tree_sitter.Language(getattr(grammar, function)())
    except (ImportError, AttributeError, ValueError, TypeError) as exc:
        log.warning("no syntax check with %s: %s", module, exc)
        return None
