"""Putting the walls up on Linux, in the process that is about to `exec` the command (`sandbox/enter.py`).

Standard library only. In order, each step before the ones that would forbid it:

1. **Namespaces**: the session's network namespace joined (`network` in the spec: see `sandbox/network.py`; its
   holder made it with `hold_network`, in a user namespace of its own when not root, which is joined first), then
   a new mount, UTS and IPC namespace. It has only its own loopback: servers the session's commands start on
   127.0.0.1 reach each other; nothing else is reachable, on any protocol, but through the proxy's forwarder, which
   the holder runs. Without `network` (its holder could not start), a network namespace of the command's own is
   made as well (and a user namespace first when not root, mapping the user to itself), its loopback brought up
   here, and the forwarder forked for it (step 5).
2. **Mounts** in the private mount namespace: the whole tree read-only (so no chmod, chown, utimes or xattr reaches
   past the walls either: Landlock does not cover those), the writable places bound back writable, the `.git`
   folders of the workspace pinned (bound onto themselves, so they cannot be renamed away and replaced), and the
   protected paths (`.git/hooks`, `.git/config`, `.coder-agent`) bound read-only; a `/dev/shm` and a devpts
   instance of the command's own (the machine's other terminals out of reach). The session's pids cgroup, if
   any, is joined first, while /sys is still writable.
3. **Limits**: file size; process count (RLIMIT_NPROC inside the user namespace, or the pids cgroup the agent
   made for the session); for root, the capabilities that reach past the walls leave the bounding set.
4. **no_new_privs, Landlock** (reads everywhere but the denied paths, the home folder beyond what builds need
   (`read`) and `/dev`, which gets a short list of safe devices; writes to the writable places; no signals to and
   no abstract sockets of processes outside).
5. **The proxy's forwarder** (network through the proxy, in a network namespace of the command's own): a child
   process, forked inside the Landlock domain, that listens on the namespace's 127.0.0.1 and carries each
   connection to the agent's proxy over its UNIX socket.
6. **seccomp** (`seccomp.py`), which also forbids undoing any of it.

Any failure raises `Failure` with one sentence: the caller exits without running the command (fail closed).
"""

from __future__ import annotations

import ctypes
import os
import resource
import struct

from coder_agent.sandbox import landlock, seccomp, supervisor
from coder_agent.sandbox.spec import Spec

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy reads the name the same way)
if TYPE_CHECKING:  # typing costs the launcher's start ~10 ms
    from typing import NoReturn

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC = 32, 1024, 2048, 4096, 16384
MS_PRIVATE, MS_RELATIME = 1 << 18, 1 << 21
ST_NOATIME, ST_NODIRATIME, ST_RELATIME = 1024, 2048, 4096
SYS_MOUNT_SETATTR, AT_FDCWD, AT_RECURSIVE, MOUNT_ATTR_RDONLY = 442, -100, 0x8000, 0x1  # the same on every architecture
PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP, PR_SET_SECCOMP, PR_SET_PDEATHSIG = 38, 24, 22, 1
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
SECCOMP_MODE_FILTER = 2
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
RLIMIT_FSIZE, RLIMIT_CORE, RLIMIT_NPROC = 1, 4, 6
SOL_SOCKET, SO_NETNS_COOKIE = 1, 71
LINUX_CAPABILITY_VERSION_3 = 0x20080522

