"""The sandbox's launcher: `python -I -S enter.py -- COMMAND...` puts up the walls around itself, then becomes the
command (`exec`), so the command and everything it starts stay inside.

It runs without site-packages (`-I -S`: fast, and nothing from the environment is imported), so it finds its own
package from its path and imports only standard-library code of ours. The walls come in the environment variable
`CODER_AGENT_SANDBOX` (`sandbox.walls.Walls.spec`, encoded by `sandbox.spec`), removed before the command starts.
When the walls cannot be put up, it prints one line starting with `FAILURE_MARK` on stderr and exits with
`FAILURE_STATUS` without running anything: the agent never runs a command it meant to contain without its walls.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

SPEC_VARIABLE = "CODER_AGENT_SANDBOX"
FAILURE_MARK = "coder-agent sandbox:"
FAILURE_STATUS = 125


def main(argv: list[str]) -> None:
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        _fail("usage: enter.py -- COMMAND [ARGS...]")
    command = argv[argv.index("--") + 1 :]
    raw = os.environ.pop(SPEC_VARIABLE, None)
    if raw is None:
        _fail(f"no walls were given ({SPEC_VARIABLE} is not set); the command was not run")
    try:
        from coder_agent.sandbox.spec import decode

        spec = decode(raw)
        if sys.platform == "linux":
            from coder_agent.sandbox import linux

            try:
                linux.enter(spec)
            except linux.Failure as exc:
                _fail(f"{exc}; the command was not run")
        else:
            _fail(f"this launcher is for Linux, not {sys.platform}; the command was not run")
    except (ValueError, OSError) as exc:
        _fail(f"{exc}; the command was not run")
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"{command[0]}: {exc.strerror}", file=sys.stderr)
        os._exit(127 if isinstance(exc, FileNotFoundError) else 126)


def _fail(message: str) -> NoReturn:
    print(f"{FAILURE_MARK} {message}", file=sys.stderr, flush=True)
    os._exit(FAILURE_STATUS)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    main(sys.argv[1:])
