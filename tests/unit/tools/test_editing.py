"""Tests for coder_agent.tools.editing: the matching rules, atomicity, line endings, results and messages."""

from __future__ import annotations

import pytest

from coder_agent.tools.editing import Edit, EditError, LineRange, apply_edits, make_snippet

CODE = """\
import os


def first():
    value = 1
    return value


def second():
    value = 1
    return value * 2


class Thing:
    def method(self):
        if self.ready:
            self.go()
        return None
"""


def apply_one(text: str, old: str, new: str, replace_all: bool = False) -> str:
    return apply_edits(text, [Edit(old, new, replace_all)]).new_text


# --- exact matching -----------------------------------------------------------------------------------------------


def test_unique_exact_match_replaces_and_reports_lines() -> None:
    result = apply_edits(CODE, [Edit("def first():\n    value = 1", "def first():\n    value = 10\n    extra = 2")])
    assert "    value = 10\n    extra = 2\n    return value\n" in result.new_text
    assert result.new_text.count("value = 1\n") == 1  # second() untouched
    (outcome,) = result.edits
    assert outcome.ranges == (LineRange(4, 6),)
    assert not outcome.fallback
    assert outcome.note is None


def test_multiple_matches_without_replace_all_lists_every_line() -> None:
    with pytest.raises(EditError) as info:
        apply_edits(CODE, [Edit("    value = 1\n", "    value = 2\n")])
    message = str(info.value)
    assert "appears 2 times" in message
    assert "lines 5, 10" in message
    assert "replace_all" in message
    assert "surrounding lines" in message


def test_replace_all_replaces_every_non_overlapping_occurrence() -> None:
    result = apply_edits(CODE, [Edit("value", "amount", replace_all=True)])
    assert "value" not in result.new_text
    assert result.new_text.count("amount") == 4
    assert result.edits[0].replacements == 4
    assert [r.first for r in result.edits[0].ranges] == [5, 6, 10, 11]
    assert apply_one("aaaa", "aa", "b", replace_all=True) == "bb"  # non-overlapping, left to right


def test_replace_all_with_a_single_occurrence_is_fine() -> None:
    assert apply_one("a b c", "b", "x", replace_all=True) == "a x c"


def test_identical_old_and_new_is_an_error() -> None:
    with pytest.raises(EditError, match="identical"):
        apply_edits(CODE, [Edit("import os", "import os")])


def test_empty_old_string_on_non_empty_file_is_an_error() -> None:
    with pytest.raises(EditError, match="old_string is empty") as info:
        apply_edits(CODE, [Edit("", "x = 1\n")])
    assert "write_file" in str(info.value)


@pytest.mark.parametrize("text", ["", "\n", "  \n\n"])
def test_empty_old_string_writes_into_an_empty_file(text: str) -> None:
    result = apply_edits(text, [Edit("", "hello\nworld\n")])
    assert result.new_text == "hello\nworld\n"
    assert result.edits[0].ranges == (LineRange(1, 2),)


def test_no_edits_is_an_error() -> None:
    with pytest.raises(EditError, match="No edits"):
        apply_edits(CODE, [])


# --- no match: candidates ---------------------------------------------------------------------------------------------


def test_no_match_shows_closest_candidates_with_line_numbers() -> None:
    with pytest.raises(EditError) as info:
        apply_edits(CODE, [Edit("def secnd():\n    value = 1\n    return value * 3\n", "x")])
    message = str(info.value)
    assert "did not appear verbatim" in message
    assert "Did you mean lines 9-11" in message
    assert "     9\tdef second():" in message
    assert "    11\t    return value * 2" in message
    assert "read the file again" in message


def test_no_match_offers_at_most_three_candidates() -> None:
    text = "".join(f"def function_{i}(argument):\n    return argument + {i}\n\n" for i in range(10))
    with pytest.raises(EditError) as info:
        apply_edits(text, [Edit("def function_x(argument):\n    return argument + 99\n", "y")])
    message = str(info.value)
    assert message.count("similar)") == 3
    assert message.count("Did you mean") == 1
    assert message.count("\nOr lines") == 2


def test_no_match_without_anything_similar_says_so() -> None:
    with pytest.raises(EditError, match="No similar region"):
        apply_edits(CODE, [Edit("zzzzqqqq wwww 12345 !!!", "y")])


def test_no_match_notes_when_new_string_is_already_there() -> None:
    with pytest.raises(EditError) as info:
        apply_edits(CODE, [Edit("    value = 3\n    return value\n", "    value = 1\n    return value * 2\n")])
    assert "new_string already appears in the file (at line 10)" in str(info.value)
    assert "may already have been applied" in str(info.value)


# --- multi-edit atomicity ---------------------------------------------------------------------------------------------


