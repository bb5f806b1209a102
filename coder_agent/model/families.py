"""What a model family was trained to use, read from its model string: today, which edit tool it writes best.

OpenAI's GPT-5 and GPT-4.1 families, its o3/o4 reasoning models and the codex models were trained on the
`apply_patch` format (`*** Begin Patch` … `*** End Patch`); other families (Claude, Gemini, Qwen, DeepSeek, open
models served anywhere) do best with exact-string edits. The model string may carry a provider prefix
(`openai/gpt-5`, `azure/gpt-5-mini`, `openrouter/openai/gpt-5-codex`): only its last part counts. A deployment
with a name of its own (Azure) is not recognised; the config's `edit_tool` says which tool to use then.
"""

from __future__ import annotations

import re

__all__ = ["trained_on_apply_patch"]

_APPLY_PATCH = re.compile(r"^(?:gpt-5|gpt-4\.1|o3|o4)(?:$|[-.:_@])|codex")


def trained_on_apply_patch(model: str) -> bool:
    """Whether the model's family was trained on the apply_patch format."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    return bool(_APPLY_PATCH.search(name)) and "oss" not in name
