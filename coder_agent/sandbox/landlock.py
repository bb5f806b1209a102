"""Landlock through its three system calls: the kernel's own file-system (and TCP port) walls, which a process puts
on itself and everything it starts, irrevocably.

Standard library only (ctypes), for the same reason as `seccomp.py`: it runs in `sandbox/enter.py` before `exec`.
`Ruleset(abi)` handles every access right the kernel's ABI knows (so anything not granted is refused), `allow(path,
access)` grants rights beneath an open path, `restrict()` applies it to this process. `grant_tree` grants a tree
except some paths inside it: Landlock rights only add up, so the tree is granted entry by entry around what is kept
out (the directories on the way get the right to be listed, nothing more).
"""

from __future__ import annotations

import ctypes
import os
import stat
import struct

SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446  # the same on every architecture
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH, RULE_NET_PORT = 1, 2

EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2
TRUNCATE = 1 << 14  # ABI 3
IOCTL_DEV = 1 << 15  # ABI 5

NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6

READ = EXECUTE | READ_FILE | READ_DIR
WRITE = (
    READ
    | WRITE_FILE
    | REMOVE_DIR
    | REMOVE_FILE
    | MAKE_DIR
    | MAKE_REG
    | MAKE_SOCK
    | MAKE_FIFO
    | MAKE_SYM
    | REFER
    | TRUNCATE
)
"""What a writable place grants: everything but making device files."""
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
"""The rights a rule on a file (not a directory) may hold."""

MIN_ABI = 3
"""Below ABI 3 truncate(2) is not covered: a file outside the walls could be emptied."""


def fs_rights(abi: int) -> int:
    """Every file-system right the kernel's ABI handles."""
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


class LandlockError(OSError):
    """A Landlock call failed."""


_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long


def _call(number: int, *args: object) -> int:
    result = int(_syscall(ctypes.c_long(number), *args))
    if result < 0:
        err = ctypes.get_errno()
        raise LandlockError(err, os.strerror(err))
    return result


def abi_version() -> int:
    """The kernel's Landlock ABI, or 0 where there is none (an old kernel, Landlock not enabled at boot)."""
    try:
        return _call(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
    except (LandlockError, AttributeError):
        return 0


class Ruleset:
    """One Landlock ruleset being built; `restrict()` applies it to this process (after `no_new_privs`)."""

    def __init__(self, abi: int, *, net: bool) -> None:
        self.abi = abi
        self.handled = fs_rights(abi)
        handled_net = NET_BIND_TCP | NET_CONNECT_TCP if net and abi >= 4 else 0
        scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0
        attr = struct.pack("=QQQ", self.handled, handled_net, scoped)
        size = 24 if abi >= 6 else 16 if abi >= 4 else 8
        buffer = ctypes.create_string_buffer(attr[:size], size)
        self.fd = _call(SYS_CREATE_RULESET, buffer, ctypes.c_size_t(size), ctypes.c_uint32(0))

    def allow(self, path: str, access: int) -> bool:
        """Grant `access` beneath `path` (symlinks are not followed); False if the path is not there."""
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError:
            return False
        try:
            st = os.fstat(fd)
            if stat.S_ISLNK(st.st_mode):
                return False
            rights = access & self.handled
            if not stat.S_ISDIR(st.st_mode):
                rights &= FILE_RIGHTS
            if not rights:
                return False
            attr = ctypes.create_string_buffer(struct.pack("=Qi", rights, fd), 12)
            _call(SYS_ADD_RULE, ctypes.c_int(self.fd), ctypes.c_int(RULE_PATH_BENEATH), attr, ctypes.c_uint32(0))
            return True
        finally:
            os.close(fd)

    def allow_port(self, port: int, access: int) -> None:
        attr = ctypes.create_string_buffer(struct.pack("=QQ", access, port), 16)
        _call(SYS_ADD_RULE, ctypes.c_int(self.fd), ctypes.c_int(RULE_NET_PORT), attr, ctypes.c_uint32(0))

    def restrict(self) -> None:
        """Apply the ruleset to this process and whatever it starts from now on."""
        _call(SYS_RESTRICT_SELF, ctypes.c_int(self.fd), ctypes.c_uint32(0))
        os.close(self.fd)


def grant_tree(ruleset: Ruleset, path: str, access: int, kept_out: list[str]) -> None:
    """Grant `access` beneath `path`, except beneath the paths in `kept_out` (absolute, normalised)."""
    inner = [k for k in kept_out if k == path or k.startswith(path.rstrip("/") + "/")]
    if not inner:
        ruleset.allow(path, access)
        return
    if path in inner:
        return
    ruleset.allow(path, READ_DIR & access)  # the way there may be listed; nothing else is granted on it
    try:
        entries = list(os.scandir(path))
    except OSError:
        return
    for entry in entries:
        if not entry.is_symlink():  # a link is reached through its target, which is judged on its own
            grant_tree(ruleset, entry.path, access, inner)
