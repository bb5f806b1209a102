"""`initialize` is answered from plain dicts for speed; it must say exactly what the pydantic model says."""

from __future__ import annotations

import os
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
        "heavy = [m for m in ('pydantic', 'litellm', 'mcp', 'git', 'keyring') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "[]"


def test_a_configured_agent_never_loads_the_keyring() -> None:
    """The stored login is read only when no other source gives a model or a key (the keyring takes a few hundred
    milliseconds to load its backends)."""
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from coder_agent.acp import handshake\n"
        "from coder_agent.composition import cli_source\n"
        "handshake.initialize({'protocolVersion': 1, 'clientCapabilities': {'auth': {'terminal': True}}})\n"
        "source = cli_source()()\n"
        "config, _ = source.load(Path.cwd())\n"
        "source.model_settings(config)\n"
        "print('keyring' in sys.modules)\n"
    )
    env = {**os.environ, "CODER_AGENT_MODEL": "anthropic/claude-sonnet-4-5", "ANTHROPIC_API_KEY": "sk-ant-configured"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60, env=env)
    assert done.stdout.strip() == "False"
