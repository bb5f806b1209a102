"""File access for tools: through the editor when it offers `fs/*` (so unsaved buffers count and the editor
sees every write), otherwise the local disk.

Writes never go both ways: with `fs.writeTextFile` the editor writes, and success is reported only after
it answered; without it, the file is replaced atomically on disk (temp file + rename), so a crash never
leaves half a file. Binary and non-UTF-8 files are refused before anything is read as text.
"""

from __future__ import annotations

from pathlib import Path

import anyio

from coder_agent.atomic import write_atomic
from coder_agent.errors import ClientError
from coder_agent.session.bridge import ClientBridge
from coder_agent.tools.base import ToolError
from coder_agent.tools.file_view import SNIFF_BYTES, NotTextError, decode_text, looks_binary


class FileAccess:
    """Reads and writes for one session."""

    def __init__(self, client: ClientBridge) -> None:
        self.client = client

    async def exists(self, path: Path) -> bool:
        return await anyio.Path(path).exists()

    async def read_text(self, path: Path) -> str:
        """The file's current text (the editor's buffer when it has one); ToolError if it cannot be read."""
        apath = anyio.Path(path)
        if await apath.is_dir():
            raise ToolError(f"{path} is a directory; use glob to list it.")
        on_disk = await apath.is_file()
        if on_disk:
            await self._refuse_binary(path)
        if self.client.can_read_files:
            try:
                return await self.client.read_text_file(str(path))
            except ClientError as exc:
                if not on_disk:
                    raise ToolError(f"{path} does not exist.") from None
                raise ToolError(f"The editor could not read {path}: {exc.message}") from None
        if not on_disk:
            raise ToolError(f"{path} does not exist.")
        try:
            return decode_text(await apath.read_bytes(), str(path))
        except NotTextError as exc:
            raise ToolError(str(exc)) from None
        except OSError as exc:
            raise ToolError(f"Could not read {path}: {exc.strerror or exc}") from None

    async def write_text(self, path: Path, content: str) -> None:
        """Write through the editor if it can, else atomically on disk; returns once it is done."""
        if self.client.can_write_files:
            try:
                await self.client.write_text_file(str(path), content)
            except ClientError as exc:
                raise ToolError(f"The editor could not write {path}: {exc.message}") from None
            return
        try:
            await anyio.to_thread.run_sync(_atomic_write, path, content)
        except OSError as exc:
            raise ToolError(f"Could not write {path}: {exc.strerror or exc}") from None

    async def _refuse_binary(self, path: Path) -> None:
        try:
            async with await anyio.open_file(path, "rb") as handle:
                head = await handle.read(SNIFF_BYTES + 1)  # one more byte tells whether the file goes on
        except OSError as exc:
            raise ToolError(f"Could not read {path}: {exc.strerror or exc}") from None
        if looks_binary(head, head=len(head) > SNIFF_BYTES):
            raise ToolError(
                f"{path} is not a UTF-8 text file (binary or another encoding); it was not read or changed."
            )


def _atomic_write(path: Path, content: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, content.encode("utf-8"))
