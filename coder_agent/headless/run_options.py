"""The `run` flags made into `RunOptions`: where the prompt comes from, who can answer a permission question, and the
mode that follows. A problem here is a `UsageError` (exit status 2), found before any session opens.

The prompt is the argument (or `-p`); with `-` or none, it is what comes on stdin. Text piped on stdin next to a
prompt argument is added to the prompt as context (`piped_input`: bounded, and never waited on for more than
`STDIN_WAIT` seconds when the pipe stays silent). With `--continue` or `--resume` and no prompt at all, the run
goes on from where the session stopped (`prompt` None)."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal

from coder_agent.headless.mcp_config import McpConfigError, load_mcp_config, merged
from coder_agent.headless.output_schema import OutputSchema
from coder_agent.headless.piped_input import PipedInput, read_piped
from coder_agent.permissions import DEFAULT_MODE, ModeName, Rule
from coder_agent.protocol.schema import McpServer
from coder_agent.store.records import ID_PATTERN

OutputFormat = Literal["text", "json", "stream-json"]
OUTPUT_FORMATS: tuple[OutputFormat, ...] = ("text", "json", "stream-json")
STDIN_WAIT = 2.0
"""Seconds a silent pipe on stdin is given for its first byte, when the prompt is an argument (or none is needed)."""
MAX_PIPED_BYTES = 100_000
"""Piped context kept at most (its first and last halves)."""


class UsageError(Exception):
    """The command line cannot work; the message says why in one sentence."""


@dataclass(frozen=True)
class RunOptions:
    prompt: str | None
    """None: go on from where the session stopped (--continue or --resume with no prompt)."""
    cwd: Path
    cwd_given: bool
    """Whether --cwd was given (else a resumed session keeps its own folder)."""
    mode: ModeName | None
    """--mode; None: the config's `default_mode` (only when a terminal can ask; else it is chosen here: `auto` in CI,
    else read-only, or `default` when --allow rules are given)."""
    mode_chosen_for_ci: bool
    """The mode is `auto` because the run is in CI (`CI` set): where the sandbox does not work, read-only instead."""
    mode_given: bool
    """--mode was given (else the run says once at its start which mode it chose, and how to choose)."""
    allow: tuple[Rule, ...]
    deny: tuple[Rule, ...]
    model: str | None
    max_turns: int | None
    continue_latest: bool
    resume: str | None
    """--resume's id (or the start of one); "" to pick the session on the terminal."""
    output: OutputFormat
    can_ask: bool
    """A person is at a terminal: permission questions are asked there."""
    verbose: bool = False
    """Commands' output shown whole, not its last lines."""
    add_dirs: tuple[Path, ...] = ()
    """More folders the session works in (--add-dir), after those a resumed session has."""
    mcp_servers: tuple[McpServer, ...] = ()
    """MCP servers from --mcp-config files; a resumed session's own ones start too, these in place of any of the
    same name."""
    piped: PipedInput | None = None
    """What came on stdin next to a prompt argument (added to the prompt), or how the wait for it ended."""
    append_system_prompt: str | None = None
    """--append-system-prompt: instructions added after the agent's own, stored with the session."""
    output_schema: OutputSchema | None = None
    """--output-schema: the final answer must be JSON valid against it (the model is told after the prompt)."""
    rewind: int | None = None
    """--rewind N: go back to before the Nth-last prompt of the resumed session first."""

    def prompt_texts(self) -> list[str] | None:
        """The prompt as the model gets it, a text block each: the prompt, then the piped input in a fence (the
        session is titled after the first alone)."""
        if self.prompt is None or self.piped is None or self.piped.empty:
            return None if self.prompt is None else [self.prompt]
        from coder_agent.tools.file_view import fenced

        return [self.prompt, f"Input piped to the command (stdin):\n{fenced(self.piped.text.strip(chr(10)))}"]

    def prompt_blocks(self) -> list[str] | None:
        """The prompt's text blocks with what the run asks of the answer after them (`--output-schema`)."""
        texts = self.prompt_texts()
        if texts is None or self.output_schema is None:
            return texts
        return [*texts, self.output_schema.instruction()]

    def piped_summary(self) -> dict[str, Any] | None:
        """What became of piped input, for the output: its size and whether it was cut, or that none came."""
        piped = self.piped
        if piped is None or (piped.empty and not piped.waited_out):
            return None
        if piped.waited_out:
            return {"bytes": 0, "truncated": False, "waited_seconds": STDIN_WAIT}
        return {"bytes": piped.size, "truncated": piped.truncated, "kept_bytes": MAX_PIPED_BYTES}


