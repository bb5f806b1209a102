"""Diagnostics as the agent keeps them: read from a server's LSP shape, compared before and after an edit, and
written for the model and the user.

"New" is a multiset difference on what a diagnostic says (severity, source, code, message), not on where: an edit
moves the lines below it, and an error that only moved is not new. Two identical messages before and three after
make one new one (the last of them by line: the ones before were most likely the old ones).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

ERROR = 1
WARNING = 2
SEVERITY_NAMES = {1: "error", 2: "warning", 3: "info", 4: "hint"}
MAX_MESSAGE_CHARS = 400
"""A diagnostic's message beyond this is cut (some servers explain at length)."""
MAX_KEPT_PER_FILE = 1000
"""The most diagnostics kept per file: a server that floods cannot make the agent hold more."""


@dataclass(frozen=True)
class Diagnostic:
    line: int
    """1-based."""
    column: int
    """1-based, in the server's encoding (UTF-16 code units by default)."""
    severity: int
    message: str
    code: str = ""
    source: str = ""

    @property
    def what(self) -> tuple[int, str, str, str]:
        """What it says, wherever it is."""
        return (self.severity, self.source, self.code, self.message)

    @property
    def severity_name(self) -> str:
        return SEVERITY_NAMES.get(self.severity, "error")

    def line_text(self, shown_path: str) -> str:
        """`src/a.py:12:5: error [reportAttributeAccessIssue] Cannot access attribute "x"`."""
        code = f" [{self.code}]" if self.code else ""
        return f"{shown_path}:{self.line}:{self.column}: {self.severity_name}{code} {self.message}"


def from_lsp(items: Iterable[Any]) -> list[Diagnostic]:
    """Diagnostics from the server's list (lsprotocol objects or plain dicts); malformed entries are left out,
    a missing severity counts as an error (the LSP default is the client's choice)."""
    out: list[Diagnostic] = []
    for item in items:
        if len(out) >= MAX_KEPT_PER_FILE:
            break
        diagnostic = _one(item)
        if diagnostic is not None:
            out.append(diagnostic)
    return out


def _one(item: Any) -> Diagnostic | None:
    def get(name: str) -> Any:
        return _field(item, name)

    start = _field(get("range"), "start")
    line, character = _field(start, "line"), _field(start, "character")
    message = get("message")
    if not isinstance(line, int) or not isinstance(character, int) or not isinstance(message, str):
        return None
    severity = get("severity")
    severity = int(severity) if isinstance(severity, int) and 1 <= int(severity) <= 4 else ERROR
    code = get("code")
    source = get("source")
    text = " ".join(message.split())
    if len(text) > MAX_MESSAGE_CHARS:
        text = text[: MAX_MESSAGE_CHARS - 1] + "…"
    return Diagnostic(
        line=max(line, 0) + 1,
        column=max(character, 0) + 1,
        severity=severity,
        message=text,
        code="" if code is None else str(code)[:80],
        source=source[:40] if isinstance(source, str) else "",
    )


def _field(value: Any, name: str) -> Any:
    if value is None:
        return value
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


def problems(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    """The errors and warnings (information and hints are not reported)."""
    return [d for d in diagnostics if d.severity in (ERROR, WARNING)]


def new_since(before: Sequence[Diagnostic], after: Sequence[Diagnostic]) -> list[Diagnostic]:
    """The errors and warnings of `after` that `before` did not have (see the module docstring), by line."""
    old = Counter(d.what for d in problems(before))
    fresh: list[Diagnostic] = []
    for diagnostic in sorted(problems(after), key=lambda d: (d.line, d.column), reverse=True):
        if old[diagnostic.what] > 0:
            old[diagnostic.what] -= 1
        else:
            fresh.append(diagnostic)
    return sorted(fresh, key=lambda d: (d.line, d.column, d.severity))


def report(shown_path: str, diagnostics: Sequence[Diagnostic], limit: int) -> list[str]:
    """One line per diagnostic, errors first, at most `limit`, and a line counting the rest."""
    ordered = sorted(diagnostics, key=lambda d: (d.severity, d.line, d.column))
    lines = [d.line_text(shown_path) for d in ordered[:limit]]
    if len(ordered) > limit:
        lines.append(f"… and {len(ordered) - limit} more in {shown_path}")
    return lines


def counts(diagnostics: Iterable[Diagnostic]) -> tuple[int, int]:
    """(errors, warnings)."""
    errors = warnings = 0
    for d in diagnostics:
        errors += d.severity == ERROR
        warnings += d.severity == WARNING
    return errors, warnings
