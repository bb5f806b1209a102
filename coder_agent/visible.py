"""Text a person is asked to trust, with the characters that could hide part of it made visible.

A command, a title or a file's text may carry terminal escape sequences (erase a line, move the cursor,
change colours to hide a tail), other control characters, and invisible or reordering Unicode (bidirectional
overrides, zero-width characters and variation selectors, tag characters). Shown raw, a person approves
something other than what runs. `visible` writes each such character as an escape (`\\x1b`, `\\u202e`);
newlines and tabs stay.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["visible"]

_PLAIN = re.compile(r"[\n\t\x20-\x7e]*")
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp"})
_INVISIBLE_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u034f\u17b4\u17b5\u2800\u180b\u180c\u180d\u180f")
"""Fillers, joiners and blanks that render as nothing though Unicode does not call them format characters
(the braille blank, Mongolian variation selectors)."""
_VARIATION_SELECTORS = ((0xFE00, 0xFE0F), (0xE0100, 0xE01EF))
"""Zero-width marks that can carry any text unseen (one byte each)."""
_PRESENTATION = frozenset("\ufe0e\ufe0f")
"""The text and emoji presentation selectors: one right after a symbol is how an emoji is written (`⚠️`), and
alone it can carry no text; any other, or a second one, is escaped."""


def visible(text: str) -> str:
    """`text` with control, format, private-use, unassigned and separator characters written as escapes."""
    if _PLAIN.fullmatch(text):
        return text
    shown = []
    before = ""
    for char in text:
        emoji = char in _PRESENTATION and before != "" and unicodedata.category(before) == "So"
        shown.append(_escape(char) if _hidden(char) and not emoji else char)
        before = char
    return "".join(shown)


def _hidden(char: str) -> bool:
    if char in "\n\t":
        return False
    if unicodedata.category(char) in _HIDDEN_CATEGORIES or char in _INVISIBLE_LETTERS:
        return True
    return any(low <= ord(char) <= high for low, high in _VARIATION_SELECTORS)


def _escape(char: str) -> str:
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
