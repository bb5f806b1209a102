"""What the agent knows about providers from a model string alone, without importing litellm.

Which environment variable a provider's key usually lives in: used to answer `session/new` and
`authenticate` at once with a precise "set this variable" message. Providers not listed (cloud SDK auth
such as bedrock or vertex_ai) are not checked here: litellm reports their problems on the first call, in
the provider's words. And which models cache a prompt prefix only where the request marks it.
"""

from __future__ import annotations

KEY_VARIABLES: dict[str, tuple[str, ...]] = {
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
    return KEY_VARIABLES.get(provider_of(model), ())


def needs_key(model: str, api_base: str | None) -> bool:
    """Whether a call cannot work without a key: a known hosted provider at its own URL."""
    provider = provider_of(model)
    if provider in KEYLESS_PROVIDERS or api_base is not None:
        return False
    return provider in KEY_VARIABLES


def child_environ() -> dict[str, str]:
    """The agent's environment without model API keys: what commands and MCP servers it starts inherit.

    A command the model runs (or a prompt-injected one) must not be able to read the user's model key.
    """
    import os

    secrets = {"CODER_AGENT_API_KEY", *(name for names in KEY_VARIABLES.values() for name in names)}
    return {name: value for name, value in os.environ.items() if name not in secrets}
