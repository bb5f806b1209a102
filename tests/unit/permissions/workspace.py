"""The workspace the permission tables are written against: a real folder in `tmp_path` with a folder outside it,
an additional root, symlinks and a hard link leading out; a table row's verdict."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from coder_agent.permissions import Action, PermissionPolicy, Rule, Verdict, analyse, resolve
from coder_agent.permissions.network import judge
from coder_agent.permissions.paths import command_writes


@dataclass
class Workspace:
    root: Path
    work: Path
    out: Path
    extra: Path

    def fill(self, text: str) -> str:
        return text.format(out=self.out, extra=self.extra, work=self.work)

    def policy(
        self,
        mode: str = "default",
        allow: tuple[str, ...] = (),
        deny: tuple[str, ...] = (),
        session: tuple[str, ...] = (),
    ) -> PermissionPolicy:
        return PermissionPolicy(
            self.work,
            mode,  # type: ignore[arg-type]
            [Rule.parse(self.fill(r)) for r in allow],
            [Rule.parse(self.fill(r)) for r in deny],
            [Rule.parse(self.fill(r)) for r in session],
        )

    def decide(self, row: Row, *, fill: bool = False) -> Verdict:
        """A table row's verdict: (name, mode, allow, deny, session rules, kind, subject, expected)."""
        _, mode, allow, deny, session, kind, subject, _ = row
        action = self.action(kind, self.fill(subject) if fill else subject)
        return self.policy(mode, allow, deny, session).decide(action)

    def action(self, kind: str, subject: str) -> Action:
        roots = [self.work, self.extra]
        if kind == "execute":
            line = analyse(subject)
            return Action("execute", command=line, writes=command_writes(line, roots))
        if kind == "fetch":
            url, _, addresses = subject.partition(" ")
            return Action("fetch", target=judge(url, tuple(addresses.split(","))))
        if kind.startswith("mcp-"):
            return Action(kind.removeprefix("mcp-"), tool=subject)  # type: ignore[arg-type]
        return Action(kind, places=(resolve(self.fill(subject), roots),))  # type: ignore[arg-type]


def make_workspace(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    root = tmp_path_factory.mktemp("policy")
    work, out, extra = root / "work", root / "outside", root / "extra"
    for folder in (work / "src" / "deep", out, extra):
        folder.mkdir(parents=True)
    (work / "src" / "a.py").write_text("a\n")
    (out / "secret.txt").write_text("secret\n")
    (work / "link_out").symlink_to(out)
    (work / "src" / "link_out").symlink_to(out)
    (work / "link_file").symlink_to(out / "secret.txt")
    (work / "dangling").symlink_to(out / "new.txt")
    (work / "link_in").symlink_to(work / "src")
    (work / "hard").hardlink_to(out / "secret.txt")
    return Workspace(root, work, out, extra)


Row = tuple[str, str, tuple[str, ...], tuple[str, ...], tuple[str, ...], str, str, str]
"""(id, mode, config allow, config deny, session allow, kind, subject, expected decision)."""


def rows(*table: Row) -> list[object]:
    return [pytest.param(row, id=row[0]) for row in table]
