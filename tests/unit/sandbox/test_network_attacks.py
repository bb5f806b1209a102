"""Attacks on the session's shared network namespace (the holder, `enter.py --network`, and the commands that join
it), run for real from inside sandboxed commands, as the model would run them.

Every row is a wall that must hold. The last three were holes a review of the first version found, now closed:
a connect flood on the forwarder's port (3128) ended the session's one forwarder for good, after which a command
could bind the port and read what later commands sent their `HTTP_PROXY` (the forwarder now survives running out of
descriptors or threads, relays at most `MAX_RELAYS` at once, and the holder keeps the port, and ends when its
forwarder does); the forwarder's threads ran outside the session's pids cgroup (the holder joins it now); and the
launcher checked the holder's namespaces by inode numbers, which the kernel recycles (it now checks the holder's
start time and the namespace's cookie).
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from coder_agent.sandbox import probe
from coder_agent.sandbox.command import CommandSandbox
from coder_agent.sandbox.settings import SandboxConfig
from coder_agent.secrets import child_environ
from tests.support.processes import alive
from tests.support.sandbox_network import (
    AS_NOBODY,
    WAIT,
    first_line,
    held_as_nobody,
    stopped,
    through_launcher,
)

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not probe.check().available, reason=f"no sandbox here: {probe.check().reason}"),
    pytest.mark.skipif(probe.check().kind != "landlock", reason="the shared network is Linux's"),
]
ROOT_WITH_SETPRIV = pytest.mark.skipif(
    os.getuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv"
)

LEAVE = """
import ctypes, os, subprocess, sys
libc = ctypes.CDLL(None, use_errno=True)
holder = int(sys.argv[1])
def said(name, result):
    print(name, 'ok' if result >= 0 else os.strerror(ctypes.get_errno()))
said('unshare-net', libc.unshare(0x40000000))
said('unshare-user-net', libc.unshare(0x50000000))
own = os.open('/proc/self/ns/net', os.O_RDONLY)
said('setns-own', libc.setns(own, 0x40000000))
said('clone-newnet', libc.syscall(56, 0x40000000 | 17, 0, 0, 0, 0))
said('clone-newuser', libc.syscall(56, 0x10000000 | 17, 0, 0, 0, 0))
said('clone3', libc.syscall(435, 0, 0))
said('open_tree', libc.syscall(428, -100, b'/proc/self/ns/net', 1))
pidfd = libc.syscall(434, holder, 0)
said('setns-pidfd', libc.setns(pidfd, 0x40000000) if pidfd >= 0 else pidfd)
for kind in ('net', 'user'):
    try:
        os.open(f'/proc/{holder}/ns/{kind}', os.O_RDONLY); print('open-' + kind, 'ok')
    except OSError as exc:
        print('open-' + kind, exc.strerror)
try:
    done = subprocess.run(['nsenter', '-t', str(holder), '-n', 'true'], capture_output=True)
    print('nsenter', 'ok' if done.returncode == 0 else 'failed')
except FileNotFoundError:
    print('nsenter', 'failed')
