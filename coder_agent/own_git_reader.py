"""The agent's own git inside a session's walls, with the walls put up once: `python -I -S own_git_reader.py`, started
inside them (`own_git.WalledReader`), runs one git after another for the agent, each a child of its own (so inside
the same walls), and answers with what it printed.

Standard library only. On stdin, one request per line (JSON: `argv`, `env`, `cwd`, `timeout`); on stdout, for each,
a line (JSON: `code`, the exit status, negative for a signal, 124 for a timeout, 127 when it could not start; `size`)
and then `size` bytes of the git's stdout. Its stderr is dropped. End of input ends it.
"""

from __future__ import annotations

import json
import subprocess
import sys

TIMED_OUT = 124
NOT_STARTED = 127


def main() -> None:
    answers = sys.stdout.buffer
    for line in sys.stdin.buffer:
        request = json.loads(line)
        try:
            done = subprocess.run(
                [str(word) for word in request["argv"]],
                cwd=str(request["cwd"]),
                env={str(k): str(v) for k, v in request["env"].items()},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                timeout=float(request["timeout"]),
                check=False,
            )
            code, out = done.returncode, done.stdout
        except subprocess.TimeoutExpired:
            code, out = TIMED_OUT, b""
        except OSError:
            code, out = NOT_STARTED, b""
        answers.write(json.dumps({"code": code, "size": len(out)}).encode() + b"\n" + out)
        answers.flush()


if __name__ == "__main__":
    main()
