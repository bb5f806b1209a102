"""The sandbox's seccomp filter: a classic BPF program, built here as bytes, that refuses the system calls a
sandboxed command has no business making — what Landlock cannot reach.

Standard library only: `sandbox/enter.py` runs it before `exec`, in a Python started with `-I -S` (no
site-packages), so no binding library is available there, and importing one would cost more than the whole sandbox
(see `sandbox/__init__.py`). The program is small and table-driven:

- a system call of another architecture (i386 `int 0x80` on x86-64, the x32 ABI) fails: it would bypass the table;
- the calls that change what the kernel or the file system looks like, or reach into other processes (mount and the
  new mount API, namespaces, ptrace, module loading, bpf, perf, keyrings, `open_by_handle_at`, io_uring, …) fail
  with EPERM; `clone` with a namespace flag fails; `clone3`, whose flags sit behind a pointer seccomp cannot read,
  fails with ENOSYS, so the C library falls back to `clone` (io_uring too: its operations escape this filter);
- `socket` is allowed only for the address families the walls permit (`allowed_families`): by default none but
  `socketpair`'s, so a command cannot connect to a UNIX socket outside the walls (a desktop bus, the Docker
  daemon, an ssh or tmux server: each could run a command outside) nor to the network;
- `ioctl` TIOCSTI and TIOCLINUX (pushing keystrokes into a terminal) fail;
- the calls that change another process by pid (`prlimit64`, `setpriority`, `sched_setaffinity`, `ioprio_set`,
  …) work only on the caller itself;
- the core-size limit cannot be set (it stays at the launcher's 1 byte: no core dump, nor a piped crash handler
  outside the walls), and no file lease can be taken (`fcntl F_SETLEASE`: it would hold outside writers back).

`filter_program(arch, …)` returns the program as bytes (`struct sock_filter[]`); `linux.py` installs it.
"""

from __future__ import annotations

import struct

# BPF instruction classes and fields
_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_JSET_K = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K

RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
EPERM = 1
ENOSYS = 38

AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
X32_SYSCALL_BIT = 0x40000000

# struct seccomp_data: int nr; u32 arch; u64 ip; u64 args[6]  (little-endian: the low word of args[i] is first)
_NR, _ARCH = 0, 4


def _arg_low(index: int) -> int:
    return 16 + 8 * index


AF_UNIX, AF_INET, AF_INET6, AF_NETLINK = 1, 2, 10, 16
TIOCSTI, TIOCLINUX = 0x5412, 0x541C
CLONE_NAMESPACES = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
"""CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET."""

DENIED = (
    "mount",
    "umount2",
    "pivot_root",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "unshare",
    "setns",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "pidfd_getfd",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "reboot",
    "swapon",
    "swapoff",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "keyctl",
    "add_key",
    "request_key",
    "open_by_handle_at",
    "name_to_handle_at",
    "quotactl",
    "quotactl_fd",
    "lookup_dcookie",
    "syslog",
    "acct",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "iopl",
    "ioperm",
    "uselib",
    "vhangup",
    "chroot",
)
SELF_ONLY: dict[str, tuple[int, int | None]] = {
    "sched_setaffinity": (0, None),
    "sched_setscheduler": (0, None),
    "sched_setparam": (0, None),
    "sched_setattr": (0, None),
    "migrate_pages": (0, None),
    "move_pages": (0, None),
    "setpriority": (1, 2),  # not PRIO_USER: `who` 0 there means every process of the user
    "ioprio_set": (1, 3),  # not IOPRIO_WHO_USER, likewise
}
"""Calls that act on another process by pid, where Landlock's scope (signals, ptrace) does not reach: allowed only
on the caller itself (the argument at that index 0, and argument 0 not the value that widens it to the user's
every process), so no limit, priority, CPU or I/O setting of a process outside changes. `prlimit64` likewise (see
`_build`), and it may not set RLIMIT_CORE either."""
RLIMIT_CORE = 4
"""Set to 1 by the launcher, the one value at which the kernel writes no core file and starts no piped core_pattern
helper (which would run outside the walls, fed by the crashed process): `setrlimit` and `prlimit64` that would set
it succeed and change nothing, so a build that turns core dumps off (`ulimit -c 0`) still runs."""
F_SETLEASE = 1024
"""`fcntl(fd, F_SETLEASE)`: a lease on a file (any file, for root) makes every other process that opens it wait for
the holder; refused."""
NOT_IMPLEMENTED = ("clone3", "io_uring_setup", "io_uring_enter", "io_uring_register")
"""Refused with ENOSYS, as on a kernel without them: the C library falls back from `clone3` to `clone` (whose flags
the filter can read), libuv and others from io_uring to ordinary calls."""

