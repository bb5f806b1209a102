"""Tests for coder_agent.tools.file_view: numbered reads, caps, binary/UTF-8 checks, hashes, middle truncation."""

from __future__ import annotations

from pathlib import Path

import pytest

from coder_agent.tools.file_view import (
    SNIFF_BYTES,
    NotTextError,
    content_hash,
    decode_text,
    find_nul,
    format_lines,
    looks_binary,
    split_lines,
    truncate_middle,
)

TEXT = "".join(f"line {i}\n" for i in range(1, 11))


def test_whole_file_is_numbered_like_cat_n_without_a_note() -> None:
    out = format_lines(TEXT)
    lines = out.split("\n")
    assert lines[0] == "     1\tline 1"
    assert lines[-1] == "    10\tline 10"
    assert len(lines) == 10
    assert "showing" not in out


def test_offset_and_limit_window_with_a_note_to_read_more() -> None:
    out = format_lines(TEXT, offset=3, limit=4)
    lines = out.split("\n")
    assert lines[:4] == ["     3\tline 3", "     4\tline 4", "     5\tline 5", "     6\tline 6"]
    assert lines[-1] == "[showing lines 3-6 of 10; use offset=7 to read more.]"


def test_offset_to_the_end_says_it_is_the_end() -> None:
    out = format_lines(TEXT, offset=8)
    assert out.split("\n")[0] == "     8\tline 8"
    assert out.endswith("[showing lines 8-10 of 10 (the end of the file).]")


def test_default_limit_applies() -> None:
    out = format_lines(TEXT, default_limit=3)
    assert "     3\tline 3" in out
    assert "     4\t" not in out
    assert out.endswith("[showing lines 1-3 of 10; use offset=4 to read more.]")


def test_odd_offsets_and_limits_are_forgiven() -> None:
    assert format_lines(TEXT, offset=0) == format_lines(TEXT)
    assert format_lines(TEXT, offset=-5) == format_lines(TEXT)
    assert format_lines(TEXT, limit=0) == format_lines(TEXT)


def test_offset_past_the_end_is_a_notice() -> None:
    out = format_lines(TEXT, offset=11)
    assert "past the end of the file, which has 10 lines" in out
    assert "offset from 1 to 10" in out


def test_empty_file_notice() -> None:
    assert format_lines("") == "[The file is empty: it has no lines.]"


def test_long_lines_are_cut_with_a_marker_and_a_note() -> None:
    text = "short\n" + "x" * 50 + "\nend\n"
    out = format_lines(text, max_line_chars=10)
    lines = out.split("\n")
    assert lines[1] == "     2\t" + "x" * 10 + "… [line cut: 50 characters in total]"
    assert "1 line was longer than 10 characters and cut" in out
    assert lines[2] == "     3\tend"


def test_total_character_cap_stops_at_a_line_boundary() -> None:
    text = "".join(f"{'y' * 90}\n" for _ in range(100))
    out = format_lines(text, max_chars=1000)
    shown = [line for line in out.split("\n") if "\t" in line]
    assert 0 < len(shown) < 100
    assert f"showing lines 1-{len(shown)} of 100; use offset={len(shown) + 1}" in out
    assert len(format_lines("z" * 5000, max_chars=10, max_line_chars=10_000).split("\n")[0]) > 10  # one line always


def test_no_trailing_newline_and_crlf_lines() -> None:
    assert format_lines("a\nb") == "     1\ta\n     2\tb"
    assert format_lines("a\r\nb\r\n") == "     1\ta\n     2\tb"
    assert split_lines("a\r\nb\n\nc") == ["a", "b", "", "c"]
    assert split_lines("x\x0cy\u2028z\n") == ["x\x0cy\u2028z"]  # only "\n" breaks lines
    assert split_lines("") == []
    assert split_lines("\n") == [""]


def test_looks_binary() -> None:
    assert not looks_binary(b"plain text\n")
    assert not looks_binary("héllo €".encode())
    assert looks_binary(b"abc\x00def")
    assert looks_binary(b"caf\xe9")  # latin-1
    assert not looks_binary(b"a" * 9000 + b"\x00")  # NUL only counts in the first 8 KiB ...
    assert looks_binary(b"\xff" + b"a" * 9000)  # ... but invalid UTF-8 anywhere does


def test_looks_binary_on_the_head_of_a_file() -> None:
    data = ("a" * (SNIFF_BYTES - 1) + "é and more").encode()  # "é" is cut in two at SNIFF_BYTES
    assert looks_binary(data[:SNIFF_BYTES])  # as a whole file, it ends in half a character ...
    assert not looks_binary(data[: SNIFF_BYTES + 1], head=True)  # ... as the head of a longer one, it does not
    assert looks_binary(b"caf\xe9 and more", head=True)  # a bad byte before the end still counts
    assert looks_binary(b"abc\x00def", head=True)
    assert find_nul(b"abc\x00def") == 3
    assert find_nul(b"a" * SNIFF_BYTES + b"\x00") == -1


def test_decode_text_round_trips_exactly(tmp_path: Path) -> None:
    data = "\ufeffhé\r\nwörld\r\n".encode()
    path = tmp_path / "bom.txt"
    path.write_bytes(data)
    text = decode_text(path.read_bytes(), str(path))
    assert text.startswith("\ufeff")
    assert "\r\n" in text
    assert text.encode("utf-8") == data


def test_decode_text_rejects_binary(tmp_path: Path) -> None:
    path = tmp_path / "image.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(NotTextError) as info:
        decode_text(path.read_bytes(), str(path))
    message = str(info.value)
    assert f"{path} is not a UTF-8 text file (binary or another encoding); it was not changed" in message
    assert "NUL byte" in message


def test_decode_text_rejects_other_encodings(tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes("café\n".encode("latin-1"))
    with pytest.raises(NotTextError, match=r"not valid UTF-8 \(at byte 3\)"):
        decode_text(path.read_bytes(), str(path))


def test_content_hash() -> None:
    assert content_hash("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert content_hash("a\nb") != content_hash("a\r\nb")
    assert len(content_hash("")) == 64


def test_truncate_middle_keeps_head_and_tail() -> None:
    assert truncate_middle("short", 100) == "short"
    text = "".join(f"{i:04d}\n" for i in range(1000))  # 5000 characters
    out = truncate_middle(text, 500)
    assert len(out) <= 500
    assert out.startswith("0000\n0001\n")
    assert out.endswith("0998\n0999\n")
    assert "characters omitted …]" in out
    head, _, rest = out.partition("[… ")
    assert head.endswith("\n")  # cut at a line break: no blank line before the marker
    omitted = int(rest.split(" ", 1)[0])
    tail = rest.split("…]\n", 1)[1]
    assert len(head) + omitted + len(tail) == len(text)  # the count is exact
    assert text.startswith(head)
    assert text.endswith(tail)


def test_truncate_middle_without_newlines_and_tiny_budgets() -> None:
    text = "x" * 1000
    out = truncate_middle(text, 100)
    assert len(out) <= 100
    assert "characters omitted" in out
    assert "omitted" in truncate_middle(text, 5)
