"""Web pages for the `fetch` tool: get a URL over HTTP(S), by hand, and turn the page into Markdown the model reads.

Every connection goes to an address the permission layer already judged (`permissions.network`): the host
is resolved once, the request is sent to that address with the host name in the `Host` header and in TLS
(SNI and certificate checks use the name), so a DNS answer that changes in between cannot redirect it.
Redirects are followed one hop at a time; each hop is resolved and judged again, and a hop the caller
does not accept (a local address, another host the user did not approve) ends the call with a message
naming it. Proxy variables are not used: a proxy would resolve names itself.

An HTML page becomes Markdown (`html_to_markdown`, with markdownify over Beautiful Soup's standard-library
parser, imported only when a page is converted): its title first, headings, lists and tables with their markers,
code blocks whole with their indentation (and their language when the page names it), links with their address
made absolute so the model can fetch them next; scripts, styles, forms and navigation are left out. The text is
cut at `max_chars` as before.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit, urlunsplit

import anyio

from coder_agent.errors import CallFailed
from coder_agent.permissions.network import FetchTarget, TargetError, resolve_target

if TYPE_CHECKING:
    import httpx

MAX_BYTES = 5_000_000
MAX_CHARS = 50_000
MAX_REDIRECTS = 10
TIMEOUT = 30.0
REDIRECTS = frozenset({301, 302, 303, 307, 308})
LEFT_OUT = ("script", "style", "noscript", "svg", "template", "iframe", "form", "nav", "button")
"""Elements whose content is not the page's text."""
PERMALINKS = frozenset({"¶", "#", "§", "🔗", ""})
NOT_TEXT = re.compile(r"<(script|style|svg|template)\b[^>]*>.*?</\1\s*>|<!--.*?-->", re.IGNORECASE | re.DOTALL)
"""What is dropped before parsing (cheaply: it can be most of a page's bytes)."""
HTML_PER_CHAR = 8
"""HTML converted per character of text kept: Markdown is much shorter than the HTML it comes from."""

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
                return await anyio.to_thread.run_sync(_page, target.url, status, headers, body, max_chars)
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
        text = html_to_markdown(text, url, max_chars * HTML_PER_CHAR)
    if len(text) > max_chars:
        text = text[:max_chars] + f"\n[… truncated: the page has {len(text):,} characters]"
    return Page(url, status, content_type, text)


def html_to_markdown(html: str, url: str, max_html: int | None = None) -> str:
    """The page as Markdown: its title first, then its content (see the module's docstring). Only the first
    `max_html` characters of the page's HTML are converted, once scripts, styles and comments are gone: far more
    than the text kept, and a multi-megabyte page converts in a second rather than half a minute."""
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    html = NOT_TEXT.sub("", html)
    soup = BeautifulSoup(html if max_html is None else html[:max_html], "html.parser")
    title = " ".join(soup.title.get_text().split()) if soup.title is not None else ""
    for element in soup.find_all([*LEFT_OUT, "head"]):
        element.decompose()
    for element in soup.find_all(True, attrs={"role": "navigation"}):
        element.decompose()
    for link in soup.find_all(["a", "img"]):
        if link.name == "a" and str(link.get("href", "")).startswith("#") and link.get_text(strip=True) in PERMALINKS:
            link.decompose()  # a heading's own permalink mark
        else:
            _absolute(link, "href" if link.name == "a" else "src", url)
    converter = MarkdownConverter(heading_style="ATX", bullets="-", code_language_callback=_language, escape_misc=False)
    body = converter.convert_soup(soup)
    lines = [line.rstrip() for line in body.strip().splitlines()]
    text = "\n".join(line for n, line in enumerate(lines) if line or (n and lines[n - 1]))  # no runs of blank lines
    return f"Title: {title}\n\n{text}" if title else text


def _absolute(element: Any, attribute: str, base: str) -> None:
    """An address made absolute against the page's (a data: image, which could be megabytes, is dropped)."""
    value = element.get(attribute)
    if not isinstance(value, str):
        return
    if value.startswith("data:"):
        del element[attribute]
    elif not value.startswith("#"):
        element[attribute] = urljoin(base, value)


def _language(element: Any) -> str | None:
    """The language a code block says it is in (`language-python`, Sphinx's `highlight-python3`), if any."""
    parents = [parent for _, parent in zip(range(3), element.parents, strict=False)]
    for node in (element, *element.find_all("code", limit=1), *parents):
        for name in node.get("class") or []:
            for prefix in ("language-", "lang-", "highlight-"):
                if name.startswith(prefix) and len(name) > len(prefix):
                    return str(name[len(prefix) :])
    return None
