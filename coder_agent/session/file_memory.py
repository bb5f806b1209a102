"""`FileMemory`: what the model last saw of each file — a hash of the text it read whole or wrote.

An edit is refused when the model has not read the file, or when the file changed since (the user or another
program edited it): the tool context checks against this memory before every change. It lives as long as the
session is open (it is not stored: a reopened session reads files again), and `/clear` and `/undo` forget.
"""

from __future__ import annotations

from pathlib import Path


class FileMemory:
    """Content hashes by path."""

    def __init__(self) -> None:
        self._hashes: dict[str, str] = {}

    def remember(self, path: Path | str, digest: str) -> None:
        self._hashes[str(path)] = digest

    def known(self, path: Path | str) -> str | None:
        return self._hashes.get(str(path))

    def forget(self, path: Path | str) -> None:
        self._hashes.pop(str(path), None)

    def clear(self) -> None:
        self._hashes.clear()
