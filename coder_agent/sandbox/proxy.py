"""`HostProxy`: the one way from a sandboxed command to the network — an HTTP proxy on a UNIX socket that lets a
connection through only to an allowed host and port, and only as itself.

A session's sandboxed commands live in a network namespace with nothing but its own loopback; their `HTTP(S)_PROXY`
points at the forwarder there (`sandbox/forwarder.py`), which carries each connection to this socket (on macOS, where
there is no such namespace, the proxy also listens on a TCP port of its own on 127.0.0.1: `serve(tcp=True)`).

Here the request's head is read (`CONNECT host:port`, or a plain-HTTP request with an absolute URL) and judged:

- the host against `allow_hosts` (exact names, or `*.example.com` for the subdomains), and the port: 80 and 443,
  or the one an entry names (`registry.example.com:8443`);
- its `Host` header, if any, must name the same host and port (one header only): a shared front (a CDN) routes by
  that name, so a different one would reach a host never allowed;
- the host is resolved once and refused if any address is this machine's (loopback, the unspecified address, or an
  address of any of its interfaces: `sandbox/interfaces.py`) or link-local, where cloud metadata lives (a DNS
  answer must not turn an allowed name into a way to them; a private address of another machine is fine, since
  registry mirrors live there); only then is that address connected to, not the name again.

A refusal is an HTTP 403 whose body says which setting would allow it. After a `CONNECT` is accepted, the tunnel's
first bytes, when they are a TLS ClientHello, must ask for the same server name (SNI) or none (`client_hello.py`),
else the tunnel is closed; the rest is relayed as it comes, encrypted (an HTTP `Host` inside TLS is out of sight).
A plain-HTTP request is sent on with `Connection: close`, so no second request, to another host, can follow it on
the same connection.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import anyio
from anyio.abc import ByteStream, SocketStream, TaskGroup

from coder_agent.permissions.network import why_local
from coder_agent.sandbox import client_hello
from coder_agent.sandbox.interfaces import Unknown, local_addresses, plain

REFUSED_EVEN_ALLOWED = ("a loopback address", "a link-local address", "the unspecified address")
"""What an allowed host may still not resolve to (besides any address of this machine's interfaces): this machine,
and the link-local range where cloud metadata services live. A private or otherwise non-public address is fine for
a host the user named (a company's registry mirror lives on one)."""
DEFAULT_PORTS = frozenset({80, 443})

log = logging.getLogger(__name__)

HEAD_LIMIT = 16_384
HEAD_TIMEOUT = 30.0
CONNECT_TIMEOUT = 15.0
REFUSAL_HINT = "add the host to sandbox.allow_hosts in your coder-agent config"
HOP_BY_HOP = (b"connection", b"proxy-connection", b"keep-alive", b"proxy-authorization")
"""Headers meant for this proxy, never sent on (a `Connection: close` takes their place)."""


class Refused(Exception):
    """A request the proxy does not carry: its status line and why."""

    def __init__(self, status: str, why: str) -> None:
        super().__init__(why)
        self.status = status
        self.why = why


@dataclass(frozen=True)
class Allowed:
    """One entry of `allow_hosts`: a name (`*.` for its subdomains) and the ports it may be reached on."""

    name: str
    ports: frozenset[int]

    @classmethod
    def parse(cls, entry: str) -> Allowed:
        entry = entry.strip().lower()
        host, port = _host_port(entry, default=0)
        return cls(host.rstrip("."), frozenset({port}) if port else DEFAULT_PORTS)

    def matches(self, host: str) -> bool:
        if self.name.startswith("*."):
            return host.endswith(self.name[1:])
        return host == self.name


class HostProxy:
    """Serves one session's sandboxed commands on a UNIX socket; `hosts` are the `allow_hosts` entries."""

    def __init__(self, socket_path: Path, hosts: tuple[str, ...], on_refusal: Callable[[str], None] | None = None):
        self.socket_path = socket_path
        self.hosts = hosts
        self.allowed = tuple(Allowed.parse(entry) for entry in hosts)
        self.on_refusal = on_refusal
        self.refused: list[str] = []
        self.tcp_port: int | None = None
        """The TCP port on 127.0.0.1 it also listens on (`serve(tcp=True)`), else None."""

    def allows(self, host: str, port: int | None = None) -> bool:
        """Whether `host` (and `port`, when given) is allowed."""
        host = host.lower().rstrip(".")
        return any(rule.matches(host) and (port is None or port in rule.ports) for rule in self.allowed)

    async def serve(self, task_group: TaskGroup, *, tcp: bool = False) -> None:
        """Start listening (the socket file is made here, private to the user) and serve in `task_group`; with `tcp`,
        on an unused port of 127.0.0.1 too (`tcp_port`)."""
        listener = await anyio.create_unix_listener(self.socket_path)
        self.socket_path.chmod(0o600)
        task_group.start_soon(self._serve, listener)
        if tcp:
            local = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
            self.tcp_port = int(local.extra(anyio.abc.SocketAttribute.local_port))
            task_group.start_soon(self._serve, local)

    async def _serve(self, listener: anyio.abc.Listener[SocketStream]) -> None:
        async with listener:
            await listener.serve(self._handle)

    async def _handle(self, client: SocketStream) -> None:
        async with client:
            try:
                with anyio.fail_after(HEAD_TIMEOUT):
                    head, rest = await _read_head(client)
                await self._route(client, head, rest)
            except Refused as refusal:
                await _refuse(client, refusal.status, refusal.why)
            except (TimeoutError, anyio.EndOfStream, anyio.BrokenResourceError, OSError, ValueError) as exc:
                log.debug("proxy connection ended: %s", exc)

    async def _route(self, client: SocketStream, head: bytes, rest: bytes) -> None:
        line, headers = _parse_head(head)
        method, _, remainder = line.partition(" ")
        target, _, version = remainder.rpartition(" ")
        if method.upper() == "CONNECT":
            host, port = _host_port(target, default=443)
            _same_host(headers, host, port, default=443)
            upstream = await self._open(host, port)
            await client.send(b"HTTP/1.1 200 Connection established\r\n\r\n")
            async with upstream, anyio.create_task_group() as relay:
                relay.start_soon(_pump, upstream, client)  # a server that speaks first is heard meanwhile
                if await _same_server_name(client, upstream, host, rest):
                    await _pump(client, upstream)
                else:
                    self._refused(host)
                    relay.cancel_scope.cancel()
            return
        if not target.lower().startswith("http://"):
            raise Refused("400 Bad Request", "only CONNECT and absolute http:// URLs go through this proxy")
        authority, slash, path = target[7:].partition("/")
        host, port = _host_port(authority.rpartition("@")[2], default=80)
        _same_host(headers, host, port, default=80)
        upstream = await self._open(host, port)
        kept = [h for h in headers if h.split(b":", 1)[0].strip().lower() not in HOP_BY_HOP]
        request = [f"{method} /{path if slash else ''} {version}".encode("latin-1"), *kept, b"Connection: close"]
        async with upstream:
            await upstream.send(b"\r\n".join(request) + b"\r\n\r\n" + rest)
            await _relay(client, upstream)

    async def _open(self, host: str, port: int) -> SocketStream:
        if not self.allows(host):
            self._refused(host)
            raise Refused("403 Forbidden", f"{host} is not an allowed host for sandboxed commands: {REFUSAL_HINT}")
        if not self.allows(host, port):
            self._refused(host)
            raise Refused(
                "403 Forbidden",
                f"port {port} of {host} is not allowed for sandboxed commands (80 and 443 are): "
                f'add "{host}:{port}" to sandbox.allow_hosts in your coder-agent config',
            )
        try:
            infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:
            raise Refused("502 Bad Gateway", f"could not resolve {host}: {exc}") from None
        addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
        for address in addresses:
            why = self._why_refused(address)
            if why is not None:
                self._refused(host)
                raise Refused("403 Forbidden", f"{host} resolves to {address}, {why}")
        for address in addresses:
            with contextlib.suppress(OSError, TimeoutError):
                with anyio.fail_after(CONNECT_TIMEOUT):
                    return await anyio.connect_tcp(address, port)
        raise Refused("502 Bad Gateway", f"could not connect to {host}:{port}")

    @staticmethod
    def _why_refused(address: str) -> str | None:
        """Why an allowed host may not be reached at this address, or None."""
        why = why_local(address)
        if why is not None and why.startswith(REFUSED_EVEN_ALLOWED):
            return why
        try:
            mine = local_addresses()
        except Unknown as exc:
            log.warning("this machine's addresses could not be read (%s): refusing every non-public one", exc)
            return None if why is None else f"{why} (this machine's own addresses could not be read)"
        if plain(address) in mine:
            return "an address of this machine"
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
    return head, rest


def _parse_head(head: bytes) -> tuple[str, list[bytes]]:
    """The request line and the header lines; `Refused` for a head a server might read otherwise than we do."""
    line, *headers = head.split(b"\r\n")
    for header in headers:
        name, colon, _ = header.partition(b":")
        if not colon or not name or name != name.strip() or b"\n" in header or b"\r" in header:
            raise Refused("400 Bad Request", "a malformed header line (folded, or with space before its colon)")
    return line.decode("latin-1"), headers


def _same_host(headers: list[bytes], host: str, port: int, *, default: int) -> None:
    """The `Host` header, when there is one, names the host (and port) the request goes to."""
    given = [h.partition(b":")[2].strip() for h in headers if h.partition(b":")[0].lower() == b"host"]
    if not given:
        return
    if len(given) > 1:
        raise Refused("400 Bad Request", "more than one Host header")
    try:
        named, named_port = _host_port(given[0].decode("latin-1").lower(), default=default)
    except ValueError:
        raise Refused("400 Bad Request", "a malformed Host header") from None
    if (_canonical(named), named_port) != (_canonical(host), port):
        raise Refused("403 Forbidden", f"the Host header names {named}:{named_port}, not {host}:{port}, the target")


def _canonical(host: str) -> str:
    host = host.lower().rstrip(".")
    with contextlib.suppress(ValueError):
        return str(ipaddress.ip_address(host))
    return host


async def _same_server_name(client: SocketStream, upstream: SocketStream, host: str, rest: bytes) -> bool:
    """Read the tunnel's first bytes from the client: a TLS ClientHello must name `host` or no server. Send them on
    and say True if so (or if they are not TLS); False if not, or if the client closed first."""
    data = rest
    try:
        while (name := _server_name(data)) == client_hello.MORE:
            data += await client.receive()
    except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
        return False
    if name not in (None, client_hello.NOT_TLS) and name != _canonical(host):
        log.debug("proxy tunnel to %s closed: its TLS server name is %s", host, name)
        return False
    await upstream.send(data)
    return True


def _server_name(data: bytes) -> str | None:
    try:
        return client_hello.server_name(data)
    except client_hello.Malformed as exc:
        return f"(malformed: {exc})"


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


async def _relay(client: SocketStream, upstream: SocketStream) -> None:
    async with anyio.create_task_group() as relay:
        relay.start_soon(_pump, client, upstream)
        relay.start_soon(_pump, upstream, client)


async def _pump(source: ByteStream, sink: ByteStream) -> None:
    with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        async for chunk in source:
            await sink.send(chunk)
    with contextlib.suppress(Exception):
        await sink.send_eof()
