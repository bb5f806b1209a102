"""This machine's own addresses: every address of every network interface (`getifaddrs`), as the proxy needs them to
refuse a host that resolves to this machine by any of its names, not only loopback (a LAN address, a container
bridge's, a VPN's).

Read afresh on each call (interfaces come and go: a VPN, a new container network); it costs tens of microseconds.
Linux and macOS lay out `struct ifaddrs` alike; their `struct sockaddr` differ in where the family is.
"""

from __future__ import annotations

import ctypes
import ipaddress
import socket
import sys

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class _IfAddrs(ctypes.Structure):
    pass


_IfAddrs._fields_ = [
    ("ifa_next", ctypes.POINTER(_IfAddrs)),
    ("ifa_name", ctypes.c_char_p),
    ("ifa_flags", ctypes.c_uint),
    ("ifa_addr", ctypes.c_void_p),
    ("ifa_netmask", ctypes.c_void_p),
    ("ifa_dstaddr", ctypes.c_void_p),
    ("ifa_data", ctypes.c_void_p),
]


class Unknown(OSError):
    """The interfaces could not be read."""


def local_addresses() -> frozenset[IPAddress]:
    """Every address this machine's interfaces have (IPv4 and IPv6, scope ids dropped). `Unknown` if they cannot be
    read: the caller must then fail closed."""
    libc = ctypes.CDLL(None, use_errno=True)
    head = ctypes.POINTER(_IfAddrs)()
    if libc.getifaddrs(ctypes.byref(head)) != 0:
        raise Unknown(ctypes.get_errno(), "getifaddrs failed")
    found: set[IPAddress] = set()
    try:
        node = head
        while node:
            address = _address(node.contents.ifa_addr)
            if address is not None:
                found.add(address)
            node = node.contents.ifa_next
    finally:
        libc.freeifaddrs(head)
    return frozenset(found)


def _address(pointer: int | None) -> IPAddress | None:
    if not pointer:
        return None
    if sys.platform == "linux":
        family = ctypes.c_uint16.from_address(pointer).value
    else:  # BSD layout: sa_len, then an 8-bit sa_family
        family = ctypes.c_uint8.from_address(pointer + 1).value
    if family == socket.AF_INET:
        return ipaddress.IPv4Address(ctypes.string_at(pointer + 4, 4))
    if family == socket.AF_INET6:
        return ipaddress.IPv6Address(ctypes.string_at(pointer + 8, 16))
    return None


def plain(address: str) -> IPAddress:
    """An address as compared with this machine's: the scope id dropped, an IPv4-mapped IPv6 address as IPv4."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip
