"""Questions for the user that are never asked (secrets in a form, URLs that are not plain web addresses), and MCP
form schemas cut down to what an ACP form shows: whatever a server sends, what reaches the editor is valid ACP."""

from __future__ import annotations

from typing import Any

import pytest

from coder_agent.mcp.client_callbacks import form_schema
from coder_agent.session.user_questions import (
    FormQuestion,
    UrlQuestion,
    asks_for_secret,
    refusal,
    secret_fields,
    url_problem,
)
from tests.support.conformance import validate


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "data:text/html,<script>x</script>",
        "file:///etc/passwd",
        "https://user:pass@example.com/",
        "https://token@example.com/",
        "https://exa mple.com/",
        "https://example.com/\nSet-Cookie: x",
        "https:///no-host",
        "//example.com/relative",
        "https://example.com:99999/",
        "https://" + "a" * 5000 + ".com/",
    ],
)
def test_urls_that_are_never_opened(url: str) -> None:
    assert url_problem(url) is not None
    assert refusal(UrlQuestion("Sign in", url, "e1")) is not None


@pytest.mark.parametrize("url", ["https://auth.example.com/login?state=abc#x", "http://localhost:8080/cb"])
def test_plain_web_addresses_are_opened(url: str) -> None:
    assert url_problem(url) is None


@pytest.mark.parametrize(
    ("prop", "secret"),
    [
        ({"type": "string", "title": "Password"}, True),
        ({"type": "string", "description": "Your GitHub personal access token"}, True),
        ({"type": "string", "title": "API key"}, True),
        ({"type": "string", "title": "Card number"}, True),
        ({"type": "string", "title": "Private key (PEM)"}, True),
        ({"type": "string", "title": "Username"}, False),
        ({"type": "string", "title": "Token budget"}, False),
        ({"type": "string", "title": "Password policy", "enum": ["strict", "lax"]}, False),
        ({"type": "boolean", "title": "Remember the password"}, False),
        ({"type": "string", "title": "GitHub token"}, True),
        ({"type": "string", "title": "Your OpenAI key"}, True),
        ({"type": "string", "title": "AWS access key"}, True),
        ({"type": "string", "title": "SSH key"}, True),
        ({"type": "string", "description": "The 6-digit 2FA code"}, True),
        ({"type": "string", "title": "One-time code"}, True),
        ({"type": "string", "title": "Recovery phrase"}, True),
        ({"type": "string", "title": "Bearer"}, True),
        ({"type": "string", "title": "Cookie"}, True),
        ({"type": "string", "title": "Key to sort by"}, False),
        ({"type": "string", "title": "Max tokens"}, False),
    ],
)
def test_free_text_fields_that_ask_for_secrets(prop: dict[str, Any], secret: bool) -> None:
    schema = {"type": "object", "properties": {"field": prop}}
    assert bool(secret_fields(schema)) is secret
    assert (refusal(FormQuestion("?", schema)) is not None) is secret


@pytest.mark.parametrize(
    "message",
    [
        "Paste the value of ANTHROPIC_API_KEY so the server can call the model.",
        "What is your AWS secret access key?",
        "Please paste your OpenAI key below",
        "Enter your GitHub token to continue",
    ],
)
def test_a_form_whose_message_asks_for_a_secret_is_never_shown(message: str) -> None:
    """A server names the secret in the message and gives the field a plain name (`value`)."""
    schema = {"type": "object", "properties": {"value": {"type": "string", "title": "Value"}}}
    assert refusal(FormQuestion(message, schema)) is not None
    assert refusal(FormQuestion("Pick one", {**schema, "description": message})) is not None
    choice = {"type": "object", "properties": {"ok": {"type": "boolean", "title": "Rotate it now?"}}}
    assert refusal(FormQuestion(message, choice)) is None, "a form with no free text cannot carry a secret"


def test_field_names_count_too() -> None:
    assert secret_fields({"type": "object", "properties": {"api_key": {"type": "string"}}}) == ["api_key"]
    assert secret_fields({"type": "object", "properties": {"apiToken": {"type": "string"}}}) == ["apiToken"]
    assert asks_for_secret("What is the db_password?")


HOSTILE: list[Any] = [
    None,
    [],
    {"properties": "nope"},
    {"type": "object", "properties": {"a": {"type": "string", "minLength": "x", "format": "password", "pattern": 5}}},
    {"type": "object", "properties": {"a": {"type": "integer", "default": True, "minimum": 1.5}}},
    {"type": "object", "properties": {"a": {"type": "string", "enum": [1, 2]}}},
    {"type": "object", "properties": {"a": {"type": "string", "enum": ["x"], "enumNames": ["X", "Y"]}}},
    {"type": "object", "properties": {"a": {"type": "string", "oneOf": [{"title": "no const"}]}}},
    {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}}}},
    {"type": "object", "properties": {"a": {"type": "object", "properties": {}}}},
    {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "missing", 3]},
    {"type": "object", "properties": {"a": {"type": "number", "default": "7", "maximum": 10}}, "title": 3},
    {"type": "object", "properties": {"a": {"type": "array", "items": {"anyOf": [{"const": "x"}]}, "default": "x"}}},
]


@pytest.mark.parametrize("raw", HOSTILE)
def test_whatever_a_server_sends_the_editor_gets_a_valid_form_or_nothing(raw: Any) -> None:
    schema, problem = form_schema(raw)
    if problem is None:
        validate("ElicitationSchema", schema)
        assert set(schema.get("required", [])) <= set(schema["properties"])
    else:
        assert schema == {}


def test_the_2025_titled_enum_becomes_titled_options() -> None:
    raw = {"type": "object", "properties": {"c": {"type": "string", "enum": ["r", "g"], "enumNames": ["Red", "Green"]}}}
    schema, problem = form_schema(raw)
    assert problem is None
    assert schema["properties"]["c"] == {
        "type": "string",
        "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}],
    }
    validate("ElicitationSchema", schema)