ROOT_CAPABILITIES_DROPPED = (
    2,  # DAC_READ_SEARCH (open_by_handle_at)
    9,  # LINUX_IMMUTABLE
    12,  # NET_ADMIN
    13,  # NET_RAW
    14,  # IPC_LOCK
    16,  # SYS_MODULE
    17,  # SYS_RAWIO
    18,  # SYS_CHROOT
    19,  # SYS_PTRACE
    20,  # SYS_PACCT
    21,  # SYS_ADMIN
    22,  # SYS_BOOT
    23,  # SYS_NICE
    24,  # SYS_RESOURCE (raising the limits above)
    25,  # SYS_TIME
    26,  # SYS_TTY_CONFIG
    27,  # MKNOD
    28,  # LEASE (a lease on a file outside holds its writers back; seccomp refuses leases too)
    29,  # AUDIT_WRITE
    30,  # AUDIT_CONTROL
    31,  # SETFCAP
    32,  # MAC_OVERRIDE
    33,  # MAC_ADMIN
    34,  # SYSLOG
    35,  # WAKE_ALARM
    36,  # BLOCK_SUSPEND
    37,  # AUDIT_READ
    38,  # PERFMON
    39,  # BPF
    40,  # CHECKPOINT_RESTORE
)
"""What root keeps (owning files, changing their owner, signalling within the walls) is what a user has over their
own files; the rest of root's power leaves the bounding set, so no program run inside gets it back."""

DEVICES_READ_WRITE = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/shm")
"""And /dev/pts where it is the command's own instance; else only the command's own terminal."""
DEVICES_READ = ("/dev/random", "/dev/urandom")
"""(`/dev/fd/N` and `/dev/stdin` lead through /proc to the file already open, which is judged as itself.)"""
PROXY_PORT = 3128
"""Where the forwarder listens inside the network namespace (private to it, so no clash)."""


class Failure(Exception):
    """The walls could not be put up; the message says what failed."""


_libc = ctypes.CDLL(None, use_errno=True)


def _prctl(option: int, *args: int | ctypes.Array[ctypes.c_char]) -> int:
    values = [a if isinstance(a, ctypes.Array) else ctypes.c_ulong(a) for a in args]
    values += [ctypes.c_ulong(0)] * (4 - len(values))
    return int(_libc.prctl(ctypes.c_int(option), *values))


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise Failure(f"{what} failed: {os.strerror(err)}")
    return result


def enter(spec: Spec, argv: list[str], env: dict[str, str], *, die_with_parent: bool = False) -> NoReturn:
    """Put up the walls `spec` describes (see `sandbox.walls.Walls.spec`) and run `argv` with `env` inside them, in
    a PID namespace of its own whose init is ours: this process waits for it and ends as the command ends
    (`supervisor`). With `die_with_parent` (the fork server's children: their single-threaded parent), everything
    ends when this process's parent does. `Failure` (nothing run) if a wall cannot go up.

    The work is done before the namespace's init is forked, in this process, wherever the result is inherited (the
    mount namespace, limits, capabilities, no_new_privs, the Landlock rules, the seccomp program): what a fork
    copies is paid again for each page either side then touches, so the init does little (its /proc, Landlock's
    restriction, the seccomp filter) and starts the command with `posix_spawn`, which copies nothing."""
    abi = landlock.abi_version()
    if abi < landlock.MIN_ABI:
        raise Failure(f"the kernel's Landlock ABI is {abi}; the sandbox needs {landlock.MIN_ABI} or newer")
    arch = os.uname().machine
    if arch not in seccomp.AUDIT_ARCH:
        raise Failure(f"no seccomp filter for the {arch} architecture")
    resource.setrlimit(RLIMIT_CORE, (1, 1))  # a limit of 1 makes the kernel refuse a piped core_pattern helper too
    if die_with_parent:
        parent = os.getppid()
        _prctl(PR_SET_PDEATHSIG, 9)
        if os.getppid() != parent:
            raise Failure("the process that started the command is gone")
    shared = spec.get("network", ())
    if shared:
        _join_network(shared[0])
        _unshare_rest()
    else:
        _namespaces(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWPID)
    join_cgroups(spec.get("cgroup", []))  # before /sys goes read-only; the waiter too, so all of the command counts
    private_pts = _mounts(spec)
    if not shared:
        _loopback_up()
    _limits(spec)
    _check(_prctl(PR_SET_NO_NEW_PRIVS, 1), "no_new_privs")
    ruleset = _landlock(spec, abi, private_pts)
    families = {seccomp.AF_INET, seccomp.AF_INET6, seccomp.AF_NETLINK}  # in the private network namespace
    forwarded = frozenset(families | {seccomp.AF_UNIX})
    if spec.get("unix_sockets") == ["yes"]:
        families.add(seccomp.AF_UNIX)
    program = seccomp.filter_program(arch, frozenset(families))
    path = supervisor.find_program(argv[0], env)
    report = supervisor.split()  # from here on, in the namespace's init (pid 1)
    if _private_proc():
        ruleset.allow("/proc", landlock.READ)  # the new mount: the rule made before it was for the machine's
    ruleset.restrict()
    for proxy_socket in () if shared else spec.get("proxy", ()):
        _start_forwarder(proxy_socket, arch, forwarded)
    _install_seccomp(program)
    supervisor.run_command(report, path, argv, env)


