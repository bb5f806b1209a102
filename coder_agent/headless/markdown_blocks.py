"""A streamed answer cut into whole Markdown blocks, so a terminal can render each once it is complete.

Markdown can only be rendered a block at a time: half a code fence or half a list renders wrong, and a
terminal cannot take back what it printed. `MarkdownBlocks` takes the answer's chunks as they stream and hands
back each block once the next one has begun: a blank line outside a code fence, followed by a line that starts
in the first column (an indented line after a blank one still belongs to the block: a list item's second
paragraph, an indented code block). `rest()` hands back the blocks left when the answer ends.
"""

from __future__ import annotations

import re

FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")


class MarkdownBlocks:
    """The blocks of one streamed Markdown text."""

    def __init__(self) -> None:
        self._lines: list[str] = []
        """Complete lines of the block in progress."""
        self._partial = ""
        """The last line, not ended yet."""
        self._fence: str | None = None
        """The opening of the code fence we are in (its character, as long as it was)."""
        self._after_blank = False

    def feed(self, text: str) -> list[str]:
        """Take the next chunk; the blocks it completed, in order."""
        done: list[str] = []
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        for line in lines:
            block = self._line(line)
            if block is not None:
                done.append(block)
        if self._after_blank and self._partial and not self._partial[0].isspace():  # the next block has begun
            done.append("\n".join(self._lines).strip("\n"))
            self._lines, self._after_blank = [], False
        return done

    def rest(self) -> list[str]:
        """The blocks not handed back yet (the answer ended); the splitter starts over."""
        done = self.feed("\n") if self._partial else []
        text = "\n".join(self._lines).strip("\n")
        self._lines, self._partial, self._fence, self._after_blank = [], "", None, False
        return [*done, text] if text.strip() else done

    @property
    def pending(self) -> bool:
        """Some text is held back, waiting for its block to end."""
        return any(line.strip() for line in [*self._lines, self._partial])

    def _line(self, line: str) -> str | None:
        if self._fence is not None:
            self._lines.append(line)
            if line.strip().startswith(self._fence) and not line.strip().strip(self._fence[0]):
                self._fence = None
            return None
        if not line.strip():
            self._after_blank = bool(self._lines)
            self._lines.append(line)
            return None
        finished: str | None = None
        if self._after_blank and not line[0].isspace():
            finished = "\n".join(self._lines).strip("\n")
            self._lines = []
        self._after_blank = False
        self._lines.append(line)
        opening = FENCE.match(line)
        if opening is not None:
            self._fence = opening.group(1)
        return finished