"""
LEFT = {
    "unshare-net": "Operation not permitted",
    "unshare-user-net": "Operation not permitted",
    "setns-own": "Operation not permitted",
    "clone-newnet": "Operation not permitted",
    "clone-newuser": "Operation not permitted",
    "clone3": "Function not implemented",
    "open_tree": "Operation not permitted",
    "setns-pidfd": "No such process",  # the holder's pid means nothing in the command's PID namespace
    "open-net": "No such file or directory",  # nor is it in the command's /proc
    "open-user": "No such file or directory",
    "nsenter": "failed",
}
TOUCH_HOLDER = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
holder = int(sys.argv[1])
def said(name, result):
    print(name, 'ok' if result >= 0 else os.strerror(ctypes.get_errno()))
limit = (ctypes.c_ulong * 2)(1, 1)
said('prlimit', libc.prlimit(holder, 7, limit, None))
said('setpriority', libc.setpriority(0, holder, 19))
said('ioprio_set', libc.syscall(251, 1, holder, 0))
said('sched_setaffinity', libc.syscall(203, holder, 8, ctypes.byref(ctypes.c_ulong(1))))
said('ptrace', libc.ptrace(16, holder, 0, 0))
said('process_vm_readv', libc.syscall(310, holder, 0, 0, 0, 0, 0))
said('kill', libc.kill(holder, 19))
pidfd = libc.syscall(434, holder, 0)
said('pidfd_send_signal', libc.syscall(424, pidfd, 9, None, 0))
said('pidfd_getfd', libc.syscall(438, pidfd, 0, 0))
for name in ('mem', 'environ', 'root/etc/hostname', 'fd/0'):
    try:
        os.open(f'/proc/{holder}/{name}', os.O_RDONLY); print(name, 'ok')
    except OSError as exc:
        print(name, exc.strerror)
"""
TOUCHED = {
    "prlimit": "Operation not permitted",
    "setpriority": "Operation not permitted",
    "ioprio_set": "Operation not permitted",
    "sched_setaffinity": "Operation not permitted",
    "ptrace": "Operation not permitted",
    "process_vm_readv": "Operation not permitted",
    "kill": "No such process",  # its pid means nothing in the command's PID namespace (any Landlock ABI)
    "pidfd_send_signal": "Bad file descriptor",  # (no pidfd to be had)
    "pidfd_getfd": "Operation not permitted",
    "mem": "No such file or directory",  # nor is it in the command's /proc
    "environ": "No such file or directory",
    "root/etc/hostname": "No such file or directory",
    "fd/0": "No such file or directory",
}
RECONFIGURE = """
import ctypes, os, socket, struct, fcntl
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
down = struct.pack('16sh22x', b'lo', 0)  # flags 0
address = struct.pack('16sHH4s8x', b'lo', 2, 0, bytes([10, 9, 9, 9]))  # 10.9.9.9
for name, number, request in (('lo-down', 0x8914, down), ('lo-address', 0x8916, address)):
    try:
        fcntl.ioctl(s, number, request)
        print(name, 'ok')
    except OSError as exc:
        print(name, exc.strerror)
# netlink RTM_NEWADDR 10.9.9.9/32 on lo (index 1), as `ip addr add` sends it
nl = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
attr = struct.pack('HH4s', 8, 2, bytes([10, 9, 9, 9]))  # IFA_LOCAL
body = struct.pack('BBBBI', 2, 32, 0, 0, 1) + attr
nl.send(struct.pack('IHHII', 16 + len(body), 20, 0x1 | 0x4 | 0x400 | 0x200, 1, 0) + body)  # REQUEST|ACK|CREATE|EXCL
error = struct.unpack_from('i', nl.recv(4096), 16)[0]
print('netlink-newaddr', 'ok' if error == 0 else os.strerror(-error))
for path in ('/proc/sys/net/ipv4/ping_group_range', '/proc/sys/net/ipv4/ip_unprivileged_port_start'):
    try:
        with open(path, 'w') as f:
            f.write('0 0\\n' if 'ping' in path else '0\\n')
        print(path.rsplit('/', 1)[1], 'ok')
    except OSError as exc:
        print(path.rsplit('/', 1)[1], exc.strerror)
"""
RECONFIGURED = {
    "lo-down": "Operation not permitted",
    "lo-address": "Operation not permitted",
    "netlink-newaddr": "Operation not permitted",
    "ping_group_range": "Read-only file system",
    "ip_unprivileged_port_start": "Read-only file system",
}
LO_UP = (
    "import fcntl, socket, struct\n"
    "asked = fcntl.ioctl(socket.socket(2, 2), 0x8913, struct.pack('16sh22x', b'lo', 0))\n"
    "flags = struct.unpack_from('h', asked, 16)[0]\n"
    "print('lo', 'up' if flags & 1 else 'down')\n"
)
SOCKETS = """
import socket, sys
for name, family, kind, protocol in (
    ('packet', 17, socket.SOCK_RAW, 0),
    ('raw-icmp', 2, socket.SOCK_RAW, 1),
    ('raw-ipv6', 10, socket.SOCK_RAW, 58),
    ('ping', 2, socket.SOCK_DGRAM, 1),
    ('vsock', 40, socket.SOCK_STREAM, 0),
):
    try:
        socket.socket(family, kind, protocol).close(); print(name, 'ok')
    except OSError as exc:
        print(name, exc.strerror)
for host in ('127.0.0.1', '::1'):
    try:
        socket.create_connection((host, int(sys.argv[1])), 2); print('machine-' + host, 'ok')
    except OSError as exc:
        print('machine-' + host, exc.strerror)
"""
SOCKETS_REFUSED = {
    "packet": "Operation not permitted",
    "raw-icmp": "Operation not permitted",
    "raw-ipv6": "Operation not permitted",
    "ping": "Permission denied",
    "vsock": "Operation not permitted",
    "machine-127.0.0.1": "Connection refused",
    "machine-::1": "Connection refused",
}
CAPABILITIES = (
    "import re\n"
    "status = open('/proc/self/status').read()\n"
    "print(' '.join(re.findall(r'^(?:Cap\\w+|NoNewPrivs):\\s*(\\S+)', status, re.M)))\n"
)
FLOOD = """
import socket, sys, time
held = []
for _ in range(int(sys.argv[1])):
    try:
        held.append(socket.create_connection(('127.0.0.1', 3128), 2))
    except OSError:
        break
print(len(held), flush=True)
time.sleep(float(sys.argv[2]))
"""
SQUAT = """
import socket
try:
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('127.0.0.1', 3128))
    print('bind ok')
except OSError as exc:
    print('bind', exc.strerror)
"""
ASK_PROXY = """
import socket
try:
    s = socket.create_connection(('127.0.0.1', 3128), 5)
    s.sendall(b'GET http://example.invalid/ HTTP/1.0\\r\\n\\r\\n')
    print(s.recv(12).decode())
except OSError as exc:
    print(exc.strerror)
"""
ABSTRACT_SERVER = (
    "import os, socket\n"
    "s = socket.socket(socket.AF_UNIX); name = b'\\0coder-agent-attack-%d' % os.getpid(); s.bind(name); s.listen()\n"
    "print(name[1:].decode(), flush=True)\n"
    "while True:\n"
    "    s.accept()[0].close()\n"
)
ABSTRACT_CLIENT = (
    "import socket, sys\n"
    "try:\n"
    "    socket.socket(socket.AF_UNIX).connect(b'\\0' + sys.argv[1].encode()); print('connect ok')\n"
    "except OSError as exc:\n"
    "    print('connect', exc.strerror)\n"
)


