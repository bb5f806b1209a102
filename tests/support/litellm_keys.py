"""The environment variables litellm reads credentials from, derived from the installed litellm's own source.

`derive()` reads litellm's provider metadata: the `api_key_env` of every provider in its JSON provider
table, and every variable name its code looks up through `get_secret`/`get_secret_str`/`os.environ`/`os.getenv`
that names a credential (a key, token, secret, password or credentials). `coder_agent/known_keys.py` is
generated from it (`uv run python -m tests.support.litellm_keys` rewrites it), and a unit test checks the two
agree, so a litellm upgrade that adds a provider fails the suite until the list is regenerated. The agent never
imports litellm to get this list: it is on the path of every command the agent starts.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
from pathlib import Path

CREDENTIAL = re.compile(
    r"(API_?KEY|APIKEY|_KEY|_KEY_ID|TOKEN|SECRET|SECRET_ID|PASSWORD|PASSPHRASE|CREDENTIALS?|ZENAPIKEY)$"
)
NAME = re.compile(r"^[A-Z][A-Z0-9_]{2,}$")
LITERAL = re.compile(
    r"[\"'][A-Z][A-Z0-9_]*(?:API_?KEY|APIKEY|_KEY|_KEY_ID|TOKEN|SECRET|SECRET_ID|PASSWORD|PASSPHRASE|CREDENTIALS?)[\"']"
)
"""A quoted credential-like name: only files with one are parsed (parsing all of litellm takes seconds)."""
LOOKUPS = frozenset({"get_secret", "get_secret_str", "get_secret_bool", "getenv"})
TARGET = Path(__file__).resolve().parents[2] / "coder_agent" / "known_keys.py"


def _litellm_root() -> Path:
    spec = importlib.util.find_spec("litellm")
    assert spec is not None and spec.origin is not None, "litellm is not installed"
    return Path(spec.origin).parent


def _names_in(tree: ast.AST) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        value: object = None
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            environ_get = name == "get" and isinstance(func, ast.Attribute) and "environ" in ast.unparse(func.value)
            if name in LOOKUPS or environ_get:
                value = node.args[0].value
        elif isinstance(node, ast.Subscript) and "environ" in ast.unparse(node.value):
            if isinstance(node.slice, ast.Constant):
                value = node.slice.value
        elif (
            isinstance(node, ast.Compare)
            and isinstance(node.left, ast.Constant)
            and any("environ" in ast.unparse(c) for c in node.comparators)
        ):
            value = node.left.value
        if isinstance(value, str) and NAME.match(value) and CREDENTIAL.search(value):
            found.add(value)
    return found


def derive() -> set[str]:
    """Every credential variable the installed litellm reads (its proxy server's settings excluded)."""
    root = _litellm_root()
    names: set[str] = set()
    for path in sorted(root.rglob("*.py")):
        if "proxy" in path.relative_to(root).parts:
            continue
        try:
            text = path.read_text(encoding="utf-8")
            lookups = "get_secret" in text or "environ" in text or "getenv" in text
            if lookups and LITERAL.search(text):
                names |= _names_in(ast.parse(text))
        except (SyntaxError, UnicodeDecodeError):
            continue
    providers = json.loads((root / "llms" / "openai_like" / "providers.json").read_text(encoding="utf-8"))
    names |= {p["api_key_env"] for p in providers.values() if p.get("api_key_env")}
    return names


def render(names: set[str]) -> str:
    lines = "\n".join(f'        "{name}",' for name in sorted(names))
    return (
        '"""Environment variables litellm reads provider credentials from (generated: do not edit).\n\n'
        "Regenerate with `uv run python -m tests.support.litellm_keys` after upgrading litellm; the unit test\n"
        "`tests/unit/test_secrets.py` fails while this list and the installed litellm disagree.\n"
        '"""\n\n'
        "KNOWN_KEY_VARIABLES = frozenset(\n    {\n" + lines + "\n    }\n)\n"
    )


if __name__ == "__main__":
    TARGET.write_text(render(derive()), encoding="utf-8")
    print(f"wrote {TARGET}")