def hold_network(proxy_socket: str | None, cgroups: list[str]) -> tuple[int, int | None]:
    """Become a session's network (`enter.py --network`): the session's cgroup joined (its forwarder's threads
    count there), a network namespace of its own (in a user namespace of its own when not root) with its loopback
    up and, with `proxy_socket`, the proxy's forwarder listening in it; then no capabilities, no_new_privs and a
    seccomp filter. The namespace's cookie (never reused while the machine runs) and the forwarder's pid."""
    arch = os.uname().machine
    if arch not in seccomp.AUDIT_ARCH:
        raise Failure(f"no seccomp filter for the {arch} architecture")
    join_cgroups(cgroups)
    _namespaces(CLONE_NEWNET)
    _loopback_up()
    cookie = _netns_cookie()
    _check(_prctl(PR_SET_NO_NEW_PRIVS, 1), "no_new_privs")
    _drop_capabilities()
    families = frozenset({seccomp.AF_INET, seccomp.AF_INET6, seccomp.AF_NETLINK})
    forwarder = None
    if proxy_socket is not None:
        forwarder = _start_forwarder(proxy_socket, arch, families | {seccomp.AF_UNIX}, keep_listener=True)
    _install_seccomp(seccomp.filter_program(arch, families))
    return cookie, forwarder


def _join_network(entry: str) -> None:
    """Join the session's network (`network` in the spec: the holder's pid and start time, its network namespace's
    cookie, and `user` when it made a user namespace too). The namespaces are opened through /proc, then the pid is
    checked to be the holder still (its start time: a holder that died and whose pid came back as another process
    is refused), and once joined, the namespace is checked to be the one the holder made (its cookie)."""
    pid, started, cookie, *user = entry.split(":")
    if not (pid.isdigit() and started.isdigit() and cookie.isdigit()) or user not in ([], ["user"]):
        raise Failure(f"the session's network is malformed ({entry!r})")
    net = _namespace_file(pid, "net")
    fds = [net, *([_namespace_file(pid, "user")] if user else [])]
    try:
        if start_time(int(pid)) != int(started):
            raise Failure(f"the session's network is gone (process {pid} is not its holder any more)")
        if user:
            _check(_libc.setns(fds[1], CLONE_NEWUSER), "joining the session's user namespace (setns)")
        _check(_libc.setns(net, CLONE_NEWNET), "joining the session's network namespace (setns)")
    finally:
        for fd in fds:
            os.close(fd)
    if _netns_cookie() != int(cookie):
        raise Failure("the session's network is gone (the namespace joined is another one)")