@contextlib.asynccontextmanager
async def session(work: Path, tasks: anyio.abc.TaskGroup, **settings: object) -> AsyncIterator[CommandSandbox]:
    config = SandboxConfig(**{"max_processes": 256, **settings})  # type: ignore[arg-type]
    sandbox = await CommandSandbox.open((work,), config, probe.check(), tasks)
    try:
        yield sandbox
    finally:
        await sandbox.aclose()


async def holder_of(sandbox: CommandSandbox) -> int:
    assert sandbox.network is not None
    assert await sandbox.network.entry() is not None, sandbox.network.problem
    pid = sandbox.network.holder_pid
    assert pid is not None
    return pid


async def said(sandbox: CommandSandbox, work: Path, script: str, *args: object) -> dict[str, str]:
    code, output = await through_launcher(sandbox, work, ["python3", "-c", script, *map(str, args)])
    assert code == 0, output
    return dict(line.split(" ", 1) for line in output.splitlines())


def forwarder_of(holder: int) -> int:
    children = Path(f"/proc/{holder}/task/{holder}/children").read_text().split()
    assert len(children) == 1, children
    return int(children[0])


def state_of(pid: int) -> str | None:
    """The process's state letter (R, S, T, Z, …), or None once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def in_group(pid: int, group: Path) -> bool:
    return f":{group.name}" in Path(f"/proc/{pid}/cgroup").read_text()


def threads_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise AssertionError("no Threads line")


# Walls that held.


async def test_a_command_cannot_leave_the_sessions_network(work: Path, tasks: anyio.abc.TaskGroup) -> None:
    async with session(work, tasks) as sandbox:
        holder = await holder_of(sandbox)
        assert await said(sandbox, work, LEAVE, holder) == LEFT


async def test_the_holder_cannot_be_limited_signalled_traced_or_read(work: Path, tasks: anyio.abc.TaskGroup) -> None:
    async with session(work, tasks) as sandbox:
        holder = await holder_of(sandbox)
        assert await said(sandbox, work, TOUCH_HOLDER, holder) == TOUCHED
        assert alive(holder)
        assert state_of(holder) != "T", "stopped"


async def test_the_forwarder_is_out_of_reach_and_holds_the_proxy_port(work: Path, tasks: anyio.abc.TaskGroup) -> None:
    """The holder's forwarder listens before any command runs (no command binds 3128 first), and no command can
    signal, trace, limit or read it."""
    async with session(work, tasks, network="proxy") as sandbox:
        forwarder = forwarder_of(await holder_of(sandbox))
        assert await said(sandbox, work, SQUAT) == {"bind": "Address already in use"}
        assert await said(sandbox, work, TOUCH_HOLDER, forwarder) == TOUCHED
        assert alive(forwarder)
        code, output = await through_launcher(sandbox, work, ["python3", "-c", ASK_PROXY])
        assert output == "HTTP/1.1 403\n", output


async def test_the_sessions_network_cannot_be_reconfigured(work: Path, tasks: anyio.abc.TaskGroup) -> None:
    async with session(work, tasks) as sandbox:
        assert await said(sandbox, work, RECONFIGURE) == RECONFIGURED
        assert await said(sandbox, work, LO_UP) == {"lo": "up"}


async def test_no_socket_reaches_past_the_sessions_loopback(work: Path, tasks: anyio.abc.TaskGroup) -> None:
    """Raw, packet and vsock sockets are refused (vsock is in no network namespace), and a server on the machine's
    own loopback is another loopback's."""
    with contextlib.closing(socket.create_server(("127.0.0.1", 0))) as machine:
        port = machine.getsockname()[1]
        async with session(work, tasks) as sandbox:
            assert await said(sandbox, work, SOCKETS, port) == SOCKETS_REFUSED