def test_edits_apply_in_order_each_on_the_previous_result() -> None:
    result = apply_edits(
        CODE,
        [
            Edit("import os\n", "import os\nimport sys\n"),
            Edit("import sys\n", "import sys\nimport re\n"),  # only exists after edit 1
            Edit("        return None\n", "        return self\n"),
        ],
    )
    assert result.new_text.startswith("import os\nimport sys\nimport re\n")
    assert result.new_text.endswith("        return self\n")
    assert result.replacements == 3
    # ranges are positions in the final text
    assert result.edits[0].ranges == (LineRange(1, 3),)  # grown by edit 2, which replaced inside it
    assert result.edits[1].ranges == (LineRange(2, 3),)
    assert result.edits[2].ranges == (LineRange(20, 20),)
    assert result.new_text.splitlines()[19] == "        return self"


def test_a_failing_edit_applies_nothing_and_names_itself() -> None:
    edits = [Edit("import os", "import sys"), Edit("does not exist anywhere", "x"), Edit("Thing", "Other")]
    with pytest.raises(EditError) as info:
        apply_edits(CODE, edits)
    message = str(info.value)
    assert message.startswith("Edit 2 of 3 failed:")
    assert "No edits were applied: the file is unchanged" in message
    assert "send all 3 edits again" in message


def test_an_ambiguous_later_edit_fails_the_batch() -> None:
    with pytest.raises(EditError, match="Edit 2 of 2 failed: old_string appears 2 times"):
        apply_edits(CODE, [Edit("import os", "import sys"), Edit("value = 1", "value = 2")])


def test_later_edit_shifts_earlier_ranges() -> None:
    result = apply_edits(CODE, [Edit("        return None\n", "        return 0\n"), Edit("import os\n", "")])
    assert result.edits[0].ranges == (LineRange(17, 17),)
    assert result.edits[1].ranges == (LineRange(1, 1),)  # a deletion: the line where the text was


# --- whitespace-tolerant fallback -------------------------------------------------------------------------------------


def test_indentation_fallback_reindents_new_string() -> None:
    old = "if self.ready:\n    self.go()\n"  # the file has these at 8/12 spaces
    new = "if self.ready:\n    self.prepare()\n    self.go()\n"
    result = apply_edits(CODE, [Edit(old, new)])
    assert "        if self.ready:\n            self.prepare()\n            self.go()\n        return None\n" in (
        result.new_text
    )
    (outcome,) = result.edits
    assert outcome.fallback
    assert outcome.note is not None
    assert "indentation" in outcome.note
    assert "8 spaces" in outcome.note
    assert outcome.ranges == (LineRange(16, 18),)
    assert "Note: old_string did not match exactly" in result.message("thing.py")


def test_over_indented_old_string_is_dedented() -> None:
    text = "def f():\n    a = 1\n    b = 2\n"
    result = apply_edits(text, [Edit("        a = 1\n        b = 2", "        a = 1\n        c = 3\n        b = 2")])
    assert result.new_text == "def f():\n    a = 1\n    c = 3\n    b = 2\n"
    assert result.edits[0].fallback


def test_trailing_whitespace_fallback() -> None:
    text = "alpha   \nbeta\t\ngamma\n"
    result = apply_edits(text, [Edit("alpha\nbeta\n", "ALPHA\nBETA\n")])
    assert result.new_text == "ALPHA\nBETA\ngamma\n"
    note = result.edits[0].note
    assert note is not None
    assert "trailing whitespace" in note


def test_fallback_requires_a_unique_match() -> None:
    text = "def a():\n    x = 1\n    y = 2\n\ndef b():\n        x = 1\n        y = 2\n"
    with pytest.raises(EditError) as info:
        apply_edits(text, [Edit("x = 1\ny = 2\n", "z = 3\n")])
    message = str(info.value)
    assert "matches 2 places" in message
    assert "lines 2-3" in message
    assert "lines 6-7" in message


def test_fallback_does_not_apply_when_relative_indentation_differs() -> None:
    text = "if a:\n    b()\n"
    with pytest.raises(EditError, match="did not appear verbatim"):
        apply_edits(text, [Edit("if a:\nb()\n", "if a:\n    c()\n")])


def test_fallback_deletion_removes_whole_lines() -> None:
    text = "one\n    two  \n    three\nfour\n"
    result = apply_edits(text, [Edit("two\nthree\n", "")])
    assert result.new_text == "one\nfour\n"
    assert result.edits[0].fallback


def test_fallback_deletion_at_end_of_file() -> None:
    text = "one\n    two\n    three"
    assert apply_one(text, "two  \nthree", "") == "one"


# --- line endings -----------------------------------------------------------------------------------------------------


def test_crlf_file_keeps_crlf_with_lf_edit() -> None:
    text = CODE.replace("\n", "\r\n")
    result = apply_edits(text, [Edit("def first():\n    value = 1\n", "def first():\n    value = 5\n    more = 6\n")])
    assert "\r\n    value = 5\r\n    more = 6\r\n" in result.new_text
    assert result.new_text.count("\n") == result.new_text.count("\r\n")
    assert not result.edits[0].fallback  # adapting "\n" to the file's "\r\n" is still an exact match
    assert result.new_text.replace("\r\n", "\n") == apply_one(
        CODE, "def first():\n    value = 1\n", "def first():\n    value = 5\n    more = 6\n"
    )


def test_crlf_edit_strings_on_crlf_file() -> None:
    text = "a\r\nb\r\nc\r\n"
    assert apply_one(text, "b\r\n", "B\r\nB2\r\n") == "a\r\nB\r\nB2\r\nc\r\n"


def test_crlf_edit_strings_on_lf_file_use_the_fallback_and_keep_lf() -> None:
    text = "a\nb\nc\n"
    result = apply_edits(text, [Edit("a\r\nb\r\n", "A\r\nB\r\n")])
    assert result.new_text == "A\nB\nc\n"
    note = result.edits[0].note
    assert note is not None
    assert "line endings" in note


def test_mixed_line_endings_are_left_alone_outside_the_edit() -> None:
    text = "a\r\nb\nc\r\n"
    assert apply_one(text, "b", "B") == "a\r\nB\nc\r\n"


# --- line-number prefixes ---------------------------------------------------------------------------------------------


def test_line_number_prefixes_are_stripped_when_every_old_line_has_one() -> None:
    old = "     5\t    value = 1\n     6\t    return value\n     7\t\n     8\t\n     9\tdef second():"
    new = "     5\t    value = 100\n     6\t    return value\n     7\t\n     8\t\n     9\tdef second():"
    result = apply_edits(CODE, [Edit(old, new)])
    assert "    value = 100\n    return value\n\n\ndef second():" in result.new_text
    assert result.edits[0].stripped_line_numbers
    assert not result.edits[0].fallback
    note = result.edits[0].note
    assert note is not None
    assert "line-number prefixes" in note


def test_line_number_prefix_stripping_tolerates_trimmed_blank_lines_and_unprefixed_new_lines() -> None:
    old = "     6\t    return value\n     7\n     8\n     9\tdef second():"
    new = "    return value\n\n\ndef renamed():"
    result = apply_edits(CODE, [Edit(old, new)])
    assert "    return value\n\n\ndef renamed():\n" in result.new_text


def test_prefixes_are_kept_unless_every_old_line_has_one() -> None:
    text = "1\tone\n2\ttwo\n"
    # the file itself holds tab-separated numbers: the exact match wins
    assert apply_one(text, "1\tone\n", "1\tuno\n") == "1\tuno\n2\ttwo\n"
    # only some lines prefixed: nothing is stripped, so it does not match
    with pytest.raises(EditError):
        apply_edits(CODE, [Edit("     1\timport os\nimport sys", "x")])


def test_plain_numbers_are_content_not_prefixes() -> None:
    text = "1\n2\n3\n"
    assert apply_one(text, "2\n", "22\n") == "1\n22\n3\n"


def test_prefixes_with_fallback_indentation() -> None:
    old = "    16\tif self.ready:\n    17\t    self.go()"  # numbers right, indentation lost
    new = "    16\tif self.ready:\n    17\t    self.stop()"
    result = apply_edits(CODE, [Edit(old, new)])
    assert "        if self.ready:\n            self.stop()\n" in result.new_text
    assert result.edits[0].fallback
    assert result.edits[0].stripped_line_numbers


# --- snippets, messages, diff -----------------------------------------------------------------------------------------


def test_make_snippet_numbers_lines_with_context() -> None:
    text = "".join(f"line {i}\n" for i in range(1, 21))
    snippet = make_snippet(text, 10, 11)
    lines = snippet.split("\n")
    assert lines[0] == "     6\tline 6"
    assert lines[-1] == "    15\tline 15"
    assert make_snippet(text, 1, 1).split("\n")[0] == "     1\tline 1"
    assert make_snippet(text, 20, 20).split("\n")[-1] == "    20\tline 20"
    assert make_snippet("", 1, 1) == "[The file is now empty.]"


def test_make_snippet_caps_long_changes() -> None:
    text = "".join(f"line {i}\n" for i in range(1, 201))
    snippet = make_snippet(text, 10, 190, max_lines=20)
    assert "lines not shown" in snippet
    assert len(snippet.split("\n")) == 21


def test_result_snippet_merges_close_changes_and_separates_far_ones() -> None:
    text = "".join(f"line {i}\n" for i in range(1, 101))
    result = apply_edits(text, [Edit("line 10\n", "LINE 10\n"), Edit("line 12\n", "LINE 12\n")])
    assert "..." not in result.snippet()
    result = apply_edits(text, [Edit("line 10\n", "LINE 10\n"), Edit("line 80\n", "LINE 80\n")])
    blocks = result.snippet().split("\n...\n")
    assert len(blocks) == 2
    assert "    10\tLINE 10" in blocks[0]
    assert "    80\tLINE 80" in blocks[1]


def test_message_has_summary_snippet_and_review_hint() -> None:
    result = apply_edits(CODE, [Edit("import os", "import sys")])
    message = result.message("/repo/a.py")
    assert message.startswith("The file /repo/a.py has been edited (1 replacement).")
    assert "     1\timport sys" in message
    assert "Review the changes" in message


def test_unicode_and_special_characters_are_literal() -> None:
    text = "price = 5€  # (a+b)*[c]\n"
    assert apply_one(text, "5€  # (a+b)*[c]", "6€") == "price = 6€\n"
