"""A streamed answer cut into whole Markdown blocks: never inside a code fence, never between a list item and
its indented continuation, whatever the chunks' boundaries."""

from __future__ import annotations

import pytest

from coder_agent.headless.markdown_blocks import MarkdownBlocks

ANSWER = (
    "First paragraph,\nstill the first.\n\n"
    "```python\ndef f():\n\n    return 1\n```\n\n"
    "- an item\n\n  its second paragraph\n- another\n\n"
    "~~~~\n```\nnot the end\n~~~~\n\n"
    "Last line"
)
BLOCKS = [
    "First paragraph,\nstill the first.",
    "```python\ndef f():\n\n    return 1\n```",
    "- an item\n\n  its second paragraph\n- another",
    "~~~~\n```\nnot the end\n~~~~",
    "Last line",
]


@pytest.mark.parametrize("size", [1, 3, 7, 1000])
def test_blocks_come_whole_whatever_the_chunks(size: int) -> None:
    blocks = MarkdownBlocks()
    got: list[str] = []
    for n in range(0, len(ANSWER), size):
        got += blocks.feed(ANSWER[n : n + size])
    assert blocks.pending
    assert [*got, *blocks.rest()] == BLOCKS
    assert not blocks.pending and blocks.rest() == []


def test_a_block_waits_for_the_next_one_to_begin() -> None:
    blocks = MarkdownBlocks()
    assert blocks.feed("One.\n\n") == []
    assert blocks.feed("Two") == ["One."]
    assert blocks.rest() == ["Two"]
