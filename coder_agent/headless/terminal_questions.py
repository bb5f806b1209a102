"""Questions of a run (the model's `ask_user`, an MCP server's form or web page), asked on the terminal.

A form is asked field by field: a choice by its number (several, separated by commas, where several may be
picked), a yes/no field by `y` or `n`, a number or a line of text as typed; Enter leaves an optional field
empty, and Ctrl-D dismisses the whole question. A web page is shown with its address, and Enter says the user
is done there. Keys typed before a question was shown are discarded. With no terminal, no one is asked and the
answer says so (the model then asks in the conversation, and the run ends with its question).
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

from coder_agent.headless.events import Output
from coder_agent.headless.terminal_input import discard_typed_ahead, read_line
from coder_agent.session import user_questions
from coder_agent.session.user_questions import Answer, FormQuestion, Question
from coder_agent.visible import visible


class TerminalQuestions:
    """The `ask_user` callable of the run's `LocalBridge`; `console` None means there is no one to ask."""

    def __init__(self, output: Output, console: Console | None, terminal_fd: int = 0) -> None:
        self.output = output
        self.console = console
        self.terminal_fd = terminal_fd

    async def __call__(self, question: Question) -> Answer:
        if self.console is None:
            return user_questions.not_asked("this run has no terminal to ask on")
        self.output.pause()
        console = self.console
        console.print(Text.assemble(("? ", "bold cyan"), (visible(question.message), "bold")))
        discard_typed_ahead(self.terminal_fd)
        if not isinstance(question, FormQuestion):
            console.print(Text(f"  Open {visible(question.url)}", style="underline"))
            console.print(Text("Press Enter when you are done there, or type n to decline: ", style="bold"), end="")
            typed = await read_line(self.terminal_fd)
            if typed is None:
                return Answer(user_questions.CANCEL)
            return Answer(user_questions.DECLINE if typed.strip().lower() in ("n", "no") else user_questions.ACCEPT)
        content: dict[str, Any] = {}
        schema = question.schema
        required = set(schema.get("required") or [])
        for name, field in (schema.get("properties") or {}).items():
            value = await self._field(str(name), field, name in required)
            if value is _DISMISSED:
                return Answer(user_questions.CANCEL)
            if value is not None:
                content[str(name)] = value
        return Answer(user_questions.ACCEPT, content)

    async def _field(self, name: str, field: dict[str, Any], required: bool) -> Any:
        """One field's value (None: left empty), or _DISMISSED at the end of input."""
        assert self.console is not None
        label = visible(str(field.get("title") or name))
        options = _options(field)
        many = field.get("type") == "array"
        if options:
            listed = "  ".join(f"[{number}] {visible(str(option))}" for number, option in enumerate(options, 1))
            self.console.print(Text(f"  {listed}"))
        hint = "numbers, comma-separated" if many else "a number" if options else _kind_hint(field)
        while True:
            optional = "" if required else ", Enter to skip"
            self.console.print(Text(f"{label} ({hint}{optional}): ", style="bold"), end="")
            typed = await read_line(self.terminal_fd)
            if typed is None:
                self.console.print()
                return _DISMISSED
            text = typed.strip()
            if not text and not required:
                return None
            value = _parse(text, field, options, many)
            if value is not None:
                return value
            self.console.print(Text(f"That is not {hint}; try again (Ctrl-D dismisses the question).", style="dim"))


_DISMISSED = object()


def _options(field: dict[str, Any]) -> list[str]:
    source = field.get("items") if field.get("type") == "array" else field
    if not isinstance(source, dict):
        return []
    if isinstance(source.get("enum"), list):
        return [str(option) for option in source["enum"]]
    one_of = source.get("oneOf") or source.get("anyOf")
    if isinstance(one_of, list):
        return [str(option["const"]) for option in one_of if isinstance(option, dict) and "const" in option]
    return []


def _kind_hint(field: dict[str, Any]) -> str:
    return {"boolean": "y or n", "integer": "a whole number", "number": "a number"}.get(str(field.get("type")), "text")


def _parse(text: str, field: dict[str, Any], options: list[str], many: bool) -> Any:
    """The typed text as the field's value, or None if it does not fit."""
    if options:
        picks = [part.strip() for part in text.split(",")] if many else [text]
        if not all(p.isdigit() and 1 <= int(p) <= len(options) for p in picks):
            return None
        chosen = [options[int(p) - 1] for p in picks]
        return chosen if many else chosen[0]
    kind = field.get("type")
    if kind == "boolean":
        return {"y": True, "yes": True, "n": False, "no": False}.get(text.lower())
    if kind in ("integer", "number"):
        try:
            return int(text) if kind == "integer" else float(text)
        except ValueError:
            return None
    return text
