"""Where a fetch goes: the URL's host, the addresses it resolves to, and whether any of them is local or private.

`resolve_target(url)` resolves the host once; the fetch then connects to exactly those addresses (see
`tools.webpage`), so a DNS answer that changes between the check and the connection (rebinding) cannot
move it. An address counts as local unless it is globally routable: loopback (127/8, ::1), private
(10/8, 172.16/12, 192.168/16, fc00::/7), link-local and cloud metadata (169.254/16, fe80::/10), shared
(100.64/10), unspecified (0.0.0.0, ::), multicast, documentation and reserved ranges. IPv6 forms that
carry an IPv4 address (IPv4-mapped, IPv4-compatible, IPv4-translated, 6to4, Teredo, NAT64) are judged by
the IPv4 address inside; deprecated site-local addresses (fec0::/10) count as local.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from coder_agent.errors import CallFailed

NAT64 = ipaddress.ip_network("64:ff9b::/96")
CARRY_IPV4 = (NAT64, ipaddress.ip_network("::/96"), ipaddress.ip_network("::ffff:0:0:0/96"))
"""NAT64, IPv4-compatible (deprecated, still routed by some stacks) and IPv4-translated (SIIT) forms."""
SITE_LOCAL = ipaddress.ip_network("fec0::/10")
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class TargetError(CallFailed):
    """The URL cannot be fetched (bad form, or a host that does not resolve); the message is for the model."""


@dataclass(frozen=True)
class FetchTarget:
    """A URL with its host resolved and judged."""

    url: str
    scheme: str
    host: str
    """Lower case, without brackets or a trailing dot."""
    port: int
    addresses: tuple[str, ...]
    local: str | None
    """Why the target is local or private ("127.0.0.1 is a loopback address"); None when every address is public."""


def split_url(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of an http(s) URL; TargetError otherwise."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise TargetError(f"{url!r} is not a valid URL ({exc}).") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise TargetError(f"Only http:// and https:// URLs can be fetched, not {url!r}.")
    host = parts.hostname.lower().rstrip(".")
    return scheme, host, port or (443 if scheme == "https" else 80)


def why_local(address: str) -> str | None:
    """Why an address is not public ("a loopback address", …), or None when it is globally routable."""
    ip: IPAddress = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        inner = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if inner is None and any(ip in net for net in CARRY_IPV4) and int(ip) > 1:
            inner = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if inner is not None:
            return why_local(str(inner))
        if ip in SITE_LOCAL:
            return "a site-local address"
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_link_local:
        return "a link-local address (cloud metadata services live there)"
    if ip.is_unspecified:
        return "the unspecified address (it reaches this machine)"
    if ip.is_private:
        return "a private network address"
    if ip.is_multicast or not ip.is_global:
        return "not a public internet address"
    return None


def judge(url: str, addresses: tuple[str, ...]) -> FetchTarget:
    scheme, host, port = split_url(url)
    local = next(((a, why) for a in addresses if (why := why_local(a)) is not None), None)
    reason = f"{host} resolves to {local[0]}, {local[1]}" if local and local[0] != host else None
    if local and reason is None:
        reason = f"{host} is {local[1]}"
    return FetchTarget(url, scheme, host, port, addresses, reason)


async def resolve_target(url: str) -> FetchTarget:
    """Resolve the URL's host (every address) and judge it; TargetError if it is not an http(s) URL or does not
    resolve."""
    import anyio

    _, host, port = split_url(url)
    try:
        ipaddress.ip_address(host)
        addresses: tuple[str, ...] = (host,)
    except ValueError:
        try:
            infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:
            raise TargetError(f"Could not resolve {host}: {exc}") from None
        addresses = tuple(dict.fromkeys(str(info[4][0]) for info in infos))
        if not addresses:
            raise TargetError(f"Could not resolve {host}.") from None
    return judge(url, addresses)
