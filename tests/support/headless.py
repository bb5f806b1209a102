"""`coder-agent run` in the test's own process: the command's whole path after its flags are parsed — options,
the session manager, the local bridge, the real model path through litellm to the fake server, the output
formats — without paying a new interpreter and a litellm import for every run. What only a process boundary
shows (signals, stdin pipes, argparse's exit, terminals) is tested by spawning the command (tests/e2e).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from tests.support.fake_llm import FakeLLM
from tests.support.spawn import agent_env

RUN_WAIT = 120.0


@dataclass
class Ran:
    code: int
    stdout: str
    stderr: str

    def json(self) -> dict[str, Any]:
        result: dict[str, Any] = json.loads(self.stdout)
        return result

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stdout.splitlines()]


async def run_here(
    tmp_path: Path, *args: str, llm: FakeLLM | None = None, stdin: str = "", env: dict[str, str] | None = None
) -> Ran:
    """`coder-agent run ARGS` with its environment as a spawned one would have it (no terminal anywhere)."""
    from coder_agent.cli import parse_args
    from coder_agent.composition import cli_source, session_manager
    from coder_agent.headless import run as headless
    from coder_agent.headless.run_options import run_options

    out, err = io.StringIO(), io.StringIO()
    with environment_of(agent_env(tmp_path, llm, env)), contextlib.redirect_stderr(err), anyio.fail_after(RUN_WAIT):
        options = run_options(parse_args(["run", *args]), io.BytesIO(stdin.encode()), stdin_tty=False, stderr_tty=False)
        source = cli_source(None, None)
        code = await headless.run_in(options, lambda tasks: session_manager(source(), tasks), out)
    return Ran(code, out.getvalue(), err.getvalue())


@contextlib.contextmanager
def environment_of(environment: Mapping[str, str]) -> Iterator[None]:
    """This process's environment replaced by `environment` for the block (tests run one at a time per process)."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(environment)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)
        sys.stderr.flush()
