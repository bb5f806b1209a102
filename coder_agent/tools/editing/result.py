"""What an edit did: the new text, where each replacement landed (`LineRange`), and the model's message.

`EditResult.message` is the tool result the model reads: what changed, how an edit matched when not exactly, and a
numbered snippet of the edited file around every change (`make_snippet`, ±4 lines, OpenHands' window), numbered as
read_file numbers lines. The line ranges also become the tool call's ACP locations.
"""

from __future__ import annotations

from dataclasses import dataclass

from coder_agent.tools.file_view import number_line, split_lines

__all__ = ["SNIPPET_CONTEXT", "EditOutcome", "EditResult", "LineRange", "make_snippet"]

SNIPPET_CONTEXT = 4
"""Lines of context around a change in a snippet (OpenHands' SNIPPET_CONTEXT_WINDOW)."""


@dataclass(frozen=True, order=True)
class LineRange:
    """Lines `first`..`last` (1-based, inclusive) of the new text. A deletion is the one line where text went."""

    first: int
    last: int


@dataclass(frozen=True)
class EditOutcome:
    """What one edit did: where each replacement landed in the final text, and how it matched."""

    ranges: tuple[LineRange, ...]
    """One range per replacement, in the final text (after all edits of the batch), in file order."""
    fallback: bool = False
    """True if the whitespace-tolerant fallback matched (line endings, trailing whitespace, indentation)."""
    stripped_line_numbers: bool = False
    """True if line-number prefixes ("    12\\t") were removed from old_string/new_string to match."""
    note: str | None = None
    """For the model: how the edit matched when it was not exact, e.g. "re-indented by +4 spaces"."""

    @property
    def replacements(self) -> int:
        return len(self.ranges)


@dataclass(frozen=True)
class EditResult:
    """The text after all edits, and what each edit did."""

    new_text: str
    edits: tuple[EditOutcome, ...]

    @property
    def replacements(self) -> int:
        return sum(edit.replacements for edit in self.edits)

    @property
    def notes(self) -> list[str]:
        """The non-exact matches, one note per edit concerned, numbered when there were several edits."""
        many = len(self.edits) > 1
        return [
            f"Edit {i}: {edit.note}" if many else edit.note
            for i, edit in enumerate(self.edits, 1)
            if edit.note is not None
        ]

    def changed_ranges(self) -> list[LineRange]:
        """Every replacement's line range, sorted, overlapping or adjacent ones merged."""
        merged: list[LineRange] = []
        for rng in sorted(r for edit in self.edits for r in edit.ranges):
            if merged and rng.first <= merged[-1].last + 1:
                merged[-1] = LineRange(merged[-1].first, max(merged[-1].last, rng.last))
            else:
                merged.append(rng)
        return merged

    def snippet(self, context: int = SNIPPET_CONTEXT, max_lines: int = 80) -> str:
        """Numbered lines around every change (±`context`), nearby changes in one block, blocks apart by "...".

        A block longer than `max_lines` shows its head and tail only.
        """
        blocks: list[LineRange] = []
        for rng in self.changed_ranges():
            if blocks and rng.first - context <= blocks[-1].last + context + 1:
                blocks[-1] = LineRange(blocks[-1].first, max(blocks[-1].last, rng.last))
            else:
                blocks.append(rng)
        return "\n...\n".join(
            make_snippet(self.new_text, rng.first, rng.last, context, max_lines=max_lines) for rng in blocks
        )

    def message(self, path: str, context: int = SNIPPET_CONTEXT) -> str:
        """The tool result for the model: what changed, how it matched when not exactly, and a numbered snippet."""
        count = self.replacements
        what = f"{count} replacement{'s' if count != 1 else ''}"
        if len(self.edits) > 1:
            what += f" from {len(self.edits)} edits"
        parts = [f"The file {path} has been edited ({what})."]
        parts.extend(f"Note: {note}" for note in self.notes)
        parts.append(
            f"Here is the result of running `cat -n` on a snippet of the edited file:\n{self.snippet(context)}"
        )
        parts.append(
            "Review the changes and make sure they are as expected (correct indentation, no duplicated or missing "
            "lines). Edit the file again if necessary."
        )
        return "\n".join(parts)


def make_snippet(
    text: str, first_line: int, last_line: int, context: int = SNIPPET_CONTEXT, *, max_lines: int | None = None
) -> str:
    """Lines `first_line - context` .. `last_line + context` of `text`, numbered like read_file (`{n:>6}\\t`).

    Out-of-range bounds are clamped. With `max_lines`, a longer snippet keeps its head and tail around a marker.
    """
    lines = split_lines(text)
    if not lines:
        return "[The file is now empty.]"
    lo = max(1, min(first_line, last_line) - context)
    hi = min(len(lines), max(first_line, last_line) + context)
    lo = min(lo, hi)
    numbers = list(range(lo, hi + 1))
    if max_lines is not None and len(numbers) > max(max_lines, 2):
        half = max_lines // 2
        head, tail = numbers[:half], numbers[len(numbers) - (max_lines - half) :]
        omitted = len(numbers) - len(head) - len(tail)
        return "\n".join(
            [number_line(n, lines[n - 1]) for n in head]
            + [f"[… {omitted} lines not shown …]"]
            + [number_line(n, lines[n - 1]) for n in tail]
        )
    return "\n".join(number_line(n, lines[n - 1]) for n in numbers)