def _namespace_file(pid: str, kind: str) -> int:
    try:
        return os.open(f"/proc/{pid}/ns/{kind}", os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        raise Failure(f"the session's network is gone ({kind} namespace: {exc.strerror})") from None


def start_time(pid: int) -> int | None:
    """When the process started (clock ticks after boot: with the pid, what names one process for good)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rpartition(b")")[2].split()
    except OSError:
        return None
    return int(fields[19])  # field 22, counted from the state (field 3)


def _netns_cookie() -> int:
    """The current network namespace's cookie (SO_NETNS_COOKIE), which no other namespace ever has."""
    fd = _check(_libc.socket(1, 2, 0), "a socket to read the network namespace's cookie")  # AF_UNIX, SOCK_DGRAM
    try:
        value, size = ctypes.c_uint64(0), ctypes.c_uint32(8)
        _check(
            _libc.getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, ctypes.byref(value), ctypes.byref(size)),
            "reading the network namespace's cookie",
        )
        return int(value.value)
    finally:
        os.close(fd)


def _drop_capabilities() -> None:
    """No capabilities left at all (the holder needs none once its namespace is up)."""
    header = ctypes.create_string_buffer(struct.pack("=Ii", LINUX_CAPABILITY_VERSION_3, 0), 8)
    data = ctypes.create_string_buffer(bytes(24), 24)
    _check(_libc.capset(header, data), "dropping the capabilities")


def _unshare_rest() -> None:
    """The mount, UTS, IPC and PID namespaces of the command's own, inside the session's user namespace if it joined
    one (where it has the rights to make them)."""
    flags = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWPID
    _check(_libc.unshare(flags), "creating the namespaces (unshare)")


def _namespaces(flags: int) -> None:
    uid, gid = os.getuid(), os.getgid()
    if uid == 0 and _libc.unshare(flags) == 0:
        return
    _check(_libc.unshare(flags | CLONE_NEWUSER), "creating a user namespace (unshare)")
    try:
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
    except OSError as exc:
        raise Failure(f"mapping the user into its namespace failed: {exc.strerror}") from None


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _mount(source: str | None, target: str, flags: int, fstype: str | None = None, data: str | None = None) -> None:
    result = _libc.mount(
        None if source is None else source.encode(),
        target.encode(),
        None if fstype is None else fstype.encode(),
        ctypes.c_ulong(flags),
        None if data is None else data.encode(),
    )
    _check(result, f"mount on {target}")


def _set_read_only(path: str, read_only: bool) -> int:
    """mount_setattr: make the mounts at and below `path` read-only (or writable); the raw result."""
    attr = struct.pack("=QQQQ", MOUNT_ATTR_RDONLY if read_only else 0, 0 if read_only else MOUNT_ATTR_RDONLY, 0, 0)
    buffer = ctypes.create_string_buffer(attr, len(attr))
    return int(
        _libc.syscall(
            ctypes.c_long(SYS_MOUNT_SETATTR),
            ctypes.c_int(AT_FDCWD),
            path.encode(),
            ctypes.c_uint(AT_RECURSIVE),
            buffer,
            ctypes.c_size_t(len(attr)),
        )
    )


def _mounts(spec: Spec) -> bool:
    """The file system as the command sees it; whether it has a private /dev/pts."""
    _mount(None, "/", MS_REC | MS_PRIVATE)
    _check(_set_read_only("/", True), "making the file system read-only")  # metadata too: chmod, chown, utimes
    private_pts = _private_devices()
    for path in spec.get("write", ()):
        if os.path.isdir(path) and not os.path.islink(path):
            _mount(path, path, MS_BIND | MS_REC)
            _set_read_only(path, False)  # refused where the mount was read-only to begin with: it stays so
    for path in spec.get("pin", ()):
        if os.path.isdir(path) and not os.path.islink(path):
            _mount(path, path, MS_BIND | MS_REC)
    for path in spec.get("protect", ()):
        if not os.path.lexists(path) or os.path.islink(path):
            continue
        _mount(path, path, MS_BIND | MS_REC)
        _mount(None, path, MS_BIND | MS_REMOUNT | MS_RDONLY | _locked_flags(path))
    try:  # the working folder again, through the new mounts (it still leads to what was under them)
        os.chdir(os.getcwd())
    except OSError as exc:
        raise Failure(f"entering the working folder failed: {exc.strerror}") from None
    return private_pts


