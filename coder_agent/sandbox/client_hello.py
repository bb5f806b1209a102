"""The server name a TLS connection asks for (SNI, in its ClientHello): what the proxy holds against the host a
`CONNECT` named, since a shared front (a CDN) routes by that name, not by the address connected to.

`server_name(data)` reads the handshake records at the start of a tunnel: `NOT_TLS` when the bytes are not a TLS
handshake (an SSH tunnel to a port the user allowed), `MORE` when the ClientHello is not complete yet, `None` when it
names no server (an IP address), else the name, lower-cased.
"""

from __future__ import annotations

from typing import Final

NOT_TLS: Final = "not TLS"
MORE: Final = "more"
LIMIT = 1 << 16
"""A ClientHello bigger than this is refused (the biggest, with post-quantum key shares, are a few kilobytes)."""
_HANDSHAKE, _CLIENT_HELLO, _SERVER_NAME = 22, 1, 0


class Malformed(ValueError):
    """The bytes start a TLS handshake that does not parse."""


def server_name(data: bytes) -> str | None:
    """See the module docstring; `Malformed` for a broken or oversized ClientHello."""
    if not data:
        return MORE
    if data[0] != _HANDSHAKE:
        return NOT_TLS
    message = b""
    offset = 0
    while True:  # the handshake message may span records
        if len(data) < offset + 5:
            return MORE
        if data[offset] != _HANDSHAKE:
            raise Malformed("a record other than the handshake came before the ClientHello ended")
        size = int.from_bytes(data[offset + 3 : offset + 5], "big")
        if len(data) < offset + 5 + size:
            return MORE
        message += data[offset + 5 : offset + 5 + size]
        offset += 5 + size
        if len(message) >= 4:
            if message[0] != _CLIENT_HELLO:
                raise Malformed("the first handshake message is not a ClientHello")
            needed = 4 + int.from_bytes(message[1:4], "big")
            if needed > LIMIT:
                raise Malformed("the ClientHello is too long")
            if len(message) >= needed:
                return _name_in(message[4:needed])


def _name_in(hello: bytes) -> str | None:
    at = 2 + 32  # version, random
    at = _skip(hello, at, 1)  # session id
    at = _skip(hello, at, 2)  # cipher suites
    at = _skip(hello, at, 1)  # compression methods
    if at == len(hello):
        return None  # no extensions at all
    end = at + 2 + _number(hello, at, 2)
    if end > len(hello):
        raise Malformed("the extensions run past the ClientHello")
    at += 2
    while at < end:
        kind, size = _number(hello, at, 2), _number(hello, at + 2, 2)
        body = hello[at + 4 : at + 4 + size]
        if len(body) != size:
            raise Malformed("an extension runs past the ClientHello")
        if kind == _SERVER_NAME:
            return _host_name(body)
        at += 4 + size
    return None


def _host_name(body: bytes) -> str:
    at, end = 2, 2 + _number(body, 0, 2)
    while at < end:
        kind, size = body[at], _number(body, at + 1, 2)
        name = body[at + 3 : at + 3 + size]
        if kind == 0:
            try:
                return name.decode("ascii").lower().rstrip(".")
            except UnicodeDecodeError:
                raise Malformed("the server name is not ASCII") from None
        at += 3 + size
    raise Malformed("the server name extension names no host")


def _number(data: bytes, at: int, width: int) -> int:
    if at + width > len(data):
        raise Malformed("the ClientHello is cut short")
    return int.from_bytes(data[at : at + width], "big")


def _skip(data: bytes, at: int, width: int) -> int:
    return at + width + _number(data, at, width)
