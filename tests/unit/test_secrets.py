"""The list of key variables matches what the installed litellm reads (the agent never imports litellm for it), and a
key is redacted in the forms a provider's echo of it takes."""

from __future__ import annotations

import base64
import subprocess
import sys
import urllib.parse

import pytest

from coder_agent import secrets
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


KEY = "sk-proj-a+b/c=d_0123456789abcdef"
ECHOES = [
    ("as written", f"Incorrect API key provided: {KEY}."),
    ("url-encoded", f"GET /v1/models?key={urllib.parse.quote(KEY, safe='')} 401"),
    ("url-encoded keeping slashes", f"url={urllib.parse.quote(KEY)}"),
    ("form-encoded", f"body: api_key={urllib.parse.quote_plus(KEY)}&x=1"),
    ("hex", f"sent {KEY.encode().hex()}"),
    ("hex upper", f"sent {KEY.encode().hex().upper()}"),
    ("base64", f"token {base64.b64encode(KEY.encode()).decode()}"),
    ("base64 url-safe", f"token {base64.urlsafe_b64encode(KEY.encode()).decode()}"),
    *[
        (f"basic auth user of {len(user)}", "Basic " + base64.b64encode(f"{user}:{KEY}".encode()).decode())
        for user in ("", "a", "ab", "api", "user")
    ],
    ("base64 followed by more", base64.b64encode(f"{KEY}:more text".encode()).decode()),
]


@pytest.mark.parametrize(("form", "text"), ECHOES, ids=[form for form, _ in ECHOES])
def test_a_key_is_redacted_in_every_encoded_form(form: str, text: str) -> None:
    environ = {"OPENAI_API_KEY": KEY}
    cleaned = secrets.redact(text, environ)
    assert "[redacted OPENAI_API_KEY]" in cleaned, form
    for encoded in secrets.encoded_forms(KEY):
        assert encoded not in cleaned


def test_ordinary_text_is_not_taken_for_an_encoded_key() -> None:
    environ = {"OPENAI_API_KEY": "sk-short1"}
    text = "the build passed; c2stc2hvcnQx is a word here, and so is 736b2d"
    assert secrets.redact(text, environ) == text
