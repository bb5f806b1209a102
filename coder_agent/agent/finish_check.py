"""The check before finishing: one follow-up for a turn that changed files and is ending without checking them.

In a session that works on its own (`auto`, `full-auto`, and `coder-agent run` in a mode that edits, never `default`,
`plan` or `read-only`), a turn whose model changed files and then answers without having run, since its last
change, a command that checks them (the project's tests, a build, a type checker or linter) gets one more request:
the follow-up in `prompts/check_before_finishing.md`, asking it to verify or to say why it cannot. At most once per
turn; the user sees a short note; the config's `check_before_finishing` turns it off. A sub-agent's turn is left
alone (its parent's turn checks the work).

"A command that checks" is recognised from the command lines the model ran (`run_command`), each simple command the
shell parser finds (`permissions.shell`, which sees through `uv run`, `timeout`, `env`, `cd … &&`) held against
`CHECKING_COMMANDS`, a small table of word prefixes. A check that ran counts whatever its result (a failing test run
is a check the model read); a command that was refused counts too (running it again would be refused again).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from coder_agent import prompts
from coder_agent.model.base import ToolCallRequest
from coder_agent.permissions import is_autonomous
from coder_agent.permissions.shell import analyse
from coder_agent.session.turn_context import TurnContext
from coder_agent.tools.calls import ToolResult, ToolSet

NOTE = "_The files changed and nothing has checked them since: asking the model to verify before it finishes._"
EDITING_MODES = frozenset({"accept-edits", "auto", "full-auto"})
"""The modes where an unattended run edits without asking (so a check may be owed)."""

CHECKING_COMMANDS: tuple[tuple[str, ...], ...] = tuple(
    tuple(row.split())
    for row in (
        # tests
        "pytest", "py.test", "python -m pytest", "python -m unittest", "tox", "nox", "hatch test",
        "npm test", "npm run test", "npm t", "yarn test", "pnpm test", "bun test", "deno test", "jest", "vitest",
        "mocha", "npx jest", "npx vitest", "go test", "cargo test", "cargo nextest", "mvn test", "mvn verify",
        "gradle test", "gradle check", "./gradlew test", "./gradlew check", "ctest", "dotnet test", "mix test",
        "rspec", "bundle exec rspec", "rake test", "phpunit", "swift test", "bazel test", "zig build test",
        # builds
        "cargo build", "cargo check", "go build", "go vet", "npm run build", "yarn build", "pnpm build",
        "tsc", "npx tsc", "mvn compile", "mvn package", "gradle build", "./gradlew build", "dotnet build",
        "cmake --build", "ninja", "bazel build", "swift build", "zig build", "python -m compileall",
        "python -m py_compile",
        # checkers
        "mypy", "pyright", "ruff check", "flake8", "pylint", "eslint", "npx eslint", "npm run lint", "cargo clippy",
        "golangci-lint", "staticcheck", "shellcheck", "pre-commit run", "rubocop", "biome check", "deno check",
    )
)  # fmt: skip
"""Word prefixes of commands that check a change (the program as its file name: `.venv/bin/pytest` is `pytest`)."""
MAKE_TARGETS = frozenset({"all", "build", "check", "test", "tests", "lint", "typecheck"})
"""`make` checks when run bare or with one of these targets first (`make clean` or `make install` checks nothing)."""


def checks(command_line: str) -> bool:
    """Whether `command_line` runs a command that checks a change (see `CHECKING_COMMANDS`)."""
    return any(_is_check(command.argv) for command in analyse(command_line).commands)


def _is_check(argv: Sequence[str]) -> bool:
    if not argv:
        return False
    words = [_program(argv[0]), *argv[1:]]
    if words[0] == "make":
        targets = [word for word in words[1:] if not word.startswith("-") and "=" not in word]
        return not targets or targets[0] in MAKE_TARGETS
    return any(tuple(words[: len(row)]) == row for row in CHECKING_COMMANDS)


def _program(word: str) -> str:
    """`.venv/bin/pytest` → `pytest`, `python3.12` → `python` (`./gradlew` stays as written)."""
    name = word if word.startswith("./") else word.rpartition("/")[2]
    return re.sub(r"^python3(\.\d+)?$", "python", name)


class FinishCheck:
    """What one turn did that the check depends on: files changed since the last check, and the follow-up given."""

    def __init__(self, ctx: TurnContext, tools: ToolSet) -> None:
        self.ctx = ctx
        self.tools = tools
        self.unchecked = False
        """Files changed since the last command that checks."""
        self.asked = False

    def saw(self, call: ToolCallRequest, result: ToolResult) -> None:
        """Count a call the turn ran: an edit that went through, or a command line that checks."""
        if call.name == "run_command":
            if checks(_command(call.arguments)):
                self.unchecked = False
        elif self.tools.changes_files(call.name) and not result.failed:
            self.unchecked = True

    def follow_up(self) -> str | None:
        """The follow-up for a turn that is about to end, once; None when none is owed."""
        if self.asked or not self.unchecked or not self._applies():
            return None
        self.asked = True
        return prompts.load("check_before_finishing.md")

    def _applies(self) -> bool:
        ctx = self.ctx
        if not ctx.config.check_before_finishing or ctx.parent_id is not None:
            return False
        mode = ctx.policy.mode
        return is_autonomous(mode) or (ctx.unattended and mode in EDITING_MODES)


def _command(arguments: str) -> str:
    try:
        parsed = json.loads(arguments or "{}")
    except ValueError:
        return ""
    command = parsed.get("command") if isinstance(parsed, dict) else None
    return command if isinstance(command, str) else ""
