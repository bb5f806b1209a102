"""The `run` flags made into `RunOptions`: where the prompt comes from, who can answer a permission question, and the
mode that follows. A problem here is a `UsageError` (exit status 2), found before any session opens."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

from coder_agent.permissions import ModeName, Rule

OutputFormat = Literal["text", "json", "stream-json"]
OUTPUT_FORMATS: tuple[OutputFormat, ...] = ("text", "json", "stream-json")


class UsageError(Exception):
    """The command line cannot work; the message says why in one sentence."""


@dataclass(frozen=True)
class RunOptions:
    prompt: str
    cwd: Path
    cwd_given: bool
    """Whether --cwd was given (else a resumed session keeps its own folder)."""
    mode: ModeName | None
    """--mode; None: the config's `default_mode` (only when a terminal can ask; else read-only is chosen here)."""
    allow: tuple[Rule, ...]
    deny: tuple[Rule, ...]
    model: str | None
    max_turns: int | None
    continue_latest: bool
    resume: str | None
    output: OutputFormat
    can_ask: bool
    """A person is at a terminal: permission questions are asked there."""
    verbose: bool = False
    """Commands' output shown whole, not its last lines."""


def run_options(args: argparse.Namespace, stdin: BinaryIO, *, stdin_tty: bool, stderr_tty: bool) -> RunOptions:
    """The options of `coder-agent run`; the prompt is read from `stdin` when the argument is `-` or absent."""
    cwd = Path(args.cwd).expanduser() if args.cwd is not None else Path.cwd()
    if not cwd.is_dir():
        raise UsageError(f"--cwd {args.cwd}: {'not a folder' if cwd.exists() else 'no such folder'}")
    if args.max_turns is not None and args.max_turns < 1:
        raise UsageError("--max-turns must be at least 1")
    prompt = _prompt(args.prompt, stdin, stdin_tty)
    can_ask = stdin_tty and stderr_tty
    mode: ModeName | None = args.mode or (None if can_ask else "read-only")
    return RunOptions(
        prompt=prompt,
        cwd=Path(os.path.abspath(cwd)),
        cwd_given=args.cwd is not None,
        mode=mode,
        allow=_rules("--allow", args.allow),
        deny=_rules("--deny", args.deny),
        model=getattr(args, "model", None),
        max_turns=args.max_turns,
        continue_latest=args.continue_latest,
        resume=args.resume,
        output=args.output_format,
        can_ask=can_ask,
        verbose=getattr(args, "verbose", False),
    )


def _prompt(argument: str | None, stdin: BinaryIO, stdin_tty: bool) -> str:
    if argument is not None and argument != "-":
        text = argument
    elif argument is None and stdin_tty:
        raise UsageError('no prompt: give one as an argument (coder-agent run "...") or pipe it on stdin')
    else:
        text = stdin.read().decode("utf-8", errors="replace")
    if not text.strip():
        raise UsageError("the prompt is empty")
    return text


def _rules(flag: str, texts: list[str]) -> tuple[Rule, ...]:
    rules = []
    for text in texts:
        try:
            rules.append(Rule.parse(text))
        except ValueError as exc:
            raise UsageError(f"{flag}: {exc}") from None
    return tuple(rules)
