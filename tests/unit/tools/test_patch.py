"""Tests for the apply_patch format (coder_agent.tools.editing.patch), hunks applied to a text (hunks), a whole
patch planned over files (patch_plan), the lenient line matcher (lines) and the choice of edit tool per family."""

from __future__ import annotations

import pytest

from coder_agent.config import Config
from coder_agent.model.families import trained_on_apply_patch
from coder_agent.tools.editing.hunks import apply_hunks
from coder_agent.tools.editing.lines import find_lenient, indent_unit
from coder_agent.tools.editing.patch import AddFile, DeleteFile, Hunk, HunkLine, PatchError, UpdateFile, parse_patch
from coder_agent.tools.editing.patch_plan import plan_patch
from coder_agent.tools.registry import edit_tool_for, session_specs


def wrap(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"])


# --- the grammar ------------------------------------------------------------------------------------------------------


def test_a_patch_with_every_operation() -> None:
    patch = parse_patch(
        wrap(
            "*** Add File: new.py",
            "+x = 1",
            "+",
            "+y = 2",
            "*** Delete File: old.py",
            "*** Update File: app.py",
            "*** Move to: lib/app.py",
            "@@ class Thing",
            "@@     def go(self):",
            " keep",
            "-gone",
            "+added",
            "@@",
            "-tail",
            "+TAIL",
            "*** End of File",
        )
    )
    add, delete, update = patch.ops
    assert add == AddFile("new.py", "x = 1\n\ny = 2\n", 2)
    assert delete == DeleteFile("old.py", 6)
    assert isinstance(update, UpdateFile)
    assert update.move_to == "lib/app.py"
    first, second = update.hunks
    assert first.anchors == ("class Thing", "def go(self):")
    assert first.lines == (HunkLine(" ", "keep"), HunkLine("-", "gone"), HunkLine("+", "added"))
    assert (first.old, first.new) == (["keep", "gone"], ["keep", "added"])
    assert second.at_end and second.anchors == ()
    assert patch.paths == ["new.py", "old.py", "app.py", "lib/app.py"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a fence around the patch
        ("```diff\n" + wrap("*** Delete File: a") + "\n```", ["a"]),
        # a here-document, as models type it for a shell tool
        ("apply_patch <<'EOF'\n" + wrap("*** Delete File: a") + "\nEOF\n", ["a"]),
        # Windows line endings and blank edges
        ("\r\n\r\n" + wrap("*** Delete File: a").replace("\n", "\r\n") + "\r\n\r\n", ["a"]),
        # markers with stray spaces
        ("  *** Begin Patch\n*** Delete File:   a  \n*** End Patch  ", ["a"]),
    ],
)
def test_wrappers_and_line_endings_are_read_leniently(text: str, expected: list[str]) -> None:
    assert parse_patch(text).paths == expected


def test_hunk_leniencies() -> None:
    (update,) = parse_patch(
        wrap(
            "*** Update File: a.py",
            "@@ -10,4 +10,4 @@ def f():",  # a unified diff header: its text is the anchor
            " one",
            "",  # an empty context line whose space was trimmed
            "-two",
            "+TWO",
            "\\ No newline at end of file",
            "",
        )
    ).ops
    assert isinstance(update, UpdateFile)
    (hunk,) = update.hunks
    assert hunk.anchors == ("def f():",)
    assert hunk.old == ["one", "", "two"]
    assert hunk.new == ["one", "", "TWO"]


def test_the_first_hunk_may_leave_out_its_at_line() -> None:
    (update,) = parse_patch(wrap("*** Update File: a", "-x", "+y", "@@ z", "-1", "+2")).ops
    assert isinstance(update, UpdateFile)
    assert [h.anchors for h in update.hunks] == [(), ("z",)]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "The patch is empty"),
        ("*** Update File: a\n-x\n+y\n*** End Patch", "must start with `*** Begin Patch`"),
        ("diff --git a/x b/x\n--- a/x\n+++ b/x", "must start with `*** Begin Patch`"),
        ("*** Begin Patch\n*** Update File: a\n-x\n+y", "must end with `*** End Patch`"),
        (wrap(), "has no file in it"),
        (wrap("*** Add File: "), "names no file"),
        (wrap("*** Delete File: a\x00b"), "holds a NUL character"),
        (wrap("*** Add File: a", "x = 1"), "Patch line 3: every line of a new file starts with `+`"),
        (wrap("*** Update File: a"), "has no hunk"),
        (wrap("*** Update File: a", " only", " context"), "changes nothing"),
        (wrap("*** Update File: a", "@@ def f():"), "has an `@@` line but no lines after it"),
        (wrap("*** Update File: a", "-x", "?y"), "Patch line 4: a line of a hunk starts with"),
        (wrap("*** Update File: a", "-x", "*** Rename File: b"), "unknown header"),
        (wrap("*** Copy File: a"), "expected a file header"),
    ],
)
def test_bad_patches_name_the_line_and_the_fix(text: str, message: str) -> None:
    with pytest.raises(PatchError) as info:
        parse_patch(text)
    assert message in str(info.value)


