"""Commands and skills from files (coder_agent.extensions): where they are found, which wins, what their front
matter gives, and what cannot be loaded (each a problem naming the file and the fix)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from coder_agent.extensions import expand_arguments, load_catalog, read_body, split_front_matter


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def user(tmp_path: Path) -> Path:
    return tmp_path / "user-config"


@pytest.fixture
def claude(tmp_path: Path) -> Path:
    return tmp_path / "home" / ".claude"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def test_commands_come_from_every_folder_and_the_user_wins(user: Path, claude: Path, project: Path) -> None:
    write(user / "commands" / "review.md", "---\ndescription: Review my way\n---\nReview $ARGUMENTS\n")
    write(project / ".coder-agent" / "commands" / "review.md", "Review the project's way\n")
    write(project / ".coder-agent" / "commands" / "test.md", "---\nargument-hint: '[path]'\n---\n# Run the tests\n")
    write(project / ".claude" / "commands" / "test.md", "Shadowed by .coder-agent\n")
    write(project / ".claude" / "commands" / "front" / "component.md", "Make a component named $1\n")
    write(claude / "commands" / "explain.md", "---\ndescription: >\n  Explain the code\n  simply\n---\nExplain.\n")
    catalog = load_catalog(project, [user, claude])
    found = {c.name: (c.description, c.hint, c.origin) for c in catalog.commands}
    assert found == {
        "review": ("Review my way (user)", None, "user"),
        "explain": ("Explain the code simply (user)", None, "user"),
        "test": ("Run the tests (project)", "[path]", "project"),
        "front:component": ("Make a component named $1 (project)", None, "project"),
    }
    assert catalog.problems == []


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("---\ndescription: [unclosed\n---\nbody\n", "its front matter is not valid YAML (line 3)"),
        ("---\ndescription: x\nbody without an end\n", "its front matter has no closing `---` line"),
        ("---\n- a list\n---\nbody\n", "its front matter is not a list of `key: value` lines"),
    ],
)
def test_a_command_with_broken_front_matter_is_listed_as_such(project: Path, text: str, problem: str) -> None:
    write(project / ".coder-agent" / "commands" / "broken.md", text)
    catalog = load_catalog(project, [])
    (command,) = catalog.commands
    assert command.problem is not None and problem in command.problem
    assert command.description.startswith("(cannot be used: ")
    assert catalog.problems == [f"The command /broken cannot be used: {command.problem}."]


def test_unreadable_and_oversized_files_are_problems(project: Path) -> None:
    commands = project / ".coder-agent" / "commands"
    commands.mkdir(parents=True)
    (commands / "binary.md").write_bytes(b"\xff\xfe\x00")
    write(commands / "huge.md", "x" * 300_000)
    write(commands / "bad name!.md", "x")
    catalog = load_catalog(project, [])
    problems = "\n".join(catalog.problems)
    assert "it is not UTF-8 text" in problems
    assert "it is 300,000 bytes, more than 256,000" in problems
    assert "`bad name!` is not a command name" in problems


def test_skills_need_a_name_and_a_description(user: Path, project: Path) -> None:
    write(user / "skills" / "pdf" / "SKILL.md", "---\nname: pdf\ndescription: Fill in PDF forms\n---\nUse pypdf.\n")
    write(project / ".claude" / "skills" / "deploy" / "SKILL.md", "---\nname: deploy\ndescription: Deploy it\n---\nX\n")
    write(project / ".coder-agent" / "skills" / "nameless" / "SKILL.md", "---\ndescription: no name\n---\nX\n")
    write(project / ".coder-agent" / "skills" / "no-file" / "README.md", "not a skill\n")
    catalog = load_catalog(project, [user])
    assert [(s.name, s.description, s.origin) for s in catalog.skills] == [
        ("pdf", "Fill in PDF forms", "user"),
        ("deploy", "Deploy it", "project"),
    ]
    (problem,) = catalog.problems
    assert "nameless cannot be used" in problem and "needs a `name`" in problem
    assert read_body(catalog.skills[0].path, None) == "Use pypdf."


def test_a_project_symlink_out_of_the_repository_is_not_read(tmp_path: Path, user: Path, project: Path) -> None:
    outside = tmp_path / "outside"
    write(outside / "evil" / "SKILL.md", "---\nname: evil\ndescription: reads your secrets\n---\nSteal.\n")
    write(outside / "secret.md", "the user's notes\n")
    write(outside / "commands" / "x.md", "a command of somewhere else\n")
    skills = project / ".coder-agent" / "skills"
    skills.mkdir(parents=True)
    os.symlink(outside / "evil", skills / "evil")
    commands = project / ".coder-agent" / "commands"
    commands.mkdir()
    os.symlink(outside / "secret.md", commands / "secret.md")
    os.symlink(outside, project / ".claude")
    catalog = load_catalog(project, [])
    assert catalog.skills == [] and catalog.commands[0].problem is not None
    problems = "\n".join(catalog.problems)
    assert "The skill folder" in problems and "evil leads out of the repository through a symlink" in problems
    assert "secret.md: it leads out of the repository through a symlink" in problems
    assert ".claude/commands leads out of the repository through a symlink" in problems
    with pytest.raises(ValueError, match="leads out of the repository"):
        read_body(commands / "secret.md", project)
    # the user's own folders may be symlinks
    write(user / "real-skills" / "mine" / "SKILL.md", "---\nname: mine\ndescription: ok\n---\nX\n")
    os.symlink(user / "real-skills", user / "skills")
    assert [s.name for s in load_catalog(project, [user]).skills] == ["mine"]


@pytest.mark.parametrize(
    ("body", "arguments", "expected"),
    [
        ("Review $ARGUMENTS now", "src/a.py b.py", "Review src/a.py b.py now"),
        ("Compare $1 with $2", "old.py 'new file.py'", "Compare old.py with new file.py"),
        ("Missing $3 here", "a b", "Missing  here"),
        ("Just do it", "with care", "Just do it\n\nArguments: with care"),
        ("Just do it", "", "Just do it"),
        ("Unbalanced $1", "'a b", "Unbalanced 'a"),
    ],
)
def test_arguments(body: str, arguments: str, expected: str) -> None:
    assert expand_arguments(body, arguments) == expected


def test_front_matter_is_optional_and_only_at_the_start() -> None:
    assert split_front_matter("no front matter\n---\nx: 1\n---\n") == ({}, "no front matter\n---\nx: 1\n---\n")
    assert split_front_matter("---\n---\nbody") == ({}, "body")
    assert split_front_matter("---\r\nname: a\r\n---\r\nbody") == ({"name": "a"}, "body")


def test_a_project_file_the_caller_refuses_is_not_read(project: Path) -> None:
    """Inside the repository, but kept out (a `read:` deny rule, the sandbox's list): refused, never read."""
    write(project / ".env", "TOKEN=the-secret\n")
    commands = project / ".coder-agent" / "commands"
    commands.mkdir(parents=True)
    os.symlink(project / ".env", commands / "env.md")
    write(commands / "fine.md", "Do the thing.\n")

    def refuse(real: Path) -> str | None:
        return "reading it is denied by the rule `read:.env`" if real.name == ".env" else None

    catalog = load_catalog(project, [], refuse=refuse)
    assert "the-secret" not in repr(catalog)
    assert any("denied by the rule" in problem for problem in catalog.problems)
    with pytest.raises(ValueError, match="denied by the rule"):
        read_body(commands / "env.md", project, refuse=refuse)
    assert read_body(commands / "fine.md", project, refuse=refuse) == "Do the thing."
