"""What a project or the user adds to the agent with files: custom slash commands and Agent Skills.

* **Commands** are Markdown files: `<name>.md` (a subfolder makes `<folder>:<name>`) whose body is the prompt,
  `$ARGUMENTS` standing for what follows the command (`$1` … `$9` for its words; without either, the arguments
  are added at the end). Optional front matter (`---` YAML `---`) gives `description` and `argument-hint`;
  without a description, the body's first line is one.
* **Skills** are folders with a `SKILL.md` whose front matter has `name` and `description` (the Agent Skills
  format); the body (instructions) and the folder's other files are read only when the skill is used.

Folders, the first to name a command or skill winning: the user's (`commands/` and `skills/` in the coder-agent
config folder, then `~/.claude/commands` and `~/.claude/skills`), then the project's (`.coder-agent/commands`,
`.coder-agent/skills`, `.claude/commands`, `.claude/skills` in the session folder). A project's files are repository
content: they are read as text and nothing more (front matter keys such as `model` or `allowed-tools` are ignored
for every origin), and they are read as a file tool reads: anything of theirs that is a symlink leading out of the
repository is not read at all, nor a file the caller's `refuse` names (a path the sandbox keeps out, a `read:` deny
rule: `TurnContext.reading_refused`), and a file is reached along its checked place without following symlinks
(`nofollow.read_confined`).
What cannot be loaded (broken front matter, a skill without a name, a file too big) is reported as a problem
naming the file and the fix, and a broken command says so when it is used.

Scanning reads a few folders and the head of each file; it is blocking (run it in a worker thread).
"""

from __future__ import annotations

import logging
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from coder_agent import nofollow
from coder_agent.config import PROJECT_CONFIG_DIR, user_config_file

__all__ = [
    "SKILLS_FACT",
    "Catalog",
    "FileCommand",
    "Origin",
    "Skill",
    "expand_arguments",
    "load_catalog",
    "read_body",
    "root_for",
    "skills_text",
    "user_folders",
]

log = logging.getLogger(__name__)

Origin = Literal["user", "project"]
MAX_FILE_BYTES = 256_000
MAX_ENTRIES = 200
"""Commands or skills read from one folder at most."""
MAX_DESCRIPTION = 300
SKILL_FILE = "SKILL.md"
SKILLS_FACT = "Skills"
"""The label of the skills among what the model is told of its environment (the system prompt, its updates)."""
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*(?:\r?\n|\Z)", re.DOTALL | re.MULTILINE)


@dataclass(frozen=True)
class FileCommand:
    name: str
    description: str
    hint: str | None
    path: Path
    origin: Origin
    problem: str | None = None
    """Why it cannot run (broken front matter): said when it is used."""


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    folder: Path
    origin: Origin

    @property
    def path(self) -> Path:
        return self.folder / SKILL_FILE


@dataclass
class Catalog:
    """The commands and skills of a session's folder, and the problems met reading them."""

    commands: list[FileCommand] = field(default_factory=list)
    skills: list[Skill] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def command(self, name: str) -> FileCommand | None:
        return next((c for c in self.commands if c.name == name), None)

    def skill(self, name: str) -> Skill | None:
        return next((s for s in self.skills if s.name == name), None)


def skills_text(skills: list[Skill]) -> str:
    """Skills as the model reads them: one line each, name and description."""
    return "\n".join(f"- {skill.name}: {skill.description}" for skill in skills)


def root_for(origin: Origin, cwd: Path) -> Path | None:
    """The folder a file of this origin must lie in: the session folder for a project's, none for the user's."""
    return cwd if origin == "project" else None


def user_folders() -> list[Path]:
    """The user's folders, in order: the coder-agent config folder, then `~/.claude`."""
    return [user_config_file().parent, Path.home() / ".claude"]


def project_folders(cwd: Path) -> list[Path]:
    return [cwd / PROJECT_CONFIG_DIR, cwd / ".claude"]


def load_catalog(cwd: Path, users: list[Path] | None = None, *, refuse: nofollow.Refuse | None = None) -> Catalog:
    """Every command and skill for a session in `cwd`, the user's first (see the module docstring); `refuse`: why a
    project's file must not be read."""
    catalog = Catalog()
    sources: list[tuple[Path, Origin, Path | None]] = [(folder, "user", None) for folder in users or user_folders()]
    sources += [(folder, "project", cwd) for folder in project_folders(cwd)]
    for folder, origin, root in sources:
        _commands(catalog, folder / "commands", origin, root, refuse)
        _skills(catalog, folder / "skills", origin, root, refuse)
    return catalog


