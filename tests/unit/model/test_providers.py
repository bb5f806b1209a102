"""Model strings are checked when a session opens, from litellm's own lists, without importing litellm there."""

from __future__ import annotations

import pytest

from coder_agent.model.provider_names import PROVIDERS
from coder_agent.model.providers import check_model


def test_the_provider_list_is_litellms() -> None:
    import litellm

    assert {getattr(p, "value", p) for p in litellm.provider_list} == set(PROVIDERS)


@pytest.mark.parametrize(
    "model",
    [
        "anthropic/claude-sonnet-4-5",
        "openai/my-local-model",
        "ollama_chat/qwen3:8b",
        "hosted_vllm/meta/llama-3",
        "gpt-4.1",
        "claude-sonnet-4-5",
        "deepseek-chat",
    ],
)
def test_good_model_strings_pass(model: str) -> None:
    assert check_model(model) is None


@pytest.mark.parametrize(
    ("model", "words"),
    [
        ("antropic/claude-sonnet-4-5", ["'antropic'", "provider/model", "anthropic, "]),
        ("openai/", ["names no model"]),
        ("my-fancy-model", ["without a provider", "provider/model", "openai/<name>"]),
    ],
)
def test_bad_model_strings_say_the_fix(model: str, words: list[str]) -> None:
    problem = check_model(model)
    assert problem is not None
    for word in words:
        assert word in problem
