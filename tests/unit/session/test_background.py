"""A job's bounded output (`OutputBuffer`): offsets that count everything, a tail kept, reads that say what they
missed, an editor terminal's output taken in as it grows or is cut; and the input pipe."""

from __future__ import annotations

import os

import anyio
import anyio.lowlevel
import pytest

from coder_agent.session.background import InputClosed, InputPipe, OutputBuffer

pytestmark = pytest.mark.anyio


def test_reads_from_an_offset_and_say_where_to_read_on() -> None:
    output = OutputBuffer(limit=100)
    output.add("hello ")
    output.add("world")
    first = output.read(0)
    assert (first.text, first.start, first.end, first.missed) == ("hello world", 0, 11, 0)
    assert output.read(6).text == "world"
    assert output.read(11).text == "" and output.read(99).end == 11


def test_only_the_last_characters_are_kept_and_a_late_reader_is_told_what_it_missed() -> None:
    output = OutputBuffer(limit=10)
    for _ in range(1000):
        output.add("abcdefghij")
    assert output.total == 10_000
    late = output.read(0)
    assert late.missed >= 9_980 and late.end == 10_000
    assert late.text.endswith("abcdefghij") and len(late.text) <= 20
    one_huge = OutputBuffer(limit=10)
    one_huge.add("x" * 1_000_000 + "END")
    assert one_huge.total == 1_000_003 and one_huge.read(0).text.endswith("END") and len(one_huge.read(0).text) == 10


def test_a_long_read_keeps_its_beginning_and_end_and_names_the_skipped_offsets() -> None:
    output = OutputBuffer()
    output.add("".join(f"line {n}\n" for n in range(10_000)))
    cut = output.read(0, max_chars=1_000)
    assert cut.text.startswith("line 0\n") and cut.text.endswith("line 9999\n")
    assert "characters skipped (offsets 200 to" in cut.text and cut.end == output.total


def test_mirror_takes_in_what_is_new_as_the_terminal_grows_and_when_it_cuts_its_beginning() -> None:
    output = OutputBuffer()
    output.mirror("one\n", truncated=False)
    output.mirror("one\ntwo\n", truncated=False)
    assert output.read(0).text == "one\ntwo\n"
    lines = "".join(f"line {n}\n" for n in range(5_000))
    output.mirror(lines[:30_000], truncated=True)  # the editor dropped "one two" and kept a window
    window = lines[10_000:40_000]
    output.mirror(window, truncated=True)
    assert output.read(0).text.endswith(lines[:40_000][-50:])
    text = output.read(0).text
    assert text.count(lines[29_950:30_000]) == 1, "what was seen before is not added twice"


async def test_a_reader_waits_for_more_output() -> None:
    output = OutputBuffer()
    async with anyio.create_task_group() as group:

        async def write_later() -> None:
            await anyio.lowlevel.checkpoint()
            output.add("late")

        group.start_soon(write_later)
        with anyio.fail_after(5):
            await output.grown(0)
    assert output.read(0).text == "late"


async def test_the_input_pipe_writes_all_and_says_when_it_is_closed() -> None:
    read_end, write_end = os.pipe()
    pipe = InputPipe(write_end)
    await pipe.write(b"hello\n")
    assert os.read(read_end, 100) == b"hello\n"
    os.close(read_end)
    with pytest.raises(InputClosed, match="no longer reads"):
        await pipe.write(b"more")
    assert not pipe.open
    with pytest.raises(InputClosed, match="closed"):
        await pipe.write(b"again")
