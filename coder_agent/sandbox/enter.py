"""The sandbox's launcher: `python -I -S enter.py -- COMMAND...` puts up the walls around itself, then becomes the
command (`exec`), so the command and everything it starts stay inside (in a PID namespace of its own, whose end
ends all of it: `sandbox/supervisor.py`). `enter.py --serve FD` is the fork server instead
(`sandbox/forkserver.py`), which does the same for many commands without starting Python for each, and
`enter.py --network [--proxy SOCKET] [--cgroup DIR]` holds a session's network namespace, which its commands join
(`sandbox/network.py`). `enter.py --own [--die-with-parent] -- COMMAND` puts up no walls: it runs a command that runs
with the user's rights and ends what it leaves behind (`supervisor.supervise`).

It runs without site-packages (`-I -S`: fast, and nothing from the environment is imported), so it finds its own
package from its path and imports only standard-library code of ours. The walls come in the environment variable
`CODER_AGENT_SANDBOX` (`sandbox.walls.Walls.spec`, encoded by `sandbox.spec`), removed before the command starts.
When the walls cannot be put up, it prints one line starting with `FAILURE_MARK` on stderr and exits with
`FAILURE_STATUS` without running anything: the agent never runs a command it meant to contain without its walls.
The signals Python ignores (SIGPIPE, SIGXFSZ) are restored for the command, since an ignored signal stays ignored
across exec.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy reads the name the same way)

if TYPE_CHECKING:  # typing costs the launcher's start ~10 ms
    from typing import NoReturn

USAGE = " | ".join(
    (
        "enter.py [--own [--die-with-parent]] -- COMMAND [ARGS...]",
        "--serve FD [--cgroup DIR]...",
        "--network [--proxy SOCKET] [--cgroup DIR]...",
    )
)


def main(argv: list[str]) -> None:
    from coder_agent.sandbox.spec import FAILURE_MARK, SPEC_VARIABLE, decode

    if argv[:1] == ["--serve"] and len(argv) % 2 == 0 and argv[1].isdigit() and set(argv[2::2]) <= {"--cgroup"}:
        from coder_agent.sandbox import forkserver

        forkserver.serve(int(argv[1]), argv[3::2])
        return
    if argv[:1] == ["--network"] and len(argv) % 2 == 1:
        pairs = list(zip(argv[1::2], argv[2::2], strict=True))
        if {name for name, _ in pairs} <= {"--proxy", "--cgroup"}:
            proxy = [value for name, value in pairs if name == "--proxy"]
            _hold_network(proxy[-1] if proxy else None, [value for name, value in pairs if name == "--cgroup"])
            return
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        _fail(FAILURE_MARK, f"usage: {USAGE}")
    flags, command = argv[: argv.index("--")], argv[argv.index("--") + 1 :]
    if flags[:1] == ["--own"] and flags[1:] in ([], ["--die-with-parent"]):
        from coder_agent.sandbox import supervisor

        supervisor.supervise(command, die_with_parent=len(flags) == 2)
    if flags:
        _fail(FAILURE_MARK, f"usage: {USAGE}")
    raw = os.environ.pop(SPEC_VARIABLE, None)
    if raw is None:
        _fail(FAILURE_MARK, f"no walls were given ({SPEC_VARIABLE} is not set); the command was not run")
    if sys.platform != "linux":
        _fail(FAILURE_MARK, f"this launcher is for Linux, not {sys.platform}; the command was not run")
    from coder_agent.sandbox import linux

    try:
        linux.enter(decode(raw), command, dict(os.environ))
    except (linux.Failure, ValueError, OSError) as exc:
        _fail(FAILURE_MARK, f"{exc}; the command was not run")


def _hold_network(proxy_socket: str | None, cgroups: list[str]) -> None:
    """The session's network: put it up, say `ready COOKIE` (or the failure) on stdout, then wait for stdin to close
    (the agent closing the session, or gone) and end the forwarder with it; a forwarder that ended by itself ends
    the holder too (the agent starts another network for the next command)."""
    import select
    import signal as signals

    from coder_agent.sandbox import linux
    from coder_agent.sandbox.spec import FAILURE_MARK, FAILURE_STATUS

    try:
        cookie, forwarder = linux.hold_network(proxy_socket, cgroups)
        watched = [0] if forwarder is None else [0, os.pidfd_open(forwarder)]
    except (linux.Failure, OSError) as exc:
        os.write(1, f"{FAILURE_MARK} {exc}\n".encode())
        os._exit(FAILURE_STATUS)
    os.write(1, f"ready {cookie}\n".encode())
    status = 0
    while True:
        ready = select.select(watched, [], [])[0]
        if 0 not in ready:
            status = 1  # the forwarder is gone
            break
        if not os.read(0, 512):
            break
    if forwarder is not None:
        os.kill(forwarder, signals.SIGKILL)
        os.waitpid(forwarder, 0)
    os._exit(status)


def _fail(mark: str, message: str) -> NoReturn:
    from coder_agent.sandbox.spec import FAILURE_STATUS

    print(f"{mark} {message}", file=sys.stderr, flush=True)
    os._exit(FAILURE_STATUS)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    main(sys.argv[1:])
