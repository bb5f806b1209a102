"""Secrets stay in the agent: what a child's environment leaves out, and secret values redacted from output.

A secret variable is one whose NAME says so — it contains (ignoring case) `KEY`, `SECRET`, `TOKEN`, `PASSWORD`,
`PASSWD`, `PASSPHRASE`, `CREDENTIAL` or `COOKIE`, has `AUTH`, `PASS` or `PAT` as a word of its own
(`NPM_CONFIG__AUTH`, `DOCKER_AUTH_CONFIG`, `SSH_AUTH_SOCK`, `DB_PASS`, `GITHUB_PAT`) or ends in `_PWD`
(`MYSQL_PWD`) — or whose VALUE holds a URL with credentials (`https://user:pass@host`, `https://token@host`) or a
token of a well-known format (`TOKEN_FORMATS`: `ghp_…`, `sk-…`, `xoxb-…`, `AKIA…`, a PEM private key, …); and every
model key: `CODER_AGENT_API_KEY`, the
config's `api_key_env`, every credential variable litellm reads (`known_keys.KNOWN_KEY_VARIABLES`, generated from
litellm's own metadata) and whole families where providers read several (`AWS_*`, `AZURE_*`, …). A few names
match a pattern and hold no secret (`BENIGN_NAMES`: zsh's `KEYTIMEOUT`, `TOKENIZERS_PARALLELISM`, the keyring
switches of pip and uv); they pass. The user's `sandbox.pass_env` names variables to pass anyway (`let_through`;
a project file cannot set it).

`child_environ()` is the agent's environment without secrets: what every process the agent starts inherits
(`process.child_env` adds the owner mark; an MCP server's own `env` entry may still set one explicitly).
`editor_terminal_env()` blanks them for commands run in the editor's terminal, whose environment the editor
owns. `hide_environment()` keeps the agent's own environment from the processes it starts: on Linux the agent is
made non-dumpable, so `/proc/<agent>/environ` and debuggers are closed to processes of the same user that lack
CAP_SYS_PTRACE. As a second line of defence, `redact()` replaces the values of secret variables (those passed
through too) wherever they would reach a permission request, a tool result, a session update, an error, a log
line, the session store or `coder-agent run`'s output (a provider's error message may echo the key it was sent),
in the forms an echo takes: as written, URL-encoded, escaped in JSON or Python text, hexadecimal, and base64 (also
inside a longer encoded text, such as `user:key` in a Basic `Authorization` header); so are the keys the agent
holds without a variable (`add_key_value`: the login `coder-agent login` stored).
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import logging
import os
import re
import sys
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Any, Protocol, TypeVar

from coder_agent.known_keys import KNOWN_KEY_VARIABLES


class _Model(Protocol):
    def model_dump(self, *, by_alias: bool, exclude_none: bool) -> dict[str, Any]: ...

    @classmethod
    def model_validate(cls, obj: Any) -> Any: ...


_M = TypeVar("_M", bound=_Model)

API_KEY_ENV_VAR = "CODER_AGENT_API_KEY"
KEY_FAMILIES = ("AWS_", "AZURE_", "HF_", "HUGGING_FACE_", "COHERE_", "VERTEXAI_", "VERTEX_AI_", "WATSONX_",
                "DATABRICKS_", "GOOGLE_CLOUD_CREDENTIALS", "GOOGLE_APPLICATION_CREDENTIALS")  # fmt: skip
"""Prefixes of variables removed whole: providers read several of each (keys, tokens, profiles, endpoints)."""
SECRET_WORDS = ("KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "COOKIE")
"""A name holding one of these (in any case) says its value is a secret; so does `AUTH` as a word, and `_PWD` at
the end (`secret_name`)."""
_SECRET_WORD = re.compile(r"(?:^|_)(?:AUTH|PASS|PAT)(?:$|_)")
"""Short words that say a secret only as words of their own (`DB_PASS`, `GITHUB_PAT`; not `PASSENGER`, `PATH`)."""
TOKEN_FORMATS = re.compile(
    r"(?<![A-Za-z0-9])(?:"
    r"gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,}|glpat-[A-Za-z0-9_-]{20,}|xox[abeoprs]-[A-Za-z0-9-]{20,}"
    r"|sk-[A-Za-z0-9_-]{20,}|(?:AKIA|ASIA)[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35}|hf_[A-Za-z0-9]{30,}|npm_[A-Za-z0-9]{36}"
    r"|pypi-[A-Za-z0-9_-]{50,}|-----BEGIN [A-Z ]*PRIVATE KEY-----)"
)
"""Well-known token formats (GitHub, GitLab, Slack, OpenAI/Anthropic-style `sk-`, AWS access key ids, Google API
keys, Hugging Face, npm, PyPI, PEM private keys): a variable holding one is a secret whatever its name."""
BENIGN_NAMES = frozenset(
    {"KEYTIMEOUT", "TOKENIZERS_PARALLELISM", "PYTHON_KEYRING_BACKEND", "PIP_KEYRING_PROVIDER", "UV_KEYRING_PROVIDER"}
)
"""Names the patterns match that hold no secret (a timeout, a switch, the name of a keyring backend)."""
CREDENTIALS_IN_URL = re.compile(r"[a-z][a-z0-9+.-]*://[^\s/?#@:]*:[^\s/?#@]*@|https?://[^\s/?#@:]+@", re.IGNORECASE)
"""A URL with a user and password (any scheme), or with a user alone over HTTP (a token put there)."""
NOT_REDACTED = frozenset({"SSH_AUTH_SOCK"})
"""Kept from children, but its value is a socket's path, not a secret: not blanked in what is shown."""
PR_SET_DUMPABLE = 4
MIN_SECRET_LENGTH = 8
"""Shorter values are not redacted: they would blank ordinary words."""
MIN_ENCODED_LENGTH = 16
"""An encoded form shorter than this is not redacted (the part of a short key that base64 keeps whatever
surrounds it could be ordinary text)."""

