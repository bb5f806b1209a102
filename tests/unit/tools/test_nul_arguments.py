"""Every path or name pattern a file tool takes refuses a NUL character up front, as bad arguments the model can
fix: the OS refuses it later, in the middle of a check, as an unforeseen failure."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from coder_agent.tools.registry import BUILTIN
from coder_agent.tools.tool import describe_validation

CALLS = [
    ("read_file", {"path": "a\0b.txt"}, "path"),
    ("write_file", {"path": "a\0b", "content": "x"}, "path"),
    ("glob", {"pattern": "a\0*"}, "pattern"),
    ("grep", {"pattern": "x", "path": "a\0b"}, "path"),
    ("grep", {"pattern": "x", "glob": "*.py\0"}, "glob"),
]


@pytest.mark.parametrize(("name", "arguments", "field"), CALLS)
def test_a_nul_in_a_path_or_pattern_is_a_bad_argument(name: str, arguments: dict[str, str], field: str) -> None:
    tool = next(t for t in BUILTIN if t.name == name)
    with pytest.raises(ValidationError) as raised:
        tool.params.model_validate(arguments)
    assert describe_validation(raised.value) == f"{field}: the path holds a NUL character, which no file name can"