def _private_devices() -> bool:
    """A /dev/shm of the command's own, and a devpts instance of its own (its terminals, not the machine's); whether
    the devpts instance could be made."""
    if os.path.isdir("/dev/shm"):
        _mount("tmpfs", "/dev/shm", MS_NOSUID | MS_NODEV, "tmpfs", "mode=1777")
    if not os.path.isdir("/dev/pts"):
        return False
    try:
        _mount("devpts", "/dev/pts", MS_NOSUID | MS_NOEXEC, "devpts", "newinstance,ptmxmode=0666,mode=0620")
    except Failure:
        return False
    if os.path.exists("/dev/ptmx"):
        _mount("/dev/pts/ptmx", "/dev/ptmx", MS_BIND)
    return True


def _private_proc() -> bool:
    """A /proc of the command's PID namespace (read-only, as the rest): processes outside are not there to see; made
    by the namespace's init (a /proc shows the namespace of who mounts it). Where the kernel refuses it (a /proc with
    parts masked, as in some containers) the machine's stays, read-only, and False: the namespace still keeps outside
    processes out of reach, since their pids mean nothing inside."""
    try:
        _mount("proc", "/proc", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, "proc")
    except Failure:
        return False
    return True


def _locked_flags(path: str) -> int:
    """The mount's flags a remount must keep (in a user namespace they are locked)."""
    have = os.statvfs(path).f_flag
    flags = 0
    for st_flag, ms_flag in (
        (os.ST_NOSUID, MS_NOSUID),
        (os.ST_NODEV, MS_NODEV),
        (os.ST_NOEXEC, MS_NOEXEC),
        (ST_NOATIME, MS_NOATIME),
        (ST_NODIRATIME, MS_NODIRATIME),
        (ST_RELATIME, MS_RELATIME),
    ):
        if have & st_flag:
            flags |= ms_flag
    return flags


def _loopback_up() -> None:
    """Bring up `lo` in the new network namespace (it starts down)."""
    fd = _check(_libc.socket(2, 2, 0), "a socket to configure the loopback")  # AF_INET, SOCK_DGRAM
    try:
        request = ctypes.create_string_buffer(b"lo".ljust(16, b"\0") + b"\0" * 24, 40)
        _check(_libc.ioctl(fd, ctypes.c_ulong(SIOCGIFFLAGS), request), "reading the loopback's flags")
        flags = struct.unpack_from("=h", request.raw, 16)[0] | IFF_UP
        struct.pack_into("=h", request, 16, flags)
        _check(_libc.ioctl(fd, ctypes.c_ulong(SIOCSIFFLAGS), request), "bringing the loopback up")
    finally:
        os.close(fd)


def _start_forwarder(socket_path: str, arch: str, families: frozenset[int], *, keep_listener: bool = False) -> int:
    """Fork the forwarder: it listens on 127.0.0.1:PROXY_PORT here and relays to the agent's proxy; its pid.

    A command's own forwarder is forked inside the Landlock domain (so the command's death may signal it: a domain
    cannot signal a process outside it, the kernel's parent-death signal included), under a seccomp filter of its
    own that lets it open the UNIX socket to the proxy and nothing the command's filter forbids otherwise. The
    session's holder keeps the listening socket too (`keep_listener`), so the port stays the forwarder's even if
    the forwarder ends: no command can take it and read what the others send the proxy."""
    from coder_agent.sandbox import forwarder  # only when the network goes through the proxy

    listener = forwarder.listen(PROXY_PORT)
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the forwarder: ends when its parent (the command after exec, or the holder) ends
        try:
            _prctl(PR_SET_PDEATHSIG, 9)
            if os.getppid() == parent:
                _install_seccomp(seccomp.filter_program(arch, families))
                forwarder.serve(listener, socket_path)
        finally:
            os._exit(0)
    if not keep_listener:
        listener.close()
    return pid


