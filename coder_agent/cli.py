"""The `coder-agent` command: its flags and subcommands, logging, and what each subcommand starts.

With no subcommand it is the ACP agent an editor starts: stdio is claimed for the protocol and it serves until
stdin closes (exit status 0 after a clean shutdown: EOF, SIGTERM or SIGINT cancel every turn, close every
session and end child processes first). Started by a person, with a terminal on stdin, it says what it is and
exits instead of waiting for JSON. `run` is one prompt without an editor (`headless.run`); a bare prompt
(`coder-agent "fix it"`) or a flag only `run` has (`-p`, `-c`, `-r`) means `run` too, since an editor never
passes one. `sessions` lists the stored sessions (`headless.sessions`); `doctor` checks the setup
(`headless.doctor`); `login` and `logout` store and remove a model key (`login`). Nothing heavy is imported
here: an editor's `initialize` waits on this module.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

import anyio

from coder_agent import __version__
from coder_agent.secrets import RedactingFilter, hide_environment

log = logging.getLogger("coder_agent")

LOG_LEVELS = ("debug", "info", "warning", "error")
# permissions.modes.ModeName (a test holds it)
MODES = ("read-only", "plan", "default", "accept-edits", "auto", "full-auto")
OUTPUT_FORMATS = ("text", "json", "stream-json")
EXPORT_FORMATS = ("markdown", "atif", "json")  # headless.export.FORMATS (a test holds it)
COMMANDS = ("run", "doctor", "sessions", "export", "serve", "login", "logout")
VALUE_FLAGS = frozenset({"--config", "--model", "-m", "--log-file", "--log-level"})
"""The flags every form takes that are followed by a value."""
RUN_FLAGS = frozenset({"-p", "--prompt", "-c", "--continue", "-r", "--resume"})
"""Flags only `run` has: given without a subcommand, they mean `run`."""
PICK = ""
"""`--resume` without an id: pick the session on the terminal."""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose epilog is written only when help is shown (it looks at the install)."""

    def __init__(self, *args: object, epilog_factory: Callable[[], str] | None = None, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.epilog_factory = epilog_factory

    def format_help(self) -> str:
        if self.epilog_factory is not None:
            self.epilog = self.epilog_factory()
        return super().format_help()


def _main_epilog() -> str:
    from coder_agent.headless.help import main_epilog

    return main_epilog()


def _run_epilog() -> str:
    from coder_agent.headless.help import RUN_EPILOG

    return RUN_EPILOG


def _add_common(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """The flags every form takes; after a subcommand they leave alone what was given before it."""

    def default(value: object) -> object:
        return value if top else argparse.SUPPRESS

    parser.add_argument(
        "--config", type=Path, metavar="FILE", default=default(None), help="a config file, over every other source"
    )
    parser.add_argument(
        "-m", "--model", default=default(None), help="the litellm model string, e.g. anthropic/claude-sonnet-4-5"
    )
    parser.add_argument(
        "--log-file",
        type=Path,
        metavar="FILE",
        default=default(os.environ.get("CODER_AGENT_LOG_FILE") or None),
        help="append logs to FILE instead of stderr (env CODER_AGENT_LOG_FILE)",
    )
    parser.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default=default(None),
        help="debug logs every protocol frame (env CODER_AGENT_LOG_LEVEL; default warning)",
    )


def build_parser(*, with_commands: bool = True) -> argparse.ArgumentParser:
    """The parser; `with_commands=False` leaves the subcommands out (the ACP agent's start does not pay for them)."""
    formatter = argparse.RawDescriptionHelpFormatter
    parser = _Parser(
        prog="coder-agent",
        usage="coder-agent [options]                  serve ACP on stdin/stdout (an editor starts it)\n"
        "       coder-agent run [options] [PROMPT]     one request without an editor\n"
        '       coder-agent [run options] "PROMPT"     the same: a prompt means run\n'
        "       coder-agent sessions [--all] [--json]  the sessions of this folder, to --resume\n"
        "       coder-agent doctor [--offline]         check the setup; print the editor settings\n"
        "       coder-agent export SESSION [--format F]  a session as Markdown, ATIF or JSON\n"
        "       coder-agent serve [--port N]           ACP over WebSocket, for an editor elsewhere\n"
        "       coder-agent login | logout             store a model and its key (OS keyring), or remove them",
        description="An LLM coding agent for editors that speak the Agent Client Protocol (ACP).\n"
        "Without a subcommand it serves ACP on stdin/stdout, as an editor starts it.",
        formatter_class=formatter,
        epilog_factory=_main_epilog,
    )
    parser.add_argument("--version", action="version", version=f"coder-agent {__version__}")
    _add_common(parser, top=True)
    if not with_commands:
        parser.set_defaults(command=None)
        return parser
    commands = parser.add_subparsers(
        dest="command",
        metavar="{run,sessions,doctor,export,serve,login,logout}",
        help=argparse.SUPPRESS,
        prog="coder-agent",
    )

    run = commands.add_parser(
        "run",
        help="one request without an editor (a terminal, a script, a git hook, CI)",
        description="Give the agent one request without an editor: the same tools and sessions (an editor lists\n"
        "them too). The answer goes to stdout; tool calls, diffs and the plan to stderr.",
        formatter_class=formatter,
        epilog_factory=_run_epilog,
    )
    run.add_argument(
        "prompt",
        nargs="?",
        metavar="PROMPT",
        help="the request; `-` or absent: read it from stdin (piped next to a PROMPT, stdin is added to it)",
    )
    run.add_argument("-p", "--prompt", dest="prompt_option", metavar="PROMPT", help="the request, as an option")
    run.add_argument(
        "--mode",
        choices=MODES,
        help="what may run without asking (default: read-only, or default with --allow; auto in CI; on a "
        "terminal, the config's default_mode, which asks)",
    )
    run.add_argument("--allow", action="append", default=[], metavar="RULE", help="let matching calls run (repeat)")
    run.add_argument("--deny", action="append", default=[], metavar="RULE", help="refuse matching calls (repeat)")
    run.add_argument("--cwd", metavar="DIR", help="the folder to work in (default: the current one)")
    run.add_argument(
        "--add-dir",
        action="append",
        default=[],
        metavar="DIR",
        help="another folder the tools may work in, as the session's own (repeat)",
    )
    run.add_argument(
        "--mcp-config",
        action="append",
        default=[],
        type=Path,
        metavar="FILE",
        help="MCP servers from a JSON file: mcpServers (Claude, Cursor), context_servers (Zed), servers (VS Code)",
    )
    run.add_argument(
        "--append-system-prompt",
        metavar="TEXT",
        help="instructions added to the system prompt, kept with the session (as an editor's systemPrompt)",
    )
    run.add_argument("--max-turns", type=int, metavar="N", help="the most model requests for this prompt")
    resume = run.add_mutually_exclusive_group()
    resume.add_argument(
        "-c",
        "--continue",
        dest="continue_latest",
        action="store_true",
        help="continue the latest session of this folder (no PROMPT: run the call it stopped at, if --allow lets it)",
    )
    resume.add_argument(
        "-r",
        "--resume",
        metavar="ID",
        nargs="?",
        const=PICK,
        help="continue the session with this id (or the start of it); without one, pick it on the terminal",
    )
    run.add_argument(
        "--rewind",
        metavar="N",
        type=int,
        help="with --resume or --continue: first go back to before the Nth-last prompt (files and conversation)",
    )
    run.add_argument(
        "--output-format", choices=OUTPUT_FORMATS, default="text", help="text (default), json or stream-json"
    )
    run.add_argument(
        "--output-schema",
        type=Path,
        metavar="FILE",
        help="end with JSON valid against this JSON Schema, printed alone (one retry; else exit status 4)",
    )
    run.add_argument(
        "--verbose", action="store_true", help="show commands' output whole (text output; default: its last lines)"
    )
    _add_common(run, top=False)
    run.set_defaults(command_parser=run)

    sessions = commands.add_parser(
        "sessions",
        formatter_class=formatter,
        help="list the stored sessions of this folder, newest first",
        description="The sessions of this folder, newest first: id, when last used, model and title. The editors'\n"
        "sessions and the runs' are the same ones; `coder-agent run --resume ID` continues one.",
    )
    sessions.add_argument("--all", dest="every_folder", action="store_true", help="every folder's sessions")
    sessions.add_argument("--json", dest="as_json", action="store_true", help="one JSON array, for scripts")
    sessions.add_argument("--cwd", metavar="DIR", help="the folder whose sessions to list (default: the current one)")
    _add_common(sessions, top=False)
    sessions.set_defaults(command_parser=sessions)

    doctor = commands.add_parser(
        "doctor",
        formatter_class=formatter,
        help="check the setup and print the editor settings for this install",
        description="Check the config files, the model and its key, the endpoint (one tiny request), ripgrep\n"
        "and the data folder, and print the settings for Zed and JetBrains. Exit status 0 only when\n"
        "every check passes.",
    )
    doctor.add_argument("--offline", action="store_true", help="skip the request to the model's endpoint")
    _add_common(doctor, top=False)
    doctor.set_defaults(command_parser=doctor)
    _add_export(commands, formatter)
    _add_serve(commands, formatter)
    _add_login(commands, formatter)
    return parser


def _add_login(commands: argparse._SubParsersAction[_Parser], formatter: type[argparse.HelpFormatter]) -> None:
    login = commands.add_parser(
        "login",
        formatter_class=formatter,
        help="pick a model, paste its key: checked with one request, stored in the OS keyring",
        description="Pick a provider and a model (or give --model), paste the key: it is checked with one request\n"
        "and stored in the OS keyring, or where none works in a file only you can read; never in a\n"
        "project. Editors that offer ACP's terminal login (Zed, JetBrains) run this for you.",
    )
    _add_common(login, top=False)
    login.set_defaults(command_parser=login)
    logout = commands.add_parser("logout", help="remove what `login` stored", description="Remove what `login` stored.")
    _add_common(logout, top=False)
    logout.set_defaults(command_parser=logout)


def _add_export(commands: argparse._SubParsersAction[_Parser], formatter: type[argparse.HelpFormatter]) -> None:
    export = commands.add_parser(
        "export",
        formatter_class=formatter,
        help="write a stored session out as ATIF, JSON or Markdown",
        description="Write a stored session out: atif (the Agent Trajectory Interchange Format that Harbor and its\n"
        "leaderboards read), json (the stored record) or markdown (the conversation as the editor showed it).",
    )
    export.add_argument(
        "session", metavar="SESSION", help="the session's id, or the start of it (`sessions` lists them)"
    )
    export.add_argument(
        "--format", dest="export_format", choices=EXPORT_FORMATS, default="markdown", help="default: markdown"
    )
    export.add_argument("-o", "--output", type=Path, metavar="FILE", help="write to FILE (default: stdout)")
    _add_common(export, top=False)
    export.set_defaults(command_parser=export)


def _add_serve(commands: argparse._SubParsersAction[_Parser], formatter: type[argparse.HelpFormatter]) -> None:
    serve = commands.add_parser(
        "serve",
        formatter_class=formatter,
        help="serve ACP over WebSocket at /acp, for an editor on another machine",
        description="Serve ACP over WebSocket on one endpoint, /acp: each connection is an editor's connection with\n"
        "the same sessions, permissions and sandbox as over stdio. A bearer token is required: set\n"
        "CODER_AGENT_SERVE_TOKEN, or one is generated and printed once. Listens on 127.0.0.1 unless\n"
        "--host says otherwise; put TLS in front with a reverse proxy (README: Serving over WebSocket).",
    )
    serve.add_argument("--host", default="127.0.0.1", help="the address to listen on (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8765, help="the port (default: 8765; 0 picks a free one)")
    serve.add_argument("--max-connections", type=int, default=32, metavar="N", help="at most N at once (default: 32)")
    serve.add_argument(
        "--max-frame-mb", type=float, default=16.0, metavar="MB", help="the largest message taken (default: 16)"
    )
    serve.add_argument(
        "--client-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="a client silent or not reading this long is dropped, its turns cancelled (default: 30)",
    )
    _add_common(serve, top=False)
    serve.set_defaults(command_parser=serve)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    words = with_command(sys.argv[1:] if argv is None else list(argv))
    parser = build_parser(with_commands=any(not word.startswith("-") for word in words))
    args = parser.parse_args(words)
    if args.log_level is None:
        level = (os.environ.get("CODER_AGENT_LOG_LEVEL") or "").lower()
        if level and level not in LOG_LEVELS:
            parser.error(f"CODER_AGENT_LOG_LEVEL must be one of {', '.join(LOG_LEVELS)}")
        args.log_level = level or "warning"
    for label, value in (("--config", args.config), ("CODER_AGENT_CONFIG", os.environ.get("CODER_AGENT_CONFIG"))):
        if value and not Path(value).expanduser().is_file():
            parser.error(f"{label} {value}: no such file")
    return args


def with_command(words: list[str]) -> list[str]:
    """The words with `run` put first when they hold a prompt but no subcommand, or a flag only `run` has: an
    editor never starts the agent so, and a person means `coder-agent run "fix it"`."""
    index = 0
    while index < len(words):
        word = words[index]
        if word in VALUE_FLAGS:
            index += 2
            continue
        if word == "--" or word.split("=", 1)[0] in RUN_FLAGS:
            return ["run", *words]
        if word.startswith("-"):
            index += 1
            continue
        return words if word in COMMANDS else ["run", *words]
    return words


def setup_logging(log_file: Path | None, level: str) -> None:
    """Logs go to stderr or to a file (made readable by its owner only: it holds prompts); never to stdout."""
    handler: logging.Handler
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
        handler = logging.FileHandler(log_file, encoding="utf-8")
    else:
        handler = logging.StreamHandler(sys.__stderr__)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RedactingFilter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())


async def run(args: argparse.Namespace) -> None:
    """Serve ACP on the claimed stdio until EOF or a termination signal."""
    from coder_agent.composition import cli_agent, serve
    from coder_agent.stdio import FdReceiveStream, FdSendStream, claim_stdio

    fds = claim_stdio()
    async with anyio.create_task_group() as task_group:

        async def stop_on_signal() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for signum in signals:
                    log.info("received %s; shutting down", signal.Signals(signum).name)
                    task_group.cancel_scope.cancel()
                    return

        task_group.start_soon(stop_on_signal)
        receive, send = FdReceiveStream(fds.read_fd), FdSendStream(fds.write_fd)
        await serve(receive, send, cli_agent(args.config, args.model))
        task_group.cancel_scope.cancel()


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of `coder-agent` and `python -m coder_agent`."""
    args = parse_args(argv)
    if args.command is None and sys.stdin.isatty():
        import shutil
        import textwrap

        from coder_agent.headless.help import TERMINAL_NOTICE

        width = min(100, shutil.get_terminal_size().columns)
        print(textwrap.fill(TERMINAL_NOTICE, width=width), file=sys.stderr)
        _exit(0)
    setup_logging(args.log_file, args.log_level)
    if not hide_environment():
        log.debug("the agent's environment stays readable by processes of the same user (not Linux)")
    if args.command == "run":
        _exit(_run_command(args))
    if args.command == "doctor":
        from coder_agent.headless.doctor import main as doctor

        _exit(doctor(args.config, args.model, offline=args.offline))
    if args.command == "sessions":
        from coder_agent.headless.sessions import main as sessions

        cwd = Path(args.cwd).expanduser().resolve() if args.cwd else Path.cwd()
        _exit(sessions(cwd, every_folder=args.every_folder, as_json=args.as_json))
    if args.command == "export":
        from coder_agent.headless.export import main as export

        _exit(export(args.session, args.export_format, args.output))
    if args.command == "serve":
        from coder_agent.serve import main as serve

        _exit(serve(args))
    if args.command in ("login", "logout"):
        from coder_agent.login import login_main, logout_main

        _exit(login_main(args.config, args.model) if args.command == "login" else logout_main())
    log.info("coder-agent %s starting (pid %d)", __version__, os.getpid())
    try:
        anyio.run(run, args, backend="asyncio")
    except Exception:
        log.exception("coder-agent stopped on an unexpected error")
        _exit(1)
    log.info("coder-agent stopped")
    _exit(0)


def _run_command(args: argparse.Namespace) -> int:
    from coder_agent.composition import cli_source, session_manager
    from coder_agent.headless import run as headless
    from coder_agent.headless.run_options import UsageError, run_options

    try:
        options = run_options(args, sys.stdin.buffer, stdin_tty=sys.stdin.isatty(), stderr_tty=sys.stderr.isatty())
    except UsageError as exc:
        args.command_parser.error(str(exc))
    except KeyboardInterrupt:  # Ctrl-C while stdin was being read: nothing has started
        return 130
    source = cli_source(args.config, args.model)
    return headless.main(options, lambda tasks: session_manager(source(), tasks))


def _exit(status: int) -> NoReturn:
    """Exit now: background threads (a model library still importing) must not hold the process."""
    logging.shutdown()
    sys.stderr.flush()
    os._exit(status)
