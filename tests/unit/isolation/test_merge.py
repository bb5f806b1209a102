"""Three-way merges of one file: the union of changes that do not touch, a conflict (with markers, or a side picked)
where both sides changed the same or adjacent lines, and whole-file conflicts for files both sides created or one
deleted while the other changed it."""

from __future__ import annotations

from coder_agent.isolation.merge import merge_file

BASE = "".join(f"{n}\n" for n in range(1, 11))


def changed(text: str, line: int, new: str) -> str:
    lines = text.splitlines(keepends=True)
    lines[line - 1] = new
    return "".join(lines)


def test_changes_apart_merge_into_their_union() -> None:
    ours = changed(BASE, 2, "two\n")
    theirs = changed(changed(BASE, 8, "eight\n"), 10, "ten\neleven\n")
    merged = merge_file(BASE, ours, theirs, label="general-1")
    assert merged.conflicts == 0
    assert merged.result == changed(changed(ours, 8, "eight\n"), 10, "ten\neleven\n")


def test_the_same_lines_changed_differently_are_a_conflict_with_three_ways_out() -> None:
    ours, theirs = changed(BASE, 5, "five (workspace)\n"), changed(BASE, 5, "five (child)\n")
    merged = merge_file(BASE, ours, theirs, label="general-2")
    assert merged.conflicts == 1 and merged.why == "changed in the workspace and by general-2"
    marked = "<<<<<<< workspace\nfive (workspace)\n||||||| before\n5\n=======\nfive (child)\n>>>>>>> general-2\n"
    assert merged.resolved("markers") == changed(BASE, 5, marked)
    assert merged.resolved("ours") == ours and merged.resolved("theirs") == theirs


def test_adjacent_lines_conflict_and_identical_changes_do_not() -> None:
    assert merge_file(BASE, changed(BASE, 4, "x\n"), changed(BASE, 5, "y\n"), label="c").conflicts == 1
    same = changed(BASE, 4, "x\n")
    assert merge_file(BASE, same, same, label="c").noop
    both = merge_file(BASE, changed(same, 9, "z\n"), same, label="c")
    assert both.noop and both.result == changed(same, 9, "z\n"), "the workspace already has the child's change"


def test_a_file_only_the_child_changed_or_created_or_deleted_takes_its_side() -> None:
    assert merge_file(BASE, BASE, "new\n", label="c").result == "new\n"
    assert merge_file(None, None, "created\n", label="c").result == "created\n"
    deleted = merge_file(BASE, BASE, None, label="c")
    assert deleted.result is None and deleted.conflicts == 0 and not deleted.noop
    assert merge_file(BASE, None, BASE, label="c").noop, "the child did not change what the workspace deleted"


def test_whole_file_conflicts() -> None:
    created = merge_file(None, "mine\n", "theirs", label="c")
    assert created.conflicts == 1 and created.why == "created in the workspace and by c"
    assert created.resolved("markers") == "<<<<<<< workspace\nmine\n||||||| before\n=======\ntheirs\n>>>>>>> c\n"
    gone = merge_file(BASE, None, changed(BASE, 1, "one\n"), label="c")
    assert gone.conflicts == 1 and gone.why == "deleted in the workspace, changed by c"
    assert gone.resolved("markers") is None and gone.resolved("theirs") == changed(BASE, 1, "one\n")
    kept = merge_file(BASE, changed(BASE, 1, "one\n"), None, label="c")
    assert kept.why == "changed in the workspace, deleted by c" and kept.resolved("theirs") is None
    assert kept.resolved("markers") == changed(BASE, 1, "one\n"), "a deletion cannot be marked: the file stays"


def test_a_last_line_without_a_newline_is_kept_apart_from_the_markers() -> None:
    base = "a\nb"
    merged = merge_file(base, "a\nb ours", "a\nb theirs", label="c")
    marked = "<<<<<<< workspace\nb ours\n||||||| before\nb\n=======\nb theirs\n>>>>>>> c\n"
    assert merged.resolved("markers") == "a\n" + marked
    assert merge_file("a\nm\nb", "A\nm\nb", "a\nm\nb!", label="c").result == "A\nm\nb!"
