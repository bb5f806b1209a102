"""Prompt templates from `prompts/` (shipped inside the wheel), rendered with Jinja2 (StrictUndefined)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

_PACKAGE_DIR = Path(__file__).resolve().parent


@cache
def prompts_dir() -> Path:
    """`coder_agent/prompts` in an installed wheel; the checkout's `prompts/` in development."""
    for candidate in (_PACKAGE_DIR / "prompts", _PACKAGE_DIR.parent / "prompts"):
        if (candidate / "system.md").is_file():
            return candidate
    raise FileNotFoundError("the prompts/ folder of coder-agent is missing from this installation")


@cache
def _environment() -> Any:
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(prompts_dir()),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=False,
        autoescape=False,
    )


def render(name: str, **values: Any) -> str:
    """Render `prompts/<name>` with `values`; a missing value is an error, never an empty string."""
    return str(_environment().get_template(name).render(**values)).strip()


def load(name: str) -> str:
    """A prompt file's text as it is (tool descriptions)."""
    return (prompts_dir() / name).read_text(encoding="utf-8").strip()