# --- hunks on one text ------------------------------------------------------------------------------------------------

CODE = """\
class Cart:
    def __init__(self):
        self.items = []

    def total(self):
        return sum(i.price for i in self.items)

    def count(self):
        return len(self.items)


def helper():
    return None
"""


def hunk(*lines: str, anchors: tuple[str, ...] = (), at_end: bool = False) -> Hunk:
    return Hunk(tuple(HunkLine(line[0], line[1:]) for line in lines), anchors, at_end)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "hunks", "expected_change"),
    [
        (
            "exact",
            [hunk("     def total(self):", "-        return sum(i.price for i in self.items)", "+        return 0")],
            ("        return sum(i.price for i in self.items)\n", "        return 0\n"),
        ),
        (
            "indentation lost: re-indented",
            [hunk(" def count(self):", "-    return len(self.items)", "+    return len(self.items) or 0")],
            ("        return len(self.items)\n", "        return len(self.items) or 0\n"),
        ),
        (
            "trailing spaces in the patch",
            [hunk(" def helper():   ", "-    return None  ", "+    return 1")],
            ("    return None\n", "    return 1\n"),
        ),
        (
            "read_file's line-number prefixes copied in",
            [hunk("      8\t    def count(self):", "-     9\t        return len(self.items)", "+     9\t        pass")],
            ("        return len(self.items)\n", "        pass\n"),
        ),
        (
            "a wrong first context line",
            [hunk("     def count(self, other):", "-        return len(self.items)", "+        return 3")],
            ("        return len(self.items)\n", "        return 3\n"),
        ),
        (
            "an anchor picks the place",
            [hunk("-    return None", "+    return 2", anchors=("def helper():",))],
            ("    return None\n", "    return 2\n"),
        ),
        (
            "only added lines, after an anchor",
            [hunk("+    # helper", anchors=("def helper():",))],
            ("def helper():\n", "def helper():\n    # helper\n"),
        ),
        (
            "end of file",
            [hunk("     return None", "+# end", at_end=True)],
            ("    return None\n", "    return None\n# end\n"),
        ),
    ],
)
def test_hunks_apply_as_intended(name: str, hunks: list[Hunk], expected_change: tuple[str, str]) -> None:
    before, after = expected_change
    result = apply_hunks(CODE, hunks, "cart.py")
    assert result.text == CODE.replace(before, after, 1), name


def test_hunks_apply_in_order_and_report_where_they_landed() -> None:
    result = apply_hunks(
        CODE,
        [
            hunk(
                "     def total(self):",
                "-        return sum(i.price for i in self.items)",
                "+        a = 1",
                "+        b = 2",
            ),
            hunk(" def helper():", "-    return None", "+    return 3"),
        ],
        "cart.py",
    )
    assert [(r.first, r.last) for r in result.ranges] == [(5, 7), (13, 14)]
    assert "        a = 1\n        b = 2\n" in result.text and "    return 3\n" in result.text


@pytest.mark.parametrize(
    ("name", "hunks", "message"),
    [
        ("ambiguous", [hunk("-        return len(self.items)", "+x")], None),
        ("ambiguous context", [hunk("     def", "-        self", "+x")], "does not apply"),
        ("nowhere", [hunk(" def nothing():", "-    pass", "+    return")], "does not apply"),
        ("anchor nowhere", [hunk("-    return None", "+    x", anchors=("def missing():",))], "is not in the file"),
        ("end of file mismatch", [hunk("-class Cart:", "+class Basket:", at_end=True)], "does not apply"),
        (
            "overlap",
            [hunk(" def helper():", "-    return None", "+    return 1"), hunk("-def helper():", "+def aid():")],
            "change the same lines",
        ),
    ],
)
def test_hunks_that_cannot_apply_change_nothing(name: str, hunks: list[Hunk], message: str | None) -> None:
    text = CODE + "\ndef other(self):\n        return len(self.items)\n"
    with pytest.raises(PatchError) as info:
        apply_hunks(text, hunks, "cart.py")
    assert "Nothing was applied" in str(info.value), name
    if message:
        assert message in str(info.value), name


