"""What the agent knows about providers from a model string alone, without importing litellm.

Which environment variable a provider's key usually lives in: used to answer `session/new` and
`authenticate` at once with a precise "set this variable" message. Providers not listed (cloud SDK auth
such as bedrock or vertex_ai) are not checked here: litellm reports their problems on the first call, in
the provider's words. And which models cache a prompt prefix only where the request marks it.
"""

from __future__ import annotations

import json
from functools import cache
from importlib.util import find_spec
from pathlib import Path

from coder_agent.model.provider_names import PROVIDERS

MODEL_MAP_FILE = "model_prices_and_context_window_backup.json"
EXAMPLES = (
    "anthropic/claude-sonnet-4-5, openai/gpt-4.1, gemini/gemini-2.5-pro, or openai/<name> for a self-hosted server"
)

PROVIDER_KEYS: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "mistral": ("MISTRAL_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "together_ai": ("TOGETHERAI_API_KEY", "TOGETHER_API_KEY"),
    "fireworks_ai": ("FIREWORKS_AI_API_KEY", "FIREWORKS_API_KEY"),
    "cerebras": ("CEREBRAS_API_KEY",),
    "moonshot": ("MOONSHOT_API_KEY",),
}
"""Hosted providers and the variables litellm reads their key from."""

KEYLESS_PROVIDERS = frozenset({"ollama", "ollama_chat", "hosted_vllm", "lm_studio", "llamafile", "vllm"})
"""Local servers that need no key."""


def provider_of(model: str) -> str:
    """The litellm provider prefix of a model string (`anthropic/claude-…` → `anthropic`)."""
    if "/" in model:
        return model.split("/", 1)[0]
    if model.startswith(("gpt-", "o1", "o3", "o4", "chatgpt-")):
        return "openai"
    if model.startswith("claude"):
        return "anthropic"
    if model.startswith("gemini"):
        return "gemini"
    return ""


EXPLICIT_CACHE_PROVIDERS = frozenset({"anthropic", "bedrock", "vertex_ai", "vertex_ai_beta", "azure_ai"})
"""Providers whose Claude models cache a prompt prefix only up to a marked breakpoint (`cache_control`).

OpenAI, DeepSeek, xAI and Gemini cache a repeated prefix by themselves; litellm would pass a marker on to
an OpenAI-compatible server as an unknown field, so only these get one."""


def takes_cache_breakpoints(model: str) -> bool:
    """Whether calls to `model` should carry prompt-cache breakpoints: Claude on Anthropic, Bedrock, Vertex, Azure."""
    provider = provider_of(model)
    return provider == "anthropic" or (provider in EXPLICIT_CACHE_PROVIDERS and "claude" in model.lower())


def key_variables(model: str) -> tuple[str, ...]:
    """The provider's usual key variables; empty when none is needed or the provider is not listed."""
    return PROVIDER_KEYS.get(provider_of(model), ())


def needs_key(model: str, api_base: str | None) -> bool:
    """Whether a call cannot work without a key: a known hosted provider at its own URL."""
    provider = provider_of(model)
    if provider in KEYLESS_PROVIDERS or api_base is not None:
        return False
    return provider in PROVIDER_KEYS


def check_model(model: str) -> str | None:
    """None if litellm can route `model`; otherwise what is wrong with it and how to write it."""
    provider, slash, name = model.partition("/")
    if slash:
        if provider not in PROVIDERS:
            listed = ", ".join(sorted(PROVIDERS))
            return (
                f"The model string {model!r} names the provider {provider!r}, which litellm does not know. "
                f"Write it as provider/model, e.g. {EXAMPLES}. The providers are: {listed}."
            )
        if not name.strip():
            return f"The model string {model!r} names no model after {provider}/; e.g. {EXAMPLES}."
        return None
    if provider_of(model) or model in _known_models():
        return None
    return f"litellm does not know the model {model!r} without a provider. Write it as provider/model, e.g. {EXAMPLES}."


@cache
def _known_models() -> frozenset[str]:
    """The model names in litellm's bundled model map, read as a file (importing litellm takes seconds)."""
    spec = find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return frozenset()
    path = Path(next(iter(spec.submodule_search_locations))) / MODEL_MAP_FILE
    try:
        return frozenset(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return frozenset()