def _limits(spec: Spec) -> None:
    for value in spec.get("max_file_bytes", ()):
        resource.setrlimit(RLIMIT_FSIZE, (int(value), int(value)))
    if not spec.get("cgroup") and os.getuid() != 0:
        for value in spec.get("max_processes", ()):
            resource.setrlimit(RLIMIT_NPROC, (int(value), int(value)))
    if os.getuid() == 0:
        for cap in ROOT_CAPABILITIES_DROPPED:
            _prctl(PR_CAPBSET_DROP, cap)  # an unknown capability (an older kernel) is skipped
    _clear_inherited_capabilities()


def _clear_inherited_capabilities() -> None:
    """No inheritable and no ambient capabilities: what `exec` could carry over past the bounding set (root's
    inheritable set counts in full for any program it runs; an ambient one for any program at all)."""
    _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)  # refused only below Linux 4.3, where there is none
    header = ctypes.create_string_buffer(struct.pack("=Ii", LINUX_CAPABILITY_VERSION_3, 0), 8)
    data = ctypes.create_string_buffer(24)
    _check(_libc.capget(header, data), "reading the capabilities")
    words = list(struct.unpack("=6I", data.raw))  # (effective, permitted, inheritable) twice: the low, the high 32
    words[2] = words[5] = 0
    _check(_libc.capset(header, ctypes.create_string_buffer(struct.pack("=6I", *words), 24)), "clearing capabilities")


def join_cgroups(folders: list[str]) -> None:
    """Join the session's cgroups, but those this process is in already (born in them: the fork server's children),
    since a move, even to where it is, costs the kernel milliseconds."""
    if not folders:
        return
    try:
        with open("/proc/self/cgroup") as handle:
            lines = handle.read().splitlines()
    except OSError:
        lines = []
    member = set()
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            member.add(os.path.normpath(os.path.join("/sys/fs/cgroup", controller, path.lstrip("/"))))
    for folder in folders:
        if os.path.normpath(folder) in member:
            continue
        try:
            _write(os.path.join(folder, "cgroup.procs"), str(os.getpid()))
        except OSError as exc:
            raise Failure(f"joining the session's cgroup failed: {exc.strerror}") from None


def _landlock(spec: Spec, abi: int, private_pts: bool) -> landlock.Ruleset:
    """The Landlock rules, made (the init applies them)."""
    ruleset = landlock.Ruleset(abi, net=False)
    denied = [os.path.normpath(p) for p in spec.get("deny", ())]
    home = [os.path.normpath(p) for p in spec.get("home", ())]
    landlock.grant_tree(ruleset, "/", landlock.READ, [*denied, *home, "/dev"])
    for path in spec.get("read", ()):  # what builds need of the home folder, but for what is denied inside it
        landlock.grant_tree(ruleset, os.path.normpath(path), landlock.READ, denied)
    device_rights = landlock.READ | landlock.WRITE_FILE | landlock.IOCTL_DEV
    for device in (*DEVICES_READ_WRITE, *(("/dev/pts",) if private_pts else ())):
        ruleset.allow(device, device_rights | (landlock.WRITE if device == "/dev/shm" else 0))
    for device in DEVICES_READ:
        ruleset.allow(device, landlock.READ | landlock.IOCTL_DEV)
    for path in spec.get("write", ()):
        landlock.grant_tree(ruleset, os.path.normpath(path), landlock.WRITE, denied)
    for fd in (0, 1, 2):  # the command's own terminal, wherever it is
        try:  # noqa: SIM105 - contextlib would cost the launcher an import
            ruleset.allow(os.ttyname(fd), device_rights)
        except OSError:
            pass
    return ruleset


def _install_seccomp(program: bytes) -> None:
    count = len(program) // 8
    filters = ctypes.create_string_buffer(program, len(program))
    fprog = struct.pack("=HxxxxxxQ", count, ctypes.addressof(filters))
    buffer = ctypes.create_string_buffer(fprog, len(fprog))
    _check(_prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, buffer), "installing the seccomp filter")