def test_several_places_are_named_never_guessed() -> None:
    text = "a\nx = 1\nb\nx = 1\n"
    with pytest.raises(PatchError) as info:
        apply_hunks(text, [hunk("-x = 1", "+x = 2")], "f")
    assert "matches 2 places: line 2, line 4" in str(info.value)
    assert "`@@` line" in str(info.value)
    assert apply_hunks(text, [hunk("-x = 1", "+x = 2", anchors=("b",))], "f").text == "a\nx = 1\nb\nx = 2\n"


def test_an_anchor_may_be_the_start_of_a_line_but_not_of_a_longer_name() -> None:
    text = "def total_tax():\n    return 1\n\ndef totals():\n    return 1\n\ndef total(self):\n    return 1\n"
    result = apply_hunks(text, [hunk("-    return 1", "+    return 2", anchors=("def total",))], "f")
    assert result.text.endswith("def total(self):\n    return 2\n")
    assert result.text.count("return 1") == 2


def test_the_closest_lines_are_shown_when_nothing_matches() -> None:
    with pytest.raises(PatchError) as info:
        apply_hunks(
            CODE, [hunk("     def totals(self):", "-        return sum(x.cost for x in self.items)", "+  0")], "f"
        )
    assert "The closest lines are lines 5-6" in str(info.value)
    assert "     5\t    def total(self):" in str(info.value)


def test_line_endings_and_final_newline_are_kept() -> None:
    crlf = "a\r\nb\r\nc\r\n"
    assert apply_hunks(crlf, [hunk(" a", "-b", "+B")], "f").text == "a\r\nB\r\nc\r\n"
    assert apply_hunks("a\nb", [hunk(" a", "-b", "+B")], "f").text == "a\nB"
    assert apply_hunks("", [hunk("+first")], "f").text == "first\n"
    mixed = "a\nb\r\nc\n"
    assert apply_hunks(mixed, [hunk(" a", "-b", "+B")], "f").text == "a\nB\r\nc\n"


def test_tabs_for_spaces_are_carried_over() -> None:
    text = "def f():\n\tif x:\n\t\treturn 1\n\treturn 2\n"
    result = apply_hunks(text, [hunk("     if x:", "-        return 1", "+        y = 3", "+        return y")], "f")
    assert result.text == "def f():\n\tif x:\n\t\ty = 3\n\t\treturn y\n\treturn 2\n"
    assert "1 tab a level, yours by 4 spaces" in result.notes[0]


# --- the lenient matcher, table-driven --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("file", "wanted", "new", "found", "carried"),
    [
        # same indentation, trailing spaces differ
        (["  a  ", "  b"], ["  a", "  b"], ["  c"], [0], ["  c"]),
        # uniform shift: the model dropped a level
        (["x", "    a", "        b"], ["a", "    b"], ["a", "    c"], [1], ["    a", "        c"]),
        # tabs for spaces at two depths
        (["\ta", "\t\tb"], ["    a", "        b"], ["        c"], [0], ["\t\tc"]),
        # two spaces for four
        (["    a", "        b"], ["  a", "    b"], ["      c"], [0], ["            c"]),
        # relative indentation differs: no match
        (["a", "    b"], ["a", "b"], [], [], None),
        # blank lines must line up
        (["a", "", "b"], ["a", "b"], [], [], None),
        # content differs
        (["a", "b"], ["a", "c"], [], [], None),
        # every place is reported
        (["a", "x", "a"], ["  a"], [], [0, 2], None),
        # a new line that cannot be carried over (half a unit) excludes the match
        (["\ta", "\t\tb"], ["    a", "        b"], ["      c"], [], None),
    ],
)
def test_find_lenient(
    file: list[str], wanted: list[str], new: list[str], found: list[int], carried: list[str] | None
) -> None:
    matches = find_lenient(file, wanted, new=new)
    assert [m.index for m in matches] == found
    if carried is not None:
        assert [matches[0].indentation.carry(line) for line in new] == carried


