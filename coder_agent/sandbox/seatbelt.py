"""The walls on macOS: a Seatbelt profile, run through `/usr/bin/sandbox-exec -p PROFILE -D NAME=PATH… -- COMMAND`.

The profile denies by default and allows what a build needs (processes, reading, the usual devices, system
lookups); reads everywhere but the kept-out paths and the contents of the home folder beyond what builds need (its
names and file attributes stay visible, so paths through it resolve); writes beneath the writable places (which are
read too, even inside a kept-out folder: a session's own temp folder and cache) but not the protected ones, nor the
pinned git folders themselves (which cannot be renamed away or removed); a kept-out path inside a writable place
stays out. No network but 127.0.0.1 (when the network goes through the proxy, only the port the agent's proxy
listens on, which the agent holds for the session, so nothing else can own it; any local port otherwise, since
macOS has no private network namespace), no UNIX sockets outside the walls unless allowed, and signals only within
the sandbox. Rules later in the profile win over earlier ones. Every path enters as a parameter (`-D`), never
spliced into the profile's text, so no path can change the profile. This module only builds the command line: it
is unit-tested here and runs only on macOS.
"""

from __future__ import annotations

from collections.abc import Sequence

from coder_agent.sandbox.spec import Spec

SANDBOX_EXEC = "/usr/bin/sandbox-exec"

BASE = """(version 1)
(deny default)
(allow process-fork)
(allow process-exec)
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))
(allow sysctl-read)
(allow mach-lookup
  (global-name "com.apple.system.opendirectoryd.libinfo")
  (global-name "com.apple.system.notification_center")
  (global-name "com.apple.system.logger")
  (global-name "com.apple.trustd.agent")
  (global-name "com.apple.SecurityServer")
  (global-name "com.apple.coreservices.launchservicesd")
  (global-name "com.apple.diagnosticd")
  (global-name "com.apple.system.DirectoryService.libinfo_v1"))
(allow ipc-posix-sem)
(allow ipc-posix-shm-read* ipc-posix-shm-write-create ipc-posix-shm-write-data ipc-posix-shm-write-unlink)
(allow pseudo-tty)
(allow file-ioctl (literal "/dev/null") (literal "/dev/tty") (regex #"^/dev/ttys[0-9]+$") (literal "/dev/ptmx"))
(allow file-write-data (literal "/dev/null") (literal "/dev/zero") (literal "/dev/tty") (literal "/dev/dtracehelper")
  (regex #"^/dev/ttys[0-9]+$") (literal "/dev/ptmx"))
"""


def profile(spec: Spec, *, proxy: bool, proxy_port: int | None = None) -> tuple[str, dict[str, str]]:
    """The profile text and its parameters for walls given as the launcher's spec. With `proxy` (the network goes
    through the agent's proxy), the one port reachable is `proxy_port`, where the proxy listens on 127.0.0.1; without
    a port, no network at all (fail closed)."""
    params: dict[str, str] = {}

    def param(kind: str, values: Sequence[str]) -> list[str]:
        names = []
        for index, value in enumerate(values):
            name = f"{kind}{index}"
            params[name] = value
            names.append(name)
        return names

    lines = [BASE, "(allow file-read*)"]
    home = param("HOME", spec.get("home", ()))
    if home:
        lines.append(_rule("deny", "file-read-data", home))
    readable = param("READ", spec.get("read", ()))
    if readable:
        lines.append(_rule("allow", "file-read*", readable))
    denied_paths = list(spec.get("deny", ()))
    denied = param("DENY", denied_paths)
    if denied:
        lines.append(_rule("deny", "file-read* file-write*", denied))
    write_paths = list(spec.get("write", ()))
    writable = param("WRITE", write_paths)
    if writable:
        lines.append(_rule("allow", "file-read* file-write*", writable))
    protected = param("PROTECT", spec.get("protect", ()))
    if protected:
        lines.append(_rule("deny", "file-write*", protected))
    pinned = param("PIN", spec.get("pin", ()))
    if pinned:
        lines.append(_rule("deny", "file-write*", pinned, kind="literal"))
    inside = param("DENYIN", [d for d in denied_paths if any(_within(d, w) for w in write_paths)])
    if inside:
        lines.append(_rule("deny", "file-read* file-write*", inside))
    if proxy:
        if proxy_port is not None:
            lines.append(f'(allow network-outbound (remote ip "localhost:{int(proxy_port)}"))')
    else:
        lines.append('(allow network-bind network-inbound (local ip "localhost:*"))')
        lines.append('(allow network-outbound (remote ip "localhost:*"))')
    if spec.get("unix_sockets") == ["yes"]:
        lines.append("(allow network* (remote unix-socket))")
    return "\n".join(lines) + "\n", params


def _rule(verdict: str, operations: str, names: list[str], *, kind: str = "subpath") -> str:
    filters = " ".join(f'({kind} (param "{name}"))' for name in names)
    return f"({verdict} {operations} {filters})"


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def argv(spec: Spec, command: Sequence[str], *, proxy: bool, proxy_port: int | None = None) -> list[str]:
    """`sandbox-exec` with the profile and its parameters, then the command."""
    text, params = profile(spec, proxy=proxy, proxy_port=proxy_port)
    defines = [part for name, value in params.items() for part in ("-D", f"{name}={value}")]
    return [SANDBOX_EXEC, "-p", text, *defines, *command]