async def test_a_commands_abstract_socket_is_out_of_the_next_commands_reach(
    work: Path, tasks: anyio.abc.TaskGroup
) -> None:
    """Abstract UNIX sockets live in the network namespace, now the session's; Landlock's scope still keeps each
    command's to itself (a sibling domain's)."""
    async with session(work, tasks, allow_unix_sockets=True) as sandbox:
        server = await sandbox.start(["python3", "-c", ABSTRACT_SERVER], work, child_environ())
        try:
            name = await first_line(server)
            assert await said(sandbox, work, ABSTRACT_CLIENT, name) == {"connect": "Operation not permitted"}
        finally:
            await stopped(server)


async def test_a_root_commands_capabilities_leave_out_the_network_admins(
    work: Path, tasks: anyio.abc.TaskGroup
) -> None:
    if os.getuid() != 0:
        pytest.skip("root's capabilities")
    async with session(work, tasks) as sandbox:
        code, output = await through_launcher(sandbox, work, ["python3", "-c", CAPABILITIES])
        inheritable, permitted, effective, bounding, ambient, no_new_privs = output.split()
        for mask in (permitted, effective, bounding):
            assert int(mask, 16) & (1 << 12 | 1 << 13 | 1 << 21) == 0, output  # NET_ADMIN, NET_RAW, SYS_ADMIN
        assert int(inheritable, 16) == int(ambient, 16) == 0 and no_new_privs == "1"


@ROOT_WITH_SETPRIV
async def test_an_unprivileged_command_has_no_capability_in_the_sessions_user_namespace() -> None:
    """The holder has every capability in the user namespace it made; a command that joined it has none left after
    exec (not the owner's, not a setuid or file-capability program's: no_new_privs), so it cannot reconfigure the
    network, nor reach the holder."""
    async with held_as_nobody() as network:

        async def run(script: str, *args: object) -> dict[str, str] | str:
            done = await anyio.run_process(
                [*AS_NOBODY, *probe.launcher_argv(), "--", "python3", "-c", script, *map(str, args)],
                env=network.env,
                cwd=network.folder,
                check=False,
                stderr=subprocess.STDOUT,
            )
            assert done.returncode == 0, done.stdout
            text = done.stdout.decode()
            return dict(line.split(" ", 1) for line in text.splitlines()) if " " in text.split("\n")[0] else text

        caps = await run(CAPABILITIES)
        assert caps == {"0000000000000000": "0000000000000000 0000000000000000 000001ffffffffff 0000000000000000 1"}
        assert await run(RECONFIGURE) == RECONFIGURED
        assert await run(LO_UP) == {"lo": "up"}
        assert await run(LEAVE, network.holder) == LEFT
        assert await run(TOUCH_HOLDER, network.holder) == TOUCHED
        assert alive(network.holder)


# Holes the review found, closed.