SYSCALLS: dict[str, dict[str, int]] = {
    "x86_64": {
        "prlimit64": 302,
        "setrlimit": 160,
        "fcntl": 72,
        "sched_setaffinity": 203,
        "sched_setscheduler": 144,
        "sched_setparam": 142,
        "sched_setattr": 314,
        "migrate_pages": 256,
        "move_pages": 279,
        "setpriority": 141,
        "ioprio_set": 251,
        "socket": 41,
        "ioctl": 16,
        "clone": 56,
        "clone3": 435,
        "mount": 165,
        "umount2": 166,
        "pivot_root": 155,
        "move_mount": 429,
        "open_tree": 428,
        "fsopen": 430,
        "fsconfig": 431,
        "fsmount": 432,
        "fspick": 433,
        "mount_setattr": 442,
        "unshare": 272,
        "setns": 308,
        "ptrace": 101,
        "process_vm_readv": 310,
        "process_vm_writev": 311,
        "kcmp": 312,
        "pidfd_getfd": 438,
        "init_module": 175,
        "finit_module": 313,
        "delete_module": 176,
        "kexec_load": 246,
        "kexec_file_load": 320,
        "reboot": 169,
        "swapon": 167,
        "swapoff": 168,
        "bpf": 321,
        "perf_event_open": 298,
        "userfaultfd": 323,
        "keyctl": 250,
        "add_key": 248,
        "request_key": 249,
        "open_by_handle_at": 304,
        "name_to_handle_at": 303,
        "quotactl": 179,
        "quotactl_fd": 443,
        "lookup_dcookie": 212,
        "syslog": 103,
        "acct": 163,
        "settimeofday": 164,
        "clock_settime": 227,
        "clock_adjtime": 305,
        "adjtimex": 159,
        "iopl": 172,
        "ioperm": 173,
        "uselib": 134,
        "vhangup": 153,
        "io_uring_setup": 425,
        "io_uring_enter": 426,
        "io_uring_register": 427,
        "chroot": 161,
    },
    "aarch64": {
        "prlimit64": 261,
        "setrlimit": 164,
        "fcntl": 25,
        "sched_setaffinity": 122,
        "sched_setscheduler": 119,
        "sched_setparam": 118,
        "sched_setattr": 274,
        "migrate_pages": 238,
        "move_pages": 239,
        "setpriority": 140,
        "ioprio_set": 30,
        "socket": 198,
        "ioctl": 29,
        "clone": 220,
        "clone3": 435,
        "mount": 40,
        "umount2": 39,
        "pivot_root": 41,
        "move_mount": 429,
        "open_tree": 428,
        "fsopen": 430,
        "fsconfig": 431,
        "fsmount": 432,
        "fspick": 433,
        "mount_setattr": 442,
        "unshare": 97,
        "setns": 268,
        "ptrace": 117,
        "process_vm_readv": 270,
        "process_vm_writev": 271,
        "kcmp": 272,
        "pidfd_getfd": 438,
        "init_module": 105,
        "finit_module": 273,
        "delete_module": 106,
        "kexec_load": 104,
        "kexec_file_load": 294,
        "reboot": 142,
        "swapon": 224,
        "swapoff": 225,
        "bpf": 280,
        "perf_event_open": 241,
        "userfaultfd": 282,
        "keyctl": 219,
        "add_key": 217,
        "request_key": 218,
        "open_by_handle_at": 265,
        "name_to_handle_at": 264,
        "quotactl": 60,
        "quotactl_fd": 443,
        "lookup_dcookie": 18,
        "syslog": 116,
        "acct": 89,
        "settimeofday": 170,
        "clock_settime": 112,
        "clock_adjtime": 266,
        "adjtimex": 171,
        "vhangup": 58,
        "io_uring_setup": 425,
        "io_uring_enter": 426,
        "io_uring_register": 427,
        "chroot": 51,
    },
}
"""System call numbers per architecture (`uname -m`), for the calls the filter names. aarch64 has no iopl, ioperm
or uselib."""


class Unsupported(Exception):
    """No filter for this architecture: the sandbox is not applied (and says so)."""


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


_built: dict[tuple[str, frozenset[int]], bytes] = {}


def filter_program(arch: str, allowed_families: frozenset[int] = frozenset()) -> bytes:
    """The filter for `arch` as `struct sock_filter[]` bytes (built once per process: the fork server's children
    find it made)."""
    key = (arch, allowed_families)
    if key not in _built:
        _built[key] = _build(arch, allowed_families)
    return _built[key]


