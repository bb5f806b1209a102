"""Secrets stay in the agent: the list of key variables matches what the installed litellm reads (without importing
litellm); every variable whose name or value says secret stays out of children (`secrets.child_environ`) unless
the user's `sandbox.pass_env` names it; and a secret is redacted in the forms a provider's echo of it takes."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pytest

from coder_agent import secrets
from coder_agent.config import load_config
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


# ---- secrets by pattern --------------------------------------------------------------------------------------------

ENVIRON = {
    "PATH": "/usr/bin",
    "HOME": "/home/u",
    "LANG": "C.UTF-8",
    "GIT_AUTHOR_NAME": "Ada",
    "XAUTHORITY": "/home/u/.Xauthority",
    "PIP_INDEX_URL": "https://pypi.org/simple",
    "GIT_REMOTE": "ssh://git@github.com/o/r.git",
    "KEYTIMEOUT": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "UV_KEYRING_PROVIDER": "disabled",
    "GH_TOKEN": "ghp_0123456789abcdefghij",
    "GITHUB_TOKEN": "ghs_0123456789abcdefghij",
    "NPM_TOKEN": "npm_0123456789abcdefghij",
    "CI_JOB_TOKEN": "glcbt-0123456789abcdef",
    "CARGO_REGISTRY_TOKEN": "cio0123456789abcdef",
    "npm_config__auth": "dXNlcjpwYXNzd29yZA==",
    "DOCKER_AUTH_CONFIG": '{"auths": {"r": {"auth": "dXNlcjpw"}}}',
    "PGPASSWORD": "postgres-secret-123",
    "MYSQL_PWD": "mysql-secret-123",
    "VAULT_TOKEN": "hvs.0123456789abcdef",
    "my_api_key": "lowercase-0123456789",
    "SENTRY_AUTH_TOKEN": "sntrys_0123456789",
    "TWINE_PASSWORD": "pypi-0123456789abcdef",
    "GPG_PASSPHRASE": "correct horse battery",
    "SESSION_COOKIE": "sid=0123456789abcdef",
    "SSH_AUTH_SOCK": "/run/user/1000/ssh-XXXX/agent.123",
    "GOOGLE_CREDENTIALS_FILE": "/home/u/creds.json",
    "DATABASE_URL": "postgres://app:s3cret-pass@db.internal/app",
    "UV_INDEX_URL": "https://user:pass@pypi.example.com/simple",
    "REMOTE": "https://ghp_0123456789abcdef@github.com/o/r.git",
    "OPENAI_API_KEY": "sk-openai-0123456789",
}
KEPT = {"PATH", "HOME", "LANG", "GIT_AUTHOR_NAME", "XAUTHORITY", "PIP_INDEX_URL", "GIT_REMOTE", "KEYTIMEOUT",
        "TOKENIZERS_PARALLELISM", "UV_KEYRING_PROVIDER"}  # fmt: skip


@pytest.fixture(autouse=True)
def _nothing_passed() -> None:
    secrets.let_through(())


@pytest.mark.parametrize("name", sorted(set(ENVIRON) - KEPT))
def test_secrets_by_name_or_by_value_never_reach_a_child(name: str) -> None:
    assert name not in secrets.child_environ(ENVIRON)
    assert secrets.editor_terminal_env(ENVIRON)[name] == ""  # the editor's terminal: set empty


def test_ordinary_variables_pass() -> None:
    assert set(secrets.child_environ(ENVIRON)) == KEPT
    assert set(secrets.editor_terminal_env(ENVIRON)) == set(ENVIRON) - KEPT


def test_pass_env_lets_named_ones_through_and_they_stay_redacted() -> None:
    secrets.let_through(["GH_TOKEN", "SSH_AUTH_SOCK"])
    env = secrets.child_environ(ENVIRON)
    assert env["GH_TOKEN"] == ENVIRON["GH_TOKEN"] and env["SSH_AUTH_SOCK"] == ENVIRON["SSH_AUTH_SOCK"]
    assert "GITHUB_TOKEN" not in env and "GH_TOKEN" not in secrets.editor_terminal_env(ENVIRON)
    assert secrets.redact(f"token {ENVIRON['GH_TOKEN']}", ENVIRON) == "token [redacted GH_TOKEN]"


def test_secret_values_are_redacted_but_a_socket_path_is_not() -> None:
    text = " ".join(ENVIRON[name] for name in ("NPM_TOKEN", "DATABASE_URL", "PGPASSWORD", "SSH_AUTH_SOCK"))
    redacted = secrets.redact(text, ENVIRON)
    assert "npm_0123" not in redacted and "s3cret-pass" not in redacted and "postgres-secret" not in redacted
    assert ENVIRON["SSH_AUTH_SOCK"] in redacted
    assert secrets.redact(ENVIRON["PIP_INDEX_URL"], ENVIRON) == ENVIRON["PIP_INDEX_URL"]


def test_the_project_file_cannot_pass_a_secret(tmp_path: Path) -> None:
    root = tmp_path
    (root / ".coder-agent").mkdir()
    (root / ".coder-agent" / "config.toml").write_text('[sandbox]\npass_env = ["GH_TOKEN"]\n', encoding="utf-8")
    assert load_config(root, environ={}, user_config_path=root / "none.toml").sandbox.pass_env == []


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


SLASHED = 'wJalrXUtnFEMI/K7MDENG/bPxRfi\\CY"EXAMPLEKEY'
"""A key with the characters a JSON or Python echo escapes (AWS secret keys hold `/`; some hold more)."""


@pytest.mark.parametrize(
    ("form", "text"),
    [
        ("json", json.dumps({"error": {"message": f"bad key {SLASHED}"}})),
        ("json with escaped slashes", json.dumps({"m": SLASHED}).replace("/", "\\/")),
        ("python repr", repr({"error": {"message": f"bad key {SLASHED}"}})),
    ],
)
def test_a_key_echoed_inside_a_json_or_python_body_is_redacted(form: str, text: str) -> None:
    """A provider's error body echoes the key JSON-escaped (`\\/`, `\\"`, `\\\\`), or litellm shows it as a dict."""
    cleaned = secrets.redact(text, {"AWS_SECRET_ACCESS_KEY": SLASHED})
    assert "[redacted AWS_SECRET_ACCESS_KEY]" in cleaned, form
    assert "EXAMPLEKEY" not in cleaned
