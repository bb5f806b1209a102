"""The list of key variables matches what the installed litellm reads; the agent never imports litellm for it."""

from __future__ import annotations

import subprocess
import sys

from coder_agent.known_keys import KNOWN_KEY_VARIABLES
from tests.support.litellm_keys import derive


def test_the_checked_in_list_is_what_litellm_reads() -> None:
    derived = derive()
    missing, stale = derived - KNOWN_KEY_VARIABLES, KNOWN_KEY_VARIABLES - derived
    assert not missing and not stale, (
        f"coder_agent/known_keys.py is out of date (missing {sorted(missing)}, stale {sorted(stale)}); "
        "regenerate it with `uv run python -m tests.support.litellm_keys`"
    )
    assert {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AZURE_API_KEY", "COHERE_API_KEY", "HF_TOKEN"} <= derived
    assert {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "GEMINI_API_KEY", "MISTRAL_API_KEY"} <= derived


def test_scrubbing_a_child_environment_does_not_import_litellm() -> None:
    code = "import sys; from coder_agent import secrets; secrets.child_environ(); print('litellm' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