def _build(arch: str, allowed_families: frozenset[int]) -> bytes:
    table = SYSCALLS.get(arch)
    if table is None:
        raise Unsupported(f"no seccomp filter for the {arch} architecture")
    deny_errno = RET_ERRNO | EPERM
    # Built as labelled pieces, then jumps are resolved: a piece is (kind, value, true_label, false_label).
    program: list[tuple[int, int, str | None, str | None]] = []
    labels: dict[str, int] = {}

    def emit(code: int, k: int, jt: str | None = None, jf: str | None = None) -> None:
        program.append((code, k, jt, jf))

    def label(name: str) -> None:
        labels[name] = len(program)

    emit(_LD_W_ABS, _ARCH)
    emit(_JEQ_K, AUDIT_ARCH[arch], None, "deny")
    emit(_LD_W_ABS, _NR)
    if arch == "x86_64":
        emit(_JGE_K, X32_SYSCALL_BIT, "deny", None)
    for name in DENIED:
        if name in table:
            emit(_JEQ_K, table[name], "deny", None)
    for name in NOT_IMPLEMENTED:
        emit(_JEQ_K, table[name], "nosys", None)
    emit(_JEQ_K, table["socket"], "socket", None)
    emit(_JEQ_K, table["ioctl"], "ioctl", None)
    emit(_JEQ_K, table["clone"], "clone", None)
    emit(_JEQ_K, table["prlimit64"], "prlimit64", None)
    emit(_JEQ_K, table["setrlimit"], "setrlimit", None)
    emit(_JEQ_K, table["fcntl"], "fcntl", None)
    for name, (index, widening) in SELF_ONLY.items():
        emit(_JEQ_K, table[name], f"self{index}-{widening}", None)
    emit(_RET_K, RET_ALLOW)
    # The argument checks; BPF jumps only forward, so every exit is one of the returns at the end.
    label("socket")
    emit(_LD_W_ABS, _arg_low(0))
    for family in sorted(allowed_families):
        emit(_JEQ_K, family, "allow", None)
    emit(_JEQ_K, 0xFFFFFFFF, "allow", "deny")  # no such family: a plain jump to the refusal
    label("ioctl")
    emit(_LD_W_ABS, _arg_low(1))
    emit(_JEQ_K, TIOCSTI, "deny", None)
    emit(_JEQ_K, TIOCLINUX, "deny", "allow")
    label("clone")
    emit(_LD_W_ABS, _arg_low(0))
    emit(_JSET_K, CLONE_NAMESPACES, "deny", "allow")
    label("prlimit64")  # (pid, resource, new, old): the caller only; RLIMIT_CORE read, never set
    emit(_LD_W_ABS, _arg_low(0))
    emit(_JEQ_K, 0, None, "deny")
    emit(_LD_W_ABS, _arg_low(1))
    emit(_JEQ_K, RLIMIT_CORE, None, "allow")
    emit(_LD_W_ABS, _arg_low(2))
    emit(_JEQ_K, 0, None, "pretend")
    emit(_LD_W_ABS, _arg_low(2) + 4)  # the pointer's high word
    emit(_JEQ_K, 0, "allow", "pretend")
    label("setrlimit")  # (resource, limits)
    emit(_LD_W_ABS, _arg_low(0))
    emit(_JEQ_K, RLIMIT_CORE, "pretend", "allow")
    label("fcntl")  # (fd, command, argument)
    emit(_LD_W_ABS, _arg_low(1))
    emit(_JEQ_K, F_SETLEASE, "deny", "allow")
    for index, widening in sorted(set(SELF_ONLY.values()), key=str):  # the pid (or `who`) 0: the caller
        label(f"self{index}-{widening}")
        emit(_LD_W_ABS, _arg_low(index))
        if widening is None:
            emit(_JEQ_K, 0, "allow", "deny")
        else:
            emit(_JEQ_K, 0, None, "deny")
            emit(_LD_W_ABS, _arg_low(0))
            emit(_JEQ_K, widening, "deny", "allow")
    label("allow")
    emit(_RET_K, RET_ALLOW)
    label("deny")
    emit(_RET_K, deny_errno)
    label("nosys")
    emit(_RET_K, RET_ERRNO | ENOSYS)
    label("pretend")
    emit(_RET_K, RET_ERRNO | 0)  # success, and nothing done

    out = bytearray()
    for index, (code, k, jt, jf) in enumerate(program):
        out += _insn(code, _jump(labels, index, jt), _jump(labels, index, jf), k)
    return bytes(out)


def _jump(labels: dict[str, int], index: int, target: str | None) -> int:
    if target is None:
        return 0
    offset = labels[target] - index - 1
    if not 0 <= offset <= 255:
        raise ValueError(f"a seccomp jump of {offset} instructions does not fit")  # pragma: no cover - table size
    return offset