async def test_a_connect_flood_leaves_the_forwarder_serving_and_the_proxy_port_the_holders(
    work: Path, tasks: anyio.abc.TaskGroup
) -> None:
    """The holder's forwarder is the session's one way out. A command that holds connections to it until its
    accept() fails (EMFILE here; with a high limit, its thread start) must not end it (it drops that connection and
    serves on, at most `MAX_RELAYS` at once), and the port stays the holder's, so no command can take it and read
    what every later command sends its HTTP_PROXY. (The holder gets a low descriptor limit here so that the flood
    is small.)"""
    async with session(work, tasks, network="proxy") as sandbox:
        assert sandbox.network is not None
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 96), hard))
        try:
            await holder_of(sandbox)  # the holder (and its forwarder) inherit the limit
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        flood = await sandbox.start(["python3", "-c", FLOOD, "200", "0.3"], work, child_environ())
        try:
            await first_line(flood)
            with anyio.fail_after(WAIT):
                await flood.wait()
        finally:
            await stopped(flood)
        squatted = await said(sandbox, work, SQUAT)
        code, output = await through_launcher(sandbox, work, ["python3", "-c", ASK_PROXY])
        assert (squatted, output) == ({"bind": "Address already in use"}, "HTTP/1.1 403\n")


async def test_the_forwarders_threads_count_against_the_sessions_processes(
    work: Path, tasks: anyio.abc.TaskGroup
) -> None:
    """Every connection to 3128 is two threads in the holder's forwarder: the holder joins the session's pids
    cgroup, so they count against `max_processes` (and the forwarder relays at most `MAX_RELAYS` at once)."""
    async with session(work, tasks, network="proxy", max_processes=16) as sandbox:
        if sandbox.group is None or sandbox.group.max_processes is None:
            pytest.skip("no pids cgroup for the session here")
        forwarder = forwarder_of(await holder_of(sandbox))
        flood = await sandbox.start(["python3", "-c", FLOOD, "24", "5"], work, child_environ())
        try:
            assert await first_line(flood) == "24"
            await anyio.sleep(0.2)
            assert in_group(forwarder, sandbox.group.folders[0]) or threads_of(forwarder) <= 16, (
                f"the forwarder runs {threads_of(forwarder)} threads outside the session's cgroup (max_processes 16)"
            )
        finally:
            await stopped(flood)


@pytest.mark.skipif(os.getuid() != 0, reason="forcing a pid back needs root (ns_last_pid)")
async def test_a_recycled_holder_pid_is_not_joined(work: Path, tasks: anyio.abc.TaskGroup) -> None:
    """When the holder died and its pid came back as another process (in a namespace of its own: another
    session's, or anything), a command with the old walls must not join that: the launcher checks the pid's start
    time after opening its namespaces, and the namespace's cookie (SO_NETNS_COOKIE, never reused) once joined.
    Here the pid is forced back with ns_last_pid; a session's own commands could cycle the pids."""
    async with session(work, tasks) as sandbox:
        assert sandbox.network is not None
        holder = await holder_of(sandbox)
        argv, env = await sandbox.launch(["python3", "-c", LO_UP])
        os.kill(holder, signal.SIGKILL)
        with anyio.fail_after(WAIT):
            while sandbox.network.holder_pid is not None or state_of(holder) is not None:
                await anyio.sleep(0.01)
        impostor = await anyio.to_thread.run_sync(_impostor, holder, None)
        if impostor is None:
            pytest.skip("the pid and the namespace number did not both come back in time (a busy machine)")
        try:
            done = await anyio.run_process(argv, env={**child_environ(), **env}, cwd=work, check=False)
            assert done.returncode == 125, f"ran in another namespace (said {done.stdout.decode().strip()!r})"
        finally:
            impostor.kill()
            impostor.wait()


def _impostor(pid: int, identity: str | None) -> subprocess.Popen[bytes] | None:
    """A process at `pid` in a new network namespace (numbered `identity`, when given), or None within 5 s."""
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(pid - 1))
        process = subprocess.Popen(["unshare", "--net", "sleep", "30"])
        if process.pid == pid:
            own = os.stat("/proc/self/ns/net").st_ino
            for _ in range(100):  # until unshare made the namespace
                with contextlib.suppress(OSError):
                    found = os.stat(f"/proc/{pid}/ns/net")
                    if found.st_ino != own:
                        if identity is None or f"{found.st_dev}:{found.st_ino}" == identity:
                            return process
                        break
                time.sleep(0.002)
        process.kill()
        process.wait()
        time.sleep(0.01)  # the old namespaces are freed by a kernel worker
    return None
