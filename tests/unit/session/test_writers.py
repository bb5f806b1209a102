"""Each part of a session has one writer, checked on the source: no package assigns the fields of a part it
does not own (`SessionState` and what it holds: session/; `SessionServices`: the manager, in agent/).

The check reads every assignment in `coder_agent/` whose target is an attribute of an expression that names a
part (`….state.title = …`, `services.mcp = …`, `conversation.messages = …`): the convention the code keeps, so
a new writer elsewhere fails here instead of in review.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from coder_agent.session.conversation import Conversation, Spending
from coder_agent.session.services import SessionServices
from coder_agent.session.state import SessionState

ROOT = Path(__file__).resolve().parents[3] / "coder_agent"

PARTS: dict[str, tuple[set[str], str]] = {
    "state": ({f.name for f in dataclasses.fields(SessionState)}, "session"),
    "saved": ({f.name for f in dataclasses.fields(SessionState)}, "session"),
    "conversation": ({f.name for f in dataclasses.fields(Conversation)}, "session"),
    "spending": ({f.name for f in dataclasses.fields(Spending)}, "session"),
    "services": ({f.name for f in dataclasses.fields(SessionServices)}, "agent"),
}
"""The name an expression ends in → the fields of that part, and the package that may assign them."""


def _part(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _targets(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        return [t for target in node.targets for t in (target.elts if isinstance(target, ast.Tuple) else [target])]
    if isinstance(node, ast.AugAssign | ast.AnnAssign):
        return [node.target]
    return []


def writes(parts: dict[str, tuple[set[str], str]] = PARTS) -> list[tuple[str, int, str, str]]:
    """(module, line, target, owner package) of every assignment to a part's field outside its owner."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        package = path.relative_to(ROOT).parts[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for target in _targets(node):
                if not isinstance(target, ast.Attribute):
                    continue
                part = _part(target.value)
                if part in parts and target.attr in parts[part][0] and package != parts[part][1]:
                    found.append((path.relative_to(ROOT).as_posix(), node.lineno, ast.unparse(target), parts[part][1]))
    return found


def test_no_package_writes_a_session_part_it_does_not_own() -> None:
    assert writes() == []


def test_the_check_sees_a_write() -> None:
    """The check is not vacuous: with no owner allowed, it finds the manager's writes of the services."""
    nobody = {name: (fields, "nowhere") for name, (fields, _) in PARTS.items()}
    seen = {(module, target) for module, _, target, _ in writes(nobody)}
    assert ("agent/opening.py", "services.mcp") in seen
