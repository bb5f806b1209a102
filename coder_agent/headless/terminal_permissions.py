"""Permission questions of a run: asked on the terminal when a person is there, refused when no one is.

On a terminal the question shows the call once (a command as one would type it, or the title and the diff; and
why it asks) and the choices of the editor's prompt, "always" ones included (they hold for the session, as in an
editor); a number, `y`, `n` or `a` answers, Enter rejects. Keys typed before the question was shown are
discarded, so a stray key cannot approve anything.

With no one to ask (stdin or stderr is not a terminal), the call does not run and the turn stops there: the model
does not improvise around a refusal nobody made (it is told the call needs a permission no one could give). The
run then ends with status 3, naming the `--allow` rule that would let the call through; `--continue` with that
rule and no prompt runs the call and goes on.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from rich.console import Console
from rich.text import Text

from coder_agent.headless.events import Output, Permission
from coder_agent.headless.render import content_lines, inline_code, texts
from coder_agent.headless.terminal_input import discard_typed_ahead, read_line
from coder_agent.permissions import ALLOWING, Choice, ChoiceKind, kind_of
from coder_agent.protocol.schema import ToolCallUpdate
from coder_agent.session.bridge import NoOneToAsk, leaves_sandbox
from coder_agent.visible import visible

COMMAND = re.compile(r"`{3,}sh\n")
"""How `run_command` shows its command line (a shell code fence)."""
SHORT_ANSWERS: dict[str, ChoiceKind] = {
    "y": "allow_once",
    "yes": "allow_once",
    "n": "reject_once",
    "no": "reject_once",
    "a": "allow_always",
}


class TerminalPermissions:
    """The `answer` callable of the run's `LocalBridge`; `console` None means there is no one to ask."""

    def __init__(self, output: Output, console: Console | None, terminal_fd: int = 0) -> None:
        self.output = output
        self.console = console
        self.terminal_fd = terminal_fd
        self.refused: list[Permission] = []
        """Questions no one could answer: each stopped the run."""

    async def __call__(self, call: ToolCallUpdate, choices: Sequence[Choice]) -> str | None:
        allow_rules = next((c.rules for c in choices if c.kind == "allow_always"), ())
        title, kind = call.title or "A tool call", call.kind or "other"
        if self.console is None and any(choice.id for choice in choices):
            raise NoOneToAsk  # a question with options of its own (a plan to approve), not a permission: not refused
        if self.console is None:
            event = Permission(call.tool_call_id, title, kind, "refused", "nobody", allow_rules, leaves_sandbox(call))
            self.refused.append(event)
            self.output.permission(event)
            raise NoOneToAsk  # the turn stops at the call, which runs once allowed: the model does not give up on it
        self.output.pause()
        answer = await self._ask(self.console, call, choices)
        allowed = kind_of(choices, answer) in ALLOWING
        decision: Literal["allowed", "refused"] = "allowed" if allowed else "refused"
        event = Permission(call.tool_call_id, title, kind, decision, "terminal", allow_rules, leaves_sandbox(call))
        self.output.permission(event)
        return answer

    async def _ask(self, console: Console, call: ToolCallUpdate, choices: Sequence[Choice]) -> str:
        content = call.content or []
        first = texts(content[:1])
        command = call.kind == "execute" and bool(first) and COMMAND.match(first[0]) is not None
        title = "Run this command?" if command else visible(call.title or "A tool call")
        console.print(Text.assemble(("? ", "bold yellow"), (title, "bold"), (f"  ({call.kind})", "dim")))
        for line in content_lines(content, command=command):
            console.print(line)
        labels = [Text.assemble(f"[{n}] ", *inline_code(visible(choice.label))) for n, choice in enumerate(choices, 1)]
        console.print(Text("  ").join(labels))
        discard_typed_ahead(self.terminal_fd)
        while True:
            console.print(Text(f"Answer 1-{len(choices)} (Enter: Reject): ", style="bold"), end="")
            typed = await read_line(self.terminal_fd)
            if typed is None:  # end of input (Ctrl-D): nobody answers yes
                console.print()
                return _rejection(choices)
            answer = pick(typed, choices)
            if answer is not None:
                return answer
            console.print(Text(f"Type a number from 1 to {len(choices)}, y, n, or press Enter to reject.", style="dim"))


def pick(line: str, choices: Sequence[Choice]) -> str | None:
    """The id of the choice a typed line names (a number, or `y`, `n`, `a`: the first choice of that kind; Enter
    rejects), or None if it names none."""
    text = line.strip().lower()
    if not text:
        return _rejection(choices)
    if text.isdigit() and 1 <= int(text) <= len(choices):
        return choices[int(text) - 1].option_id
    short = SHORT_ANSWERS.get(text)
    return next((choice.option_id for choice in choices if choice.kind == short), None)


def _rejection(choices: Sequence[Choice]) -> str:
    """The first rejecting choice's id (a rejection whatever was offered)."""
    return next((choice.option_id for choice in choices if choice.kind == "reject_once"), "reject_once")
