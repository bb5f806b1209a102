"""`HostProxy`: the one way from a sandboxed command to the network — an HTTP proxy on a UNIX socket that lets a
connection through only to an allowed host.

A session's sandboxed commands live in a network namespace with nothing but its own loopback; their `HTTP(S)_PROXY`
points at the forwarder there (`sandbox/forwarder.py`), which carries each connection to this socket. Here the
request's head is read (`CONNECT host:port`, or a plain-HTTP request with an absolute URL), the host is held
against `allow_hosts` (exact names, or `*.example.com` for the subdomains), resolved once, refused if it resolves
to this machine or to a link-local address, where cloud metadata lives (a DNS answer must not turn an allowed name
into a way to them; a private address is fine, since registry mirrors live there), and only then connected to —
that address, not the name again. A refusal is an HTTP 403 whose body says which setting would allow it. Nothing
else is parsed: after the head, bytes are relayed as they come.
"""

from __future__ import annotations

import contextlib
import logging
import socket
from collections.abc import Callable
from pathlib import Path

import anyio
from anyio.abc import ByteStream, SocketStream, TaskGroup

from coder_agent.permissions.network import why_local

REFUSED_EVEN_ALLOWED = ("a loopback address", "a link-local address", "the unspecified address")
"""What an allowed host may still not resolve to: this machine, and the link-local range where cloud metadata
services live. A private or otherwise non-public address is fine for a host the user named (a company's registry
mirror lives on one)."""

log = logging.getLogger(__name__)

HEAD_LIMIT = 16_384
HEAD_TIMEOUT = 30.0
CONNECT_TIMEOUT = 15.0
REFUSAL_HINT = "add the host to sandbox.allow_hosts in your coder-agent config"


class HostProxy:
    """Serves one session's sandboxed commands on a UNIX socket; `hosts` are the allowed names."""

    def __init__(self, socket_path: Path, hosts: tuple[str, ...], on_refusal: Callable[[str], None] | None = None):
        self.socket_path = socket_path
        self.hosts = hosts
        self.on_refusal = on_refusal
        self.refused: list[str] = []

    def allows(self, host: str) -> bool:
        host = host.lower().rstrip(".")
        for allowed in self.hosts:
            if allowed.startswith("*."):
                if host.endswith(allowed[1:]):
                    return True
            elif host == allowed:
                return True
        return False

    async def serve(self, task_group: TaskGroup) -> None:
        """Start listening (the socket file is made here, private to the user) and serve in `task_group`."""
        listener = await anyio.create_unix_listener(self.socket_path)
        self.socket_path.chmod(0o600)
        task_group.start_soon(self._serve, listener)

    async def _serve(self, listener: anyio.abc.Listener[SocketStream]) -> None:
        async with listener:
            await listener.serve(self._handle)

    async def _handle(self, client: SocketStream) -> None:
        async with client:
            try:
                with anyio.fail_after(HEAD_TIMEOUT):
                    head, rest = await _read_head(client)
                await self._route(client, head, rest)
            except (TimeoutError, anyio.EndOfStream, anyio.BrokenResourceError, OSError, ValueError) as exc:
                log.debug("proxy connection ended: %s", exc)

    async def _route(self, client: SocketStream, head: bytes, rest: bytes) -> None:
        line = head.split(b"\r\n", 1)[0].decode("latin-1")
        method, _, remainder = line.partition(" ")
        target = remainder.rpartition(" ")[0] or remainder
        if method.upper() == "CONNECT":
            host, port = _host_port(target, default=443)
            upstream = await self._open(client, host, port)
            if upstream is None:
                return
            await client.send(b"HTTP/1.1 200 Connection established\r\n\r\n")
            if rest:
                await upstream.send(rest)
        else:
            if not target.lower().startswith("http://"):
                await _refuse(client, "400 Bad Request", "only CONNECT and absolute http:// URLs go through this proxy")
                return
            authority = target[7:].split("/", 1)[0].split("@")[-1]
            host, port = _host_port(authority, default=80)
            upstream = await self._open(client, host, port)
            if upstream is None:
                return
            path = "/" + target[7:].split("/", 1)[1] if "/" in target[7:] else "/"
            first = f"{method} {path} {line.rsplit(' ', 1)[-1]}".encode("latin-1")
            await upstream.send(first + head[len(line) :] + rest)
        async with upstream, anyio.create_task_group() as relay:
            relay.start_soon(_pump, client, upstream)
            relay.start_soon(_pump, upstream, client)

    async def _open(self, client: SocketStream, host: str, port: int) -> SocketStream | None:
        if not self.allows(host):
            self._refused(host)
            await _refuse(
                client, "403 Forbidden", f"{host} is not an allowed host for sandboxed commands: {REFUSAL_HINT}"
            )
            return None
        try:
            infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:
            await _refuse(client, "502 Bad Gateway", f"could not resolve {host}: {exc}")
            return None
        addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
        local = next(
            ((a, why) for a in addresses if (why := why_local(a)) is not None and why.startswith(REFUSED_EVEN_ALLOWED)),
            None,
        )
        if local is not None:
            self._refused(host)
            await _refuse(client, "403 Forbidden", f"{host} resolves to {local[0]}, {local[1]}")
            return None
        for address in addresses:
            with contextlib.suppress(OSError, TimeoutError):
                with anyio.fail_after(CONNECT_TIMEOUT):
                    return await anyio.connect_tcp(address, port)
        await _refuse(client, "502 Bad Gateway", f"could not connect to {host}:{port}")
        return None

    def _refused(self, host: str) -> None:
        self.refused.append(host)
        if self.on_refusal is not None:
            self.on_refusal(host)


async def _read_head(client: SocketStream) -> tuple[bytes, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > HEAD_LIMIT:
            raise ValueError("request head too long")
        data += await client.receive()
    head, _, rest = data.partition(b"\r\n\r\n")
    return head + b"\r\n\r\n", rest


def _host_port(authority: str, *, default: int) -> tuple[str, int]:
    if authority.startswith("["):
        host, _, tail = authority[1:].partition("]")
        port = tail.removeprefix(":")
    elif authority.count(":") == 1:
        host, _, port = authority.partition(":")
    else:
        host, port = authority, ""
    if not port:
        return host.lower(), default
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"bad port in {authority!r}")
    return host.lower(), int(port)


async def _refuse(client: SocketStream, status: str, why: str) -> None:
    body = f"coder-agent sandbox: {why}\n".encode()
    head = f"HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    with contextlib.suppress(anyio.BrokenResourceError, OSError):
        await client.send(head.encode() + body)


async def _pump(source: ByteStream, sink: ByteStream) -> None:
    with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        async for chunk in source:
            await sink.send(chunk)
    with contextlib.suppress(Exception):
        await sink.send_eof()