_configured: set[str] = set()
_passed: frozenset[str] = frozenset()
_held: dict[str, str] = {}
"""Keys the agent holds outside its environment (the stored login's), by value: redacted as key variables are."""


def add_key_variable(name: str | None) -> None:
    """Treat `name` (the config's `api_key_env`) as a key variable too."""
    if name:
        _configured.add(name)


def let_through(names: Iterable[str]) -> None:
    """The user's `sandbox.pass_env`: variables children get even though they look secret (replacing the last
    list). Their values are still redacted from what is shown."""
    global _passed
    _passed = frozenset(names)


def add_key_value(value: str, label: str) -> None:
    """Treat `value` as a key wherever key variables' values are redacted (`[redacted <label>]`): a key the agent
    holds without an environment variable (`credentials`: the stored login's), which no child gets anyway."""
    value = value.strip()
    if len(value) >= MIN_SECRET_LENGTH:
        _held[value] = label


def is_key_variable(name: str) -> bool:
    """A model key: the agent's own, litellm's, a provider family's, or the config's `api_key_env`."""
    return (
        name == API_KEY_ENV_VAR or name in KNOWN_KEY_VARIABLES or name in _configured or name.startswith(KEY_FAMILIES)
    )


def is_secret(name: str, value: str) -> bool:
    """Whether a variable is a secret (a model key, a secret-looking name, a URL with credentials, a token of a
    well-known format), whatever `pass_env` says."""
    if is_key_variable(name):
        return True
    if name not in BENIGN_NAMES and secret_name(name):
        return True
    if "://" in value and CREDENTIALS_IN_URL.search(value) is not None:
        return True
    return TOKEN_FORMATS.search(value) is not None


SECRET_HEADERS = frozenset({"authorization", "proxy-authorization"})
"""HTTP headers whose value is a credential though their name holds no secret word (`Cookie`, `X-Api-Key` do)."""


def secret_entry(name: str, value: str) -> bool:
    """Whether an environment or header entry someone else gave (an MCP server's, from the editor) holds a secret:
    by its name or value as a variable is judged, or as a credential header, or because it holds a key the agent
    knows. Such a value is not the agent's to keep: the store and exports leave the entry out."""
    return is_secret(name, value) or name.lower() in SECRET_HEADERS or redact(value) != value


def without_secret_entries(server: dict[str, Any]) -> dict[str, Any]:
    """An MCP server's spec (its wire form) with the `env` and `headers` entries that hold a secret left out."""
    kept = dict(server)
    for part in ("env", "headers"):
        entries = kept.get(part)
        if isinstance(entries, list):
            kept[part] = [
                entry
                for entry in entries
                if isinstance(entry, dict) and not secret_entry(str(entry.get("name", "")), str(entry.get("value", "")))
            ]
    return kept


def secret_name(name: str) -> bool:
    """Whether the name says its value is a secret (`SECRET_WORDS`; `AUTH`, `PASS` or `PAT` as a word; `_PWD` at the
    end)."""
    upper = name.upper()
    return (
        any(word in upper for word in SECRET_WORDS) or upper.endswith("_PWD") or _SECRET_WORD.search(upper) is not None
    )


def kept_from_children(name: str, value: str) -> bool:
    """Whether children must not get this variable: a secret the user's `pass_env` does not name."""
    return name not in _passed and is_secret(name, value)


