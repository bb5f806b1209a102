"""Permission policy: session modes, allow/deny rules, the session's remembered choices, and the options offered.

A tool call is described as an `Action` (its kind, the paths it touches, the command it runs, whether it
leaves the workspace). `PermissionPolicy.decide` answers allow, ask or deny:

1. a deny rule (config, or "always reject" this session) → deny;
2. read-only mode and anything but reading, searching and fetching → deny;
3. an allow rule (config, or "always allow" this session) → allow;
4. anything outside the workspace (cwd and additionalDirectories, symlinks resolved) → ask, in every mode;
5. otherwise the mode decides: reads and searches never ask; file edits ask in `default`; commands and
   other tools (an MCP server's, for one) ask unless `full-auto`. An MCP tool's annotations give its kind:
   `readOnlyHint` makes it a read, `destructiveHint` a delete.

Rules are strings, the same in the config file and in memory: `edit:src/**` (a tool kind and a path
glob, relative to cwd or absolute) or `execute:git status` (a command prefix). A command with shell
operators (`;`, `&&`, `|`, `$(`, redirections …) never matches an allow rule, so `git status; rm -rf x`
is not allowed by `execute:git status`.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Literal

from coder_agent.protocol.content import ToolKind
from coder_agent.protocol.schema import (
    PermissionOption,
    SelectOption,
    SessionConfigOption,
    SessionMode,
    SessionModeState,
)

Decision = Literal["allow", "ask", "deny"]

MODES: dict[str, SessionMode] = {
    mode.id: mode
    for mode in (
        SessionMode(id="read-only", name="Read only", description="Reads and searches; no edits, no commands."),
        SessionMode(id="default", name="Ask", description="Asks before every edit and every command."),
        SessionMode(id="accept-edits", name="Accept edits", description="Edits without asking; asks before commands."),
        SessionMode(
            id="full-auto",
            name="Full auto",
            description="Nothing asks, except going outside the workspace.",
        ),
    )
}
DEFAULT_MODE = "default"

QUIET_KINDS = frozenset({"read", "search", "think"})
READ_ONLY_KINDS = QUIET_KINDS | {"fetch"}
PATH_KINDS = frozenset({"read", "edit", "delete", "move", "search"})
SHELL_OPERATORS = re.compile(r"[;&|`<>\n]|\$\(")
MULTI_WORD_COMMANDS = frozenset(
    {"git", "npm", "pnpm", "yarn", "bun", "cargo", "go", "uv", "pip", "poetry", "docker", "kubectl", "make", "dotnet"}
)


def mode_state(current: str) -> SessionModeState:
    return SessionModeState(current_mode_id=current, available_modes=list(MODES.values()))


def mode_config_option(current: str) -> SessionConfigOption:
    return SessionConfigOption(
        id="mode",
        name="Mode",
        description="How much the agent may do without asking.",
        category="mode",
        current_value=current,
        options=[SelectOption(value=m.id, name=m.name, description=m.description) for m in MODES.values()],
    )


@dataclass(frozen=True)
class Action:
    """What a tool call is about to do, for the policy."""

    kind: ToolKind
    paths: tuple[Path, ...] = ()
    command: str | None = None
    outside: bool = False
    tool: str | None = None
    """For tools of MCP servers: the model-facing tool name, which rules match."""


@dataclass(frozen=True)
class Rule:
    """`kind:pattern`: a path glob for path kinds, a command prefix for `execute`, anything for others."""

    kind: str
    pattern: str

    @classmethod
    def parse(cls, text: str) -> Rule:
        kind, sep, pattern = text.partition(":")
        if not sep or not kind.strip():
            raise ValueError(f"permission rule {text!r} should look like 'edit:src/**' or 'execute:git status'")
        return cls(kind.strip(), pattern.strip())

    def __str__(self) -> str:
        return f"{self.kind}:{self.pattern}"

    def matches(self, action: Action, cwd: Path, *, for_allow: bool) -> bool:
        if self.kind not in ("*", action.kind):
            return False
        if action.kind == "execute":
            command = (action.command or "").strip()
            if for_allow and SHELL_OPERATORS.search(command):
                return False
            return command == self.pattern or command.startswith(self.pattern + " ") or self.pattern in ("", "*")
        if action.tool is not None:
            return self.pattern in ("", "*") or _glob_regex(self.pattern).fullmatch(action.tool) is not None
        if action.kind in PATH_KINDS:
            return bool(action.paths) and all(_path_matches(self.pattern, path, cwd) for path in action.paths)
        return self.pattern in ("", "*", "**")


@dataclass
class PermissionPolicy:
    """Decides what a session's tool calls may do; remembers "always" answers for the session."""

    cwd: Path
    mode: str = DEFAULT_MODE
    allow: list[Rule] = field(default_factory=list)
    deny: list[Rule] = field(default_factory=list)
    session_allow: list[Rule] = field(default_factory=list)
    session_deny: list[Rule] = field(default_factory=list)

    def decide(self, action: Action) -> tuple[Decision, str]:
        """The decision and a reason a user or model can read."""
        for rule in (*self.deny, *self.session_deny):
            if rule.matches(action, self.cwd, for_allow=False):
                return "deny", f"denied by the rule `{rule}`"
        if self.mode == "read-only" and action.kind not in READ_ONLY_KINDS:
            return "deny", "the session is in read-only mode; switch the mode to allow changes and commands"
        for rule in (*self.allow, *self.session_allow):
            if rule.matches(action, self.cwd, for_allow=True):
                return "allow", f"allowed by the rule `{rule}`"
        if action.outside:
            return "ask", "it reaches outside the workspace"
        if action.kind in QUIET_KINDS:
            return "allow", "reading is always allowed inside the workspace"
        if action.kind == "edit" and action.tool is None and self.mode != DEFAULT_MODE:
            return "allow", f"{self.mode} mode"
        if self.mode == "full-auto":
            return "allow", "full-auto mode"
        return "ask", f"{action.kind} asks in this mode"

    def scope(self, action: Action) -> Rule:
        """The rule an "always" answer remembers: a command prefix, or the folder of the paths."""
        if action.kind == "execute":
            return Rule("execute", command_prefix(action.command or ""))
        if action.tool is not None:
            return Rule(action.kind, action.tool)
        if action.kind in PATH_KINDS and action.paths:
            return Rule(action.kind, _folder_glob(action.paths[0], self.cwd))
        return Rule(action.kind, "*")

    def options(self, action: Action) -> list[PermissionOption]:
        rule = self.scope(action)
        what = _describe_scope(rule)
        return [
            PermissionOption(option_id="allow_once", name="Allow", kind="allow_once"),
            PermissionOption(option_id="allow_always", name=f"Always allow {what}", kind="allow_always"),
            PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"),
            PermissionOption(option_id="reject_always", name=f"Always reject {what}", kind="reject_always"),
        ]

    def remember(self, action: Action, allow: bool) -> Rule:
        rule = self.scope(action)
        (self.session_allow if allow else self.session_deny).append(rule)
        return rule


