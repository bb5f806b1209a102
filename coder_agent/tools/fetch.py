"""The `fetch` tool's core: get a URL over HTTP(S) and turn the page into text the model can read."""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser

MAX_BYTES = 5_000_000
MAX_CHARS = 50_000
TIMEOUT = 30.0
SKIPPED_TAGS = frozenset({"script", "style", "noscript", "svg", "head", "template"})
BLOCK_TAGS = frozenset(
    {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "section", "article", "table", "hr"}
)


class FetchError(Exception):
    """The page could not be fetched; the message is for the model."""


@dataclass(frozen=True)
class Page:
    url: str
    status: int
    content_type: str
    text: str
    truncated: bool


async def fetch(url: str, *, max_chars: int = MAX_CHARS) -> Page:
    """GET `url` (http or https, redirects followed) and return its text; HTML is reduced to plain text."""
    import httpx

    check_url(url)
    try:
        async with (
            httpx.AsyncClient(follow_redirects=True, timeout=TIMEOUT) as client,
            client.stream("GET", url, headers={"User-Agent": "coder-agent"}) as response,
        ):
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_BYTES:
                    break
            content_type = response.headers.get("content-type", "")
            status = response.status_code
            final_url = str(response.url)
            encoding = response.encoding or "utf-8"
    except httpx.HTTPError as exc:
        raise FetchError(f"Could not fetch {url}: {exc}") from None
    text = bytes(body).decode(encoding, errors="replace")
    if "html" in content_type or text.lstrip()[:15].lower().startswith(("<!doctype html", "<html")):
        text = html_to_text(text)
    truncated = len(text) > max_chars
    if truncated:
        text = text[:max_chars] + f"\n[… truncated: the page has {len(text):,} characters]"
    return Page(final_url, status, content_type, text, truncated)


def check_url(url: str) -> None:
    """FetchError unless `url` is an http(s) URL."""
    if not re.match(r"^https?://[^/\s]", url, re.IGNORECASE):
        raise FetchError(f"Only http:// and https:// URLs can be fetched, not {url!r}.")


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