def hide_environment() -> bool:
    """Make this process non-dumpable (Linux `PR_SET_DUMPABLE` 0), so a command the agent runs cannot read the
    keys from `/proc/<agent pid>/environ` or attach to it. Children are dumpable again after their exec, and
    hold no keys. Returns whether it took effect (False elsewhere, or if the call failed)."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def child_environ(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The agent's environment (or `environ`) without its secrets (see the module docstring)."""
    source = os.environ if environ is None else environ
    return {name: value for name, value in source.items() if not kept_from_children(name, value)}


def editor_terminal_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """For `terminal/create`: every secret the agent has, set empty (ACP can add variables, not remove)."""
    source = os.environ if environ is None else environ
    return {name: "" for name, value in source.items() if kept_from_children(name, value)}


def secret_values(environ: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """(value, variable) of every secret variable long enough to redact, longest first."""
    source = os.environ if environ is None else environ
    found = {
        value.strip(): name for name, value in source.items() if name not in NOT_REDACTED and is_secret(name, value)
    }
    found.update(_held)
    return sorted(
        ((value, name) for value, name in found.items() if len(value) >= MIN_SECRET_LENGTH),
        key=lambda pair: -len(pair[0]),
    )


def redact(text: str, environ: Mapping[str, str] | None = None) -> str:
    """`text` with the value of every key variable replaced by `[redacted NAME]`."""
    return _replace(text, secret_values(environ))


def redact_data(data: Any) -> Any:
    """Every string inside JSON-like data redacted (dicts, lists and strings; other values as they are).

    The environment is read once per call, not once per string: a session's whole history goes through here."""
    values = secret_values()
    return _redact_walk(data, values) if values else data


def _redact_walk(data: Any, values: list[tuple[str, str]]) -> Any:
    if isinstance(data, str):
        return _replace(data, values)
    if isinstance(data, dict):
        return {key: _redact_walk(value, values) for key, value in data.items()}
    if isinstance(data, list):
        return [_redact_walk(item, values) for item in data]
    return data


def _replace(text: str, values: list[tuple[str, str]]) -> str:
    for value, name in values:
        for form in encoded_forms(value):
            if form in text:
                text = text.replace(form, f"[redacted {name}]")
    return text


@functools.lru_cache(maxsize=64)
def encoded_forms(value: str) -> tuple[str, ...]:
    """`value` as written, then the forms an echo of it may take: URL-encoded (`%2B`, `+` for spaces), escaped in a JSON
    string (`\\/` too) or a Python one, hexadecimal, and base64, standard and URL-safe. Base64 is read in 3-byte
    groups, so a key inside a longer text (`user:key`) is encoded differently at each of its three possible offsets:
    each form here is the run of characters that encodes the key's whole groups at one offset, which appears
    whatever comes before or after."""
    forms = [value]
    forms += [urllib.parse.quote(value, safe=""), urllib.parse.quote(value), urllib.parse.quote_plus(value)]
    in_json = json.dumps(value, ensure_ascii=False)[1:-1]  # a provider's JSON error body, as sent
    forms += [in_json, in_json.replace("/", "\\/"), repr(value)[1:-1]]  # `\/` (some servers), a Python dict shown
    raw = value.encode("utf-8")
    forms += [binascii.hexlify(raw).decode("ascii"), binascii.hexlify(raw).decode("ascii").upper()]
    for offset in range(3):
        start = (3 - offset) % 3  # the key's first byte that begins a group when it sits at this offset
        whole = raw[start:][: (len(raw) - start) // 3 * 3]
        encoded = base64.b64encode(whole).decode("ascii")
        forms += [encoded, encoded.replace("+", "-").replace("/", "_")]
    kept = (form for form in forms[1:] if len(form) >= MIN_ENCODED_LENGTH)
    return tuple(dict.fromkeys([value, *kept]))


def redact_model(model: _M) -> _M:
    """A pydantic model (a session update) with key values redacted from every string in it; itself when no key
    is set or none occurs."""
    values = secret_values()
    if not values:
        return model
    data = model.model_dump(by_alias=True, exclude_none=True)
    cleaned = _redact_walk(data, values)
    return model if cleaned == data else type(model).model_validate(cleaned)


class RedactingFilter(logging.Filter):
    """Redacts key values from every record a handler writes (the message with its arguments merged)."""

    def filter(self, record: logging.LogRecord) -> bool:
        values = secret_values()
        if not values:
            return True
        message = record.getMessage()
        cleaned = _replace(message, values)
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = _replace(record.exc_text, values)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True
