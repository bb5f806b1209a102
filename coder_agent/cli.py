"""The `coder-agent` command: parse flags, claim stdio for the protocol, set up logging, serve.

Exit status is 0 after a clean shutdown: stdin EOF, SIGTERM or SIGINT all cancel every turn, close every
session and end child processes first.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

import anyio

from coder_agent import __version__
from coder_agent.secrets import RedactingFilter

log = logging.getLogger("coder_agent")

LOG_LEVELS = ("debug", "info", "warning", "error")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="coder-agent",
        description="An LLM coding agent for editors that speak the Agent Client Protocol (ACP) on stdio.",
    )
    parser.add_argument("--version", action="version", version=f"coder-agent {__version__}")
    parser.add_argument("--config", type=Path, metavar="FILE", help="a config file, over every other source")
    parser.add_argument("--model", help="the litellm model string, e.g. anthropic/claude-sonnet-4-5")
    parser.add_argument(
        "--log-file",
        type=Path,
        default=os.environ.get("CODER_AGENT_LOG_FILE") or None,
        help="append logs to FILE instead of stderr (env CODER_AGENT_LOG_FILE)",
    )
    parser.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default=(os.environ.get("CODER_AGENT_LOG_LEVEL") or "info").lower(),
        help="debug logs every protocol frame (env CODER_AGENT_LOG_LEVEL; default info)",
    )
    args = parser.parse_args(argv)
    if args.log_level not in LOG_LEVELS:
        parser.error(f"CODER_AGENT_LOG_LEVEL must be one of {', '.join(LOG_LEVELS)}")
    for label, value in (("--config", args.config), ("CODER_AGENT_CONFIG", os.environ.get("CODER_AGENT_CONFIG"))):
        if value and not Path(value).expanduser().is_file():
            parser.error(f"{label} {value}: no such file")
    return args


def setup_logging(log_file: Path | None, level: str) -> None:
    """Logs go to stderr or to a file; never to stdout."""
    handler: logging.Handler
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
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
    from coder_agent.server import cli_agent, serve
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
    setup_logging(args.log_file, args.log_level)
    log.info("coder-agent %s starting (pid %d)", __version__, os.getpid())
    try:
        anyio.run(run, args, backend="asyncio")
    except Exception:
        log.exception("coder-agent stopped on an unexpected error")
        _exit(1)
    log.info("coder-agent stopped")
    _exit(0)


def _exit(status: int) -> None:
    """Exit now: background threads (a model library still importing) must not hold the process."""
    logging.shutdown()
    sys.stderr.flush()
    os._exit(status)
