"""The walls as one environment variable: the agent writes it (`encode`), the launcher reads it (`decode`).

One `key=value` line per value; a key given several times is a list; `%` and newlines in a value are escaped.
Plain string work on purpose: the launcher starts for every command, and a JSON parser would cost it more than
putting up every wall (`json` pulls in `re` and `enum`).
"""

from __future__ import annotations

Spec = dict[str, list[str]]

SPEC_VARIABLE = "CODER_AGENT_SANDBOX"
"""The environment variable that carries the walls to the launcher (and the fork server's child)."""
FAILURE_MARK = "coder-agent sandbox:"
"""How the line starts that says the walls could not be put up (and nothing was run)."""
FAILURE_STATUS = 125


def encode(spec: Spec) -> str:
    return "\n".join(f"{key}={_escape(value)}" for key, values in spec.items() for value in values)


def decode(text: str) -> Spec:
    spec: Spec = {}
    for line in text.split("\n"):
        key, sep, value = line.partition("=")
        if not sep:
            raise ValueError(f"the sandbox's walls are malformed near {line[:40]!r}")
        spec.setdefault(key, []).append(value.replace("%0A", "\n").replace("%25", "%"))
    return spec


def _escape(value: str) -> str:
    return value.replace("%", "%25").replace("\n", "%0A")