def read_body(path: Path, root: Path | None, *, refuse: nofollow.Refuse | None = None) -> str:
    """The text of a command or skill file without its front matter (`root`: the project folder it must lie in,
    None for the user's own; `refuse`: why a project's file must not be read); OSError or ValueError (saying
    why)."""
    text = _read(path, root, refuse)
    _, body = split_front_matter(text)
    return body.strip()


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """(front matter, body); ValueError naming the problem when the front matter is broken."""
    if not text.startswith("---"):
        return {}, text
    match = _FRONT_MATTER.match(text)
    if match is None:
        raise ValueError("its front matter has no closing `---` line")
    import yaml

    try:
        data = yaml.safe_load(match.group(1))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).split("\n", 1)[0]
        raise ValueError(f"its front matter is not valid YAML{where}: {problem}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ValueError("its front matter is not a list of `key: value` lines")
    return data, text[match.end() :]


def expand_arguments(body: str, arguments: str) -> str:
    """The prompt of a command: `$ARGUMENTS` and `$1`…`$9` replaced; the arguments added at the end when the body
    names none of them."""
    try:
        words = shlex.split(arguments)
    except ValueError:
        words = arguments.split()
    named = "$ARGUMENTS" in body or re.search(r"\$[1-9]", body) is not None
    text = body.replace("$ARGUMENTS", arguments)
    text = re.sub(r"\$([1-9])", lambda m: words[int(m.group(1)) - 1] if int(m.group(1)) <= len(words) else "", text)
    if arguments and not named:
        text += f"\n\nArguments: {arguments}"
    return text


# --- reading ----------------------------------------------------------------------------------------------------------


def _inside(path: Path, root: Path | None) -> bool:
    """Whether `path` really lies inside `root` (symlinks resolved); always true for the user's own folders."""
    if root is None:
        return True
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    return real == real_root or real.startswith(real_root + os.sep)


def _read(path: Path, root: Path | None, refuse: nofollow.Refuse | None) -> str:
    if root is None:  # the user's own: a symlink of theirs (a dotfiles manager's) is followed
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ValueError(f"it is {size:,} bytes, more than {MAX_FILE_BYTES:,}")
        data = path.read_bytes()
    elif not _inside(path, root):
        raise ValueError("it leads out of the repository through a symlink, so it was not read")
    else:
        data = nofollow.read_confined(path, (root,), limit=MAX_FILE_BYTES, refuse=refuse)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("it is not UTF-8 text") from None


def _shown(path: Path) -> str:
    home = Path.home()
    return f"~/{path.relative_to(home).as_posix()}" if path.is_relative_to(home) else str(path)


def _listable(folder: Path, origin: Origin, root: Path | None, catalog: Catalog) -> bool:
    if not folder.is_dir():
        return False
    if not _inside(folder, root):
        catalog.problems.append(f"{_shown(folder)} leads out of the repository through a symlink; it was not read.")
        return False
    return True


def _commands(
    catalog: Catalog, folder: Path, origin: Origin, root: Path | None, refuse: nofollow.Refuse | None
) -> None:
    if not _listable(folder, origin, root, catalog):
        return
    try:
        files = sorted(p for p in folder.rglob("*.md") if p.is_file() or p.is_symlink())
    except OSError as exc:
        catalog.problems.append(f"The commands in {_shown(folder)} could not be listed: {exc.strerror or exc}.")
        return
    for path in files[:MAX_ENTRIES]:
        relative = path.relative_to(folder).with_suffix("")
        name = ":".join(relative.parts)
        if not all(_NAME.match(part) for part in relative.parts):
            catalog.problems.append(f"{_shown(path)}: `{name}` is not a command name (letters, digits, `-`, `_`, `.`).")
            continue
        if catalog.command(name) is not None:
            continue  # the user's, or an earlier folder's, wins
        try:
            text = _read(path, root, refuse)
            front, body = split_front_matter(text)
        except (OSError, ValueError) as exc:
            problem = f"{_shown(path)}: {_reason(exc)}"
            catalog.problems.append(f"The command /{name} cannot be used: {problem}.")
            catalog.commands.append(FileCommand(name, f"(cannot be used: {_reason(exc)})", None, path, origin, problem))
            continue
        description = _text(front.get("description")) or _first_line(body) or f"Run {path.name}"
        hint = _text(front.get("argument-hint") or front.get("argument_hint")) or None
        scope = "project" if origin == "project" else "user"
        catalog.commands.append(FileCommand(name, _short(f"{description} ({scope})"), hint, path, origin))


def _skills(catalog: Catalog, folder: Path, origin: Origin, root: Path | None, refuse: nofollow.Refuse | None) -> None:
    if not _listable(folder, origin, root, catalog):
        return
    try:
        entries = sorted(p for p in folder.iterdir() if p.is_dir() or p.is_symlink())
    except OSError as exc:
        catalog.problems.append(f"The skills in {_shown(folder)} could not be listed: {exc.strerror or exc}.")
        return
    for entry in entries[:MAX_ENTRIES]:
        path = entry / SKILL_FILE
        if not _inside(entry, root):
            catalog.problems.append(
                f"The skill folder {_shown(entry)} leads out of the repository through a symlink; it was not read."
            )
            continue
        if not path.is_file():
            continue
        try:
            front, _ = split_front_matter(_read(path, root, refuse))
        except (OSError, ValueError) as exc:
            catalog.problems.append(f"The skill in {_shown(entry)} cannot be used: {_shown(path)}: {_reason(exc)}.")
            continue
        name, description = _text(front.get("name")), _text(front.get("description"))
        if not name or not description or not _NAME.match(name):
            catalog.problems.append(
                f"The skill in {_shown(entry)} cannot be used: the front matter of {SKILL_FILE} needs a `name` "
                "(letters, digits, `-`, `_`) and a `description` saying when to use it."
            )
            continue
        if catalog.skill(name) is None:
            catalog.skills.append(Skill(name, _short(description), entry, origin))


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return f"it could not be read ({exc.strerror or exc})"
    return str(exc)


def _text(value: Any) -> str:
    if value is None or isinstance(value, dict | list):
        return ""
    return " ".join(str(value).split())


def _first_line(body: str) -> str:
    for line in body.splitlines():
        text = line.strip().lstrip("#").strip()
        if text:
            return text
    return ""


def _short(text: str) -> str:
    return text if len(text) <= MAX_DESCRIPTION else text[: MAX_DESCRIPTION - 1].rstrip() + "…"
