"""Questions for the user: a form (`FormQuestion`) or a web page to open (`UrlQuestion`), the `Answer`, and
the questions that are never asked.

Never asked, whoever asks (the model or an MCP server): a form that asks for a secret (a password, a key, a
token, a one-time code) in a field, or in its question when it has a field to write in (ACP and MCP both
require URL mode for those, so the answer never passes through the agent); and a URL that is not a plain
`https:`/`http:` address or that carries credentials. The bridges check this before anything reaches the
user (`refusal`); an answer that was not given by anyone says why (`Answer.unasked`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlsplit

ACCEPT: Final = "accept"
DECLINE: Final = "decline"
CANCEL: Final = "cancel"

MAX_URL_CHARS = 4_000

_SERVICES = (
    r"openai|anthropic|gemini|google|aws|azure|gcp|github|gitlab|bitbucket|npm|pypi|docker|slack|discord|stripe|"
    r"twilio|hugging\s?face|hf|cloudflare|heroku|vercel|netlify|digitalocean|linear|jira|notion|sentry"
)
_SECRET = re.compile(
    r"pass(?:word|phrase|code)|\bpwd\b|api[\s_-]?key|apikey|secret|private[\s_-]?key|"
    r"(?:access|auth|api|bearer|refresh|session|personal|oauth|bot|deploy|registry|jwt|id)[\s_-]?token|"
    rf"(?:{_SERVICES})[\s_-]?(?:api[\s_-]?)?(?:key|token|pat)s?\b|"
    r"(?:access|ssh|gpg|pgp|signing|encryption|license|licence|master|recovery)[\s_-]?keys?\b|"
    r"\bbearer\b|\bcookie|credential|\b(?:2fa|mfa|otp|totp)\b|one[\s_-]?time[\s_-]?(?:code|password|pin)|"
    r"verification[\s_-]?code|security[\s_-]?code|recovery[\s_-]?(?:code|phrase)|seed[\s_-]?phrase|mnemonic|"
    r"\bpin\b(?:[\s_-]?code)?(?=\W*$)|"
    r"credit[\s_-]?card|card[\s_-]?number|\bcvv\b|\bcvc\b|\biban\b|social[\s_-]?security|\bssn\b",
    re.IGNORECASE,
)
"""Words that say a question or a field wants a secret or a credential."""


@dataclass(frozen=True)
class FormQuestion:
    """A structured question: `schema` is an ACP/MCP elicitation schema (flat object of primitive fields)."""

    message: str
    schema: dict[str, Any]
    tool_call_id: str | None = None
    """The tool call the question belongs to, if any (editors show it there)."""


@dataclass(frozen=True)
class UrlQuestion:
    """A web page the user is asked to open (a sign-in, a payment): what happens there never reaches us."""

    message: str
    url: str
    elicitation_id: str
    """Ours, unique among the session's open URL questions; `ClientBridge.url_done` names it when it finishes."""
    tool_call_id: str | None = None


Question = FormQuestion | UrlQuestion


@dataclass(frozen=True)
class Answer:
    """What came back: `accept` (with `content` for a form), `decline`, `cancel`, or an action we do not know."""

    action: str
    content: dict[str, Any] = field(default_factory=dict)
    unasked: str | None = None
    """Set when no one was asked: why (no one to ask, a kind of question the client cannot show, refused)."""


def not_asked(reason: str) -> Answer:
    """The answer for a question that was never shown: declined, saying why."""
    return Answer(DECLINE, unasked=reason)


def refusal(question: Question) -> str | None:
    """Why this question must not be asked at all, or None."""
    if isinstance(question, UrlQuestion):
        return url_problem(question.url)
    secrets = secret_fields(question.schema)
    if secrets:
        names = ", ".join(f"`{name}`" for name in secrets)
        return (
            f"the form asks for a secret ({names}); secrets are never asked for in a form, "
            "only on a web page the user opens (URL mode)"
        )
    schema = question.schema
    said = " ".join(
        str(part) for part in (question.message, schema.get("title") or "", schema.get("description") or "")
    )
    if free_text_fields(schema) and asks_for_secret(said):
        return (
            "the form's question asks for a secret, and it has a field to write one in; secrets are never asked "
            "for in a form, only on a web page the user opens (URL mode)"
        )
    return None


def free_text_fields(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The fields of a form a person writes into (a choice among given options, a number or a flag cannot carry
    a secret)."""
    properties = schema.get("properties")
    return {
        str(name): prop
        for name, prop in (properties if isinstance(properties, dict) else {}).items()
        if isinstance(prop, dict) and prop.get("type") == "string" and not prop.get("enum") and not prop.get("oneOf")
    }


def secret_fields(schema: dict[str, Any]) -> list[str]:
    """The free-text fields of a form whose name, title or description asks for a secret or a credential."""
    found = []
    for name, prop in free_text_fields(schema).items():
        words = " ".join(str(part) for part in (name, prop.get("title") or "", prop.get("description") or ""))
        if asks_for_secret(words):
            found.append(name)
    return found


def asks_for_secret(text: str) -> bool:
    """Whether a free-text question reads as a request for a secret or a credential."""
    return _SECRET.search(text.replace("_", " ")) is not None


def url_problem(url: str) -> str | None:
    """Why a URL may not be shown to the user, or None: only plain web addresses, without credentials."""
    if len(url) > MAX_URL_CHARS or any(ord(c) < 0x21 or c == "\x7f" for c in url):
        return "the URL is too long or holds spaces or control characters"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a malformed port
    except ValueError:
        return "the URL is malformed"
    if parts.scheme.lower() not in ("https", "http"):
        return f"only https: and http: addresses are opened, not {parts.scheme or 'a relative address'}:"
    if not parts.hostname:
        return "the URL has no host"
    if parts.username is not None or parts.password is not None:
        return "the URL carries credentials"
    return None