def command_prefix(command: str) -> str:
    """`git status --short` → `git status`; `pytest -q` → `pytest`."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    if not words:
        return ""
    if len(words) > 1 and Path(words[0]).name in MULTI_WORD_COMMANDS and not words[1].startswith("-"):
        return f"{words[0]} {words[1]}"
    return words[0]


def resolve_path(raw: str, cwd: Path) -> Path:
    """An absolute path: as given, or relative to cwd; `~` expanded; `..` folded (symlinks kept)."""
    path = Path(os.path.expanduser(raw))
    if not path.is_absolute():
        path = cwd / path
    return Path(os.path.normpath(path))


def is_inside(path: Path, roots: list[Path]) -> bool:
    """Whether `path`, with symlinks resolved, lies under one of `roots` (also resolved)."""
    real = Path(os.path.realpath(path))
    return any(real.is_relative_to(os.path.realpath(root)) for root in roots)


def _folder_glob(path: Path, cwd: Path) -> str:
    folder = path.parent
    if folder.is_relative_to(cwd):
        relative = folder.relative_to(cwd).as_posix()
        return "**" if relative == "." else f"{relative}/**"
    return f"{folder.as_posix()}/**"


def _describe_scope(rule: Rule) -> str:
    if rule.kind == "execute":
        return f"`{rule.pattern}` commands"
    if rule.pattern.startswith("mcp__"):
        return f"`{rule.pattern}` calls"
    if rule.kind in PATH_KINDS:
        where = "the workspace" if rule.pattern == "**" else f"`{rule.pattern.removesuffix('/**')}/`"
        noun = {"read": "reads", "edit": "edits", "search": "searches", "delete": "deletes", "move": "moves"}[rule.kind]
        return f"{noun} in {where}"
    return f"{rule.kind} calls"


def _path_matches(pattern: str, path: Path, cwd: Path) -> bool:
    if pattern in ("", "*", "**"):
        return True
    target = (
        path.relative_to(cwd).as_posix()
        if path.is_relative_to(cwd) and not pattern.startswith("/")
        else path.as_posix()
    )
    return _glob_regex(pattern).fullmatch(target) is not None


@cache
def _glob_regex(pattern: str) -> re.Pattern[str]:
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))