def run_options(args: argparse.Namespace, stdin: BinaryIO, *, stdin_tty: bool, stderr_tty: bool) -> RunOptions:
    """The options of `coder-agent run`; the prompt is read from `stdin` when the argument is `-` or absent."""
    cwd = Path(args.cwd).expanduser() if args.cwd is not None else Path.cwd()
    if not cwd.is_dir():
        raise UsageError(f"--cwd {args.cwd}: {'not a folder' if cwd.exists() else 'no such folder'}")
    if args.max_turns is not None and args.max_turns < 1:
        raise UsageError("--max-turns must be at least 1")
    add_dirs = tuple(_folder("--add-dir", text) for text in getattr(args, "add_dir", []))
    mcp_servers: list[McpServer] = []
    for path in getattr(args, "mcp_config", []):
        try:
            mcp_servers = merged(mcp_servers, load_mcp_config(path))
        except McpConfigError as exc:
            raise UsageError(f"--mcp-config {exc}") from None
    resume, argument = _resume(args.resume, _argument(args))
    can_ask = stdin_tty and stderr_tty
    if resume == "" and not can_ask:
        raise UsageError("--resume without an id picks on a terminal: give the id (`coder-agent sessions` lists them)")
    prompt, piped = _prompt(argument, stdin, stdin_tty, args.continue_latest or resume is not None)
    # With no one to ask: read-only, or, when --allow says what may run, the mode that runs only that (and stops
    # at anything else, so `--continue --allow RULE` lets a stopped call through).
    in_ci = not can_ask and args.mode is None and os.environ.get("CI", "").strip().lower() not in ("", "0", "false")
    fallback: ModeName = "auto" if in_ci else DEFAULT_MODE if args.allow else "read-only"
    mode: ModeName | None = args.mode or (None if can_ask else fallback)
    return RunOptions(
        prompt=prompt,
        cwd=Path(os.path.abspath(cwd)),
        cwd_given=args.cwd is not None,
        mode=mode,
        mode_chosen_for_ci=in_ci,
        mode_given=args.mode is not None,
        allow=_rules("--allow", args.allow),
        deny=_rules("--deny", args.deny),
        model=getattr(args, "model", None),
        max_turns=args.max_turns,
        continue_latest=args.continue_latest,
        resume=resume,
        output=args.output_format,
        can_ask=can_ask,
        verbose=getattr(args, "verbose", False),
        piped=piped,
        add_dirs=add_dirs,
        mcp_servers=tuple(mcp_servers),
        append_system_prompt=_instructions(getattr(args, "append_system_prompt", None)),
        output_schema=_output_schema(getattr(args, "output_schema", None)),
        rewind=_rewind(getattr(args, "rewind", None), args.continue_latest or resume is not None),
    )


def _output_schema(path: Path | None) -> OutputSchema | None:
    if path is None:
        return None
    from coder_agent.headless.output_schema import SchemaProblem, load

    try:
        return load(path.expanduser())
    except SchemaProblem as exc:
        raise UsageError(f"--output-schema {exc}") from None


def _rewind(count: int | None, resumed: bool) -> int | None:
    if count is None:
        return None
    if not resumed:
        raise UsageError("--rewind goes back in a session: give --resume ID or --continue with it")
    if count < 1:
        raise UsageError("--rewind N: N counts prompts back from the last one, from 1")
    return count


def _instructions(text: str | None) -> str | None:
    if text is None:
        return None
    if not text.strip():
        raise UsageError("--append-system-prompt: the instructions are empty")
    return text.strip()


def _folder(flag: str, text: str) -> Path:
    folder = Path(text).expanduser()
    if not folder.is_dir():
        raise UsageError(f"{flag} {text}: {'not a folder' if folder.exists() else 'no such folder'}")
    return Path(os.path.abspath(folder))


def _resume(resume: str | None, argument: str | None) -> tuple[str | None, str | None]:
    """--resume's value and the prompt: `--resume "fix it"` is a prompt for a session to pick, not an id."""
    if resume and argument is None and not ID_PATTERN.fullmatch(resume):
        return "", resume
    return resume, argument


def _argument(args: argparse.Namespace) -> str | None:
    given = [text for text in (args.prompt, getattr(args, "prompt_option", None)) if text is not None]
    if len(given) > 1:
        raise UsageError("give the prompt once: as an argument or with -p, not both")
    return given[0] if given else None


def _prompt(
    argument: str | None, stdin: BinaryIO, stdin_tty: bool, resuming: bool
) -> tuple[str | None, PipedInput | None]:
    """The prompt (None: go on where the session stopped), and what was piped next to it."""
    if argument is not None and argument != "-":
        if not argument.strip():
            raise UsageError("the prompt is empty")
        return argument, None if stdin_tty else read_piped(stdin, wait=STDIN_WAIT, limit=MAX_PIPED_BYTES)
    if argument is None and stdin_tty:
        if resuming:
            return None, None
        raise UsageError('no prompt: give one as an argument (coder-agent run "...") or pipe it on stdin')
    if argument is None and resuming:  # the prompt may come on stdin, or there may be none: do not wait forever
        piped = read_piped(stdin, wait=STDIN_WAIT, limit=None)
        return (None, None) if piped.empty else (piped.text, None)
    text = read_piped(stdin, wait=None, limit=None).text
    if not text.strip():
        raise UsageError("the prompt is empty")
    return text, None


def _rules(flag: str, texts: list[str]) -> tuple[Rule, ...]:
    rules = []
    for text in texts:
        try:
            rules.append(Rule.parse(text))
        except ValueError as exc:
            raise UsageError(f"{flag}: {exc}") from None
    return tuple(rules)