@pytest.mark.parametrize(
    ("lines", "unit"),
    [
        (["a", "    b", "        c", "    d"], "    "),
        (["a", "\tb", "\t\tc"], "\t"),
        (["a", "  b", "    c", "      d", "  e"], "  "),
        (["    a"], "    "),
        (["a", "b"], None),
    ],
)
def test_indent_unit(lines: list[str], unit: str | None) -> None:
    assert indent_unit(lines) == unit


# --- a whole patch over several files ---------------------------------------------------------------------------------


def plan(text: str, files: dict[str, str | None]) -> dict[str, tuple[str | None, str | None, str]]:
    planned = plan_patch(parse_patch(text), files, lambda path: path)
    return {item.key: (item.old, item.new, item.verb) for item in planned}


def test_a_patch_plans_every_file() -> None:
    files: dict[str, str | None] = {"a.py": "x = 1\n", "b.py": None, "c.py": "gone\n", "d.py": "d\n", "e.py": None}
    result = plan(
        wrap(
            "*** Update File: a.py",
            "-x = 1",
            "+x = 2",
            "*** Add File: b.py",
            "+new",
            "*** Delete File: c.py",
            "*** Update File: d.py",
            "*** Move to: e.py",
        ),
        files,
    )
    assert result == {
        "a.py": ("x = 1\n", "x = 2\n", "updated"),
        "b.py": (None, "new\n", "added"),
        "c.py": ("gone\n", None, "deleted"),
        "d.py": ("d\n", None, "deleted"),
        "e.py": (None, "d\n", "moved"),
    }


def test_operations_apply_in_order() -> None:
    files: dict[str, str | None] = {"a": "one\n"}
    result = plan(wrap("*** Delete File: a", "*** Add File: a", "+two", "*** Update File: a", "-two", "+three"), files)
    assert result == {"a": ("one\n", "three\n", "updated")}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (["*** Update File: missing", "-x", "+y"], "cannot update missing: it does not exist. Use `*** Add File:`"),
        (["*** Delete File: missing"], "cannot delete missing: it does not exist"),
        (["*** Add File: a", "+x"], "cannot add a: it already exists"),
        (["*** Update File: a", "*** Move to: b"], "cannot move a to b: b already exists"),
        (["*** Add File: missing", "+x", "*** Delete File: missing"], "changes nothing"),
        (["*** Update File: a", "-nothing like it", "+y"], "does not apply"),
    ],
)
def test_operations_that_cannot_apply(body: list[str], message: str) -> None:
    with pytest.raises(PatchError) as info:
        plan(wrap(*body), {"a": "a\n", "b": "b\n", "missing": None})
    assert message in str(info.value)
    assert "Nothing was applied" in str(info.value)


# --- the edit tool of each family -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "patch"),
    [
        ("openai/gpt-5", True),
        ("gpt-5-mini", True),
        ("azure/gpt-5.1-codex", True),
        ("openrouter/openai/gpt-5-codex", True),
        ("openai/gpt-4.1", True),
        ("openai/o3", True),
        ("openai/o4-mini", True),
        ("codex-mini-latest", True),
        ("openai/gpt-4o", False),
        ("openai/gpt-oss-120b", False),
        ("anthropic/claude-sonnet-4-5", False),
        ("gemini/gemini-2.5-pro", False),
        ("ollama_chat/qwen2.5-coder", False),
        ("openai/o1", False),
        ("deepseek/deepseek-chat", False),
    ],
)
def test_families_trained_on_apply_patch(model: str, patch: bool) -> None:
    assert trained_on_apply_patch(model) is patch


def test_one_edit_tool_is_offered_and_the_config_can_choose() -> None:
    def names(**fields: str) -> list[str]:
        config = Config.model_validate(fields)
        return [spec["function"]["name"] for spec in session_specs(None, edit_tool_for(config))]

    assert "apply_patch" in names(model="openai/gpt-5") and "edit_file" not in names(model="openai/gpt-5")
    assert "edit_file" in names(model="anthropic/claude-sonnet-4-5")
    assert "apply_patch" not in names(model="anthropic/claude-sonnet-4-5")
    assert "apply_patch" in names(model="anthropic/claude-sonnet-4-5", edit_tool="apply_patch")
    assert "edit_file" in names(model="openai/gpt-5", edit_tool="edit_file")
    assert names(model="openai/gpt-5")[:3] == ["read_file", "write_file", "apply_patch"], "the same place in the list"
