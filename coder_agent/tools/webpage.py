"""Web pages for the `fetch` tool: get a URL over HTTP(S), by hand, and turn the page into text the model can read.

Every connection goes to an address the permission layer already judged (`permissions.network`): the host
is resolved once, the request is sent to that address with the host name in the `Host` header and in TLS
(SNI and certificate checks use the name), so a DNS answer that changes in between cannot redirect it.
Redirects are followed one hop at a time; each hop is resolved and judged again, and a hop the caller
does not accept (a local address, another host the user did not approve) ends the call with a message
naming it. Proxy variables are not used: a proxy would resolve names itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit, urlunsplit

from coder_agent.errors import CallFailed
from coder_agent.permissions.network import FetchTarget, TargetError, resolve_target

if TYPE_CHECKING:
    import httpx

MAX_BYTES = 5_000_000
MAX_CHARS = 50_000
MAX_REDIRECTS = 10
TIMEOUT = 30.0
REDIRECTS = frozenset({301, 302, 303, 307, 308})
SKIPPED_TAGS = frozenset({"script", "style", "noscript", "svg", "head", "template"})
BLOCK_TAGS = frozenset(
    {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "section", "article", "table", "hr"}
)

HopCheck = Callable[[FetchTarget], Awaitable[str | None]]
"""Given a redirect's target: None to follow it, or why it is not followed."""


class FetchError(CallFailed):
    """The page could not be fetched; the message is for the model."""


@dataclass(frozen=True)
class Page:
    url: str
    status: int
    content_type: str
    text: str


async def fetch(target: FetchTarget, may_follow: HopCheck, *, max_chars: int = MAX_CHARS) -> Page:
    """GET the judged `target` (redirects followed while `may_follow` accepts them) and return its text."""
    import httpx

    async with httpx.AsyncClient(follow_redirects=False, timeout=TIMEOUT, trust_env=False) as client:
        for _ in range(MAX_REDIRECTS + 1):
            try:
                status, headers, body = await _get(client, target)
            except httpx.HTTPError as exc:
                raise FetchError(f"Could not fetch {target.url}: {exc}") from None
            location = headers.get("location")
            if status not in REDIRECTS or not location:
                return _page(target.url, status, headers, body, max_chars)
            next_url = urljoin(target.url, location)
            try:
                hop = await resolve_target(next_url)
            except TargetError as exc:
                raise FetchError(f"{target.url} redirects to {next_url}, which was not followed: {exc}") from None
            refusal = await may_follow(hop)
            if refusal is not None:
                raise FetchError(
                    f"{target.url} redirects to {next_url}, which was not followed: {refusal}. "
                    "If you need that page, fetch its URL directly (the user may be asked)."
                )
            target = hop
    raise FetchError(f"Too many redirects (more than {MAX_REDIRECTS}) from {target.url}.")


async def _get(client: httpx.AsyncClient, target: FetchTarget) -> tuple[int, dict[str, str], bytes]:
    """One GET to the target's judged addresses in turn (the next one when one cannot be reached)."""
    import httpx

    for address in target.addresses[:-1]:
        try:
            return await _get_from(client, target, address)
        except httpx.ConnectError:
            continue
    return await _get_from(client, target, target.addresses[-1])


async def _get_from(client: httpx.AsyncClient, target: FetchTarget, address: str) -> tuple[int, dict[str, str], bytes]:
    """One GET to `address`, the host name kept for `Host` and TLS."""
    parts = urlsplit(target.url)
    literal = f"[{address}]" if ":" in address else address
    pinned = urlunsplit((target.scheme, f"{literal}:{target.port}", parts.path or "/", parts.query, ""))
    default_port = target.port == (443 if target.scheme == "https" else 80)
    host = f"[{target.host}]" if ":" in target.host else target.host
    headers = {"User-Agent": "coder-agent", "Host": host if default_port else f"{host}:{target.port}"}
    extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
    async with client.stream("GET", pinned, headers=headers, extensions=extensions) as response:
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > MAX_BYTES:
                break
        found = {key.lower(): value for key, value in response.headers.items()}
        found["x-encoding"] = response.encoding or "utf-8"
        return response.status_code, found, bytes(body)


def _page(url: str, status: int, headers: dict[str, str], body: bytes, max_chars: int) -> Page:
    content_type = headers.get("content-type", "")
    text = body.decode(headers.get("x-encoding", "utf-8"), errors="replace")
    if "html" in content_type or text.lstrip()[:15].lower().startswith(("<!doctype html", "<html")):
        text = html_to_text(text)
    if len(text) > max_chars:
        text = text[:max_chars] + f"\n[… truncated: the page has {len(text):,} characters]"
    return Page(url, status, content_type, text)


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in SKIPPED_TAGS:
            self._skipping += 1
        elif tag in BLOCK_TAGS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in SKIPPED_TAGS and self._skipping:
            self._skipping -= 1
        elif tag in BLOCK_TAGS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)


def html_to_text(html: str) -> str:
    """The readable text of an HTML page, one block per line."""
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).splitlines())
    return "\n".join(line for line in lines if line)
