"""`initialize` is answered from plain dicts for speed; it must say exactly what the pydantic model says."""

from __future__ import annotations

import subprocess
import sys

from coder_agent.acp import handshake
from coder_agent.protocol.schema import InitializeResponse
from tests.support.conformance import validate


def test_the_fast_answer_matches_the_model_and_the_schema() -> None:
    result, capabilities = handshake.initialize({"protocolVersion": 1, "clientCapabilities": {"terminal": True}})
    assert InitializeResponse.model_validate(result).wire() == result
    validate("InitializeResponse", result)
    validate("InitializeResponse", result, unstable=True)
    assert capabilities == {"terminal": True}


def test_initialize_imports_no_pydantic_and_no_model_library() -> None:
    code = (
        "import sys\n"
        "from coder_agent.acp import handshake\n"
        "from coder_agent import cli, composition\n"
        "handshake.initialize({'protocolVersion': 1})\n"
        "heavy = [m for m in ('pydantic', 'litellm', 'mcp', 'git') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "[]"
