"""Isolated sub-agents: a `general` child that works in a place of its own — a git worktree of the session's repository
on a scratch branch, or a copy of a folder that is not one (`isolation.workplace`) — and whose changes come back to
its parent as one merge (`agent.merging`).

`Isolation` is the turn's: at most `subagents.max_isolated` children are isolated at once (the others wait), and their
merges are asked one at a time, each against the session's files as they are then (so a second child's change of
lines an earlier merge changed is a conflict, found before the user is asked). A child's place (`ChildPlace`)
differs from its parent's context in where it works and with what: its working directory is its copy of the
session's folder, and that copy is its only root; its files are read and written on the disk (not in the editor,
which knows nothing of the copy) and snapshotted for nothing the parent's `/undo` sees; its commands and jobs run
there, inside walls built from that root alone (the parent's sandbox, with the copy as the only writable folder,
its own temp folder, and no write to the repository's shared git folder); its edits are checked by language servers
of its own, rooted at its copy and started there when it first edits a file they check (the editor's know nothing of
the copy), which end with it; it has no MCP servers (they work in the parent's folder). The place is removed when
the child's changes are applied or discarded, however the turn ends; `places.sweep` removes those of an agent that
died.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import anyio

from coder_agent.agent import merging
from coder_agent.agent.language_servers import language_servers
from coder_agent.checkpoints import Checkpoints
from coder_agent.checkpoints.blobs import FileBlobStore
from coder_agent.isolation import places
from coder_agent.isolation.git import GitFailed
from coder_agent.isolation.workplace import IsolationFailed, Workplace, make, sweep_left_behind
from coder_agent.lsp.pool import LanguageServers
from coder_agent.sandbox.command import CommandSandbox
from coder_agent.sandbox.gitindex import GitlinkCache
from coder_agent.session.bridge import ClientBridge
from coder_agent.session.delegation import Delegated, ParentCall, ShowProgress
from coder_agent.session.local_bridge import LocalBridge
from coder_agent.session.turn_context import TurnContext
from coder_agent.tools.calls import text_content

log = logging.getLogger(__name__)

Say = Callable[[str], Awaitable[None]]
"""Show a note in the delegating call (what the child is waiting for)."""


@dataclass(frozen=True)
class ChildPlace:
    """Where a sub-agent works and with what (see the module docstring)."""

    cwd: Path
    roots: tuple[Path, ...]
    sandbox: CommandSandbox | None
    checkpoints: Checkpoints
    lsp: LanguageServers | None
    """The language servers that check its edits."""
    files: ClientBridge | None = None
    """Reads and writes its files (None: the parent's bridge, the editor)."""
    isolated: str | None = None
    """For its system prompt: where it works, and what becomes of its changes (None: it shares its parent's folder)."""

    @classmethod
    def shared(cls, parent: TurnContext) -> ChildPlace:
        """A child's place in its parent's folders (an `explore` child, or a `general` one not isolated)."""
        return cls(parent.cwd, parent.roots, parent.sandbox, parent.checkpoints, parent.lsp)


RunChild = Callable[[ChildPlace], Awaitable[Delegated]]


class Isolation:
    """The isolated children of one model turn (see the module docstring)."""

    def __init__(self, parent: TurnContext) -> None:
        self.parent = parent
        self.settings = parent.config.subagents
        self._slots = anyio.Semaphore(self.settings.max_isolated)
        self._merging = anyio.Lock()

    async def run(
        self, name: str, run_child: RunChild, say: Say, progress: ShowProgress, call: ParentCall | None
    ) -> Delegated:
        """Make the child's place, run it there, offer its changes to the parent, and remove the place."""
        if self._slots.value == 0:
            await say(f"waiting: {self.settings.max_isolated} isolated sub-agents run at once")
        async with self._slots:
            await say("making its own copy of the project")
            try:
                workplace = await anyio.to_thread.run_sync(self._make, name)
            except IsolationFailed as exc:
                why = f"The sub-agent could not get a copy of its own to work in: {exc}. Nothing was done."
                return Delegated(why + " Run it without `isolate`, or do the task yourself.", True, [text_content(why)])
            place: ChildPlace | None = None
            try:
                await say("")
                place = self._place(workplace)
                result = await run_child(place)
                return await self._merge(name, workplace, result, progress, call)
            finally:
                with anyio.CancelScope(shield=True):
                    if place is not None and place.lsp is not None:
                        await place.lsp.aclose()
                    await anyio.to_thread.run_sync(workplace.remove)

    def _make(self, name: str) -> Workplace:
        made = make(places.owner(), self.parent.cwd, name=name, cap=self.settings.isolation_max_mb << 20)
        log.info("sub-agent %s works in %s (%s)", name, made.tree, made.how)
        return made

    def _place(self, workplace: Workplace) -> ChildPlace:
        cwd = workplace.cwd
        parent_sandbox = self.parent.sandbox
        sandbox = child_sandbox(parent_sandbox, cwd, workplace.temp) if parent_sandbox is not None else None
        checkpoints = Checkpoints(cwd, store=FileBlobStore(workplace.folder / "undo"))
        checkpoints.begin_turn("isolated")  # its writes are snapshotted where no undo of the parent's looks
        note = (
            f"You work in a private copy of the project ({workplace.how}), not in the user's folder: {cwd} is your "
            "working directory and the only folder you may change. When you finish, your changes there are shown to "
            "the user as one diff to approve; nothing reaches their folder before that. Leave your changes in the "
            "files (do not commit: the repository's history is not yours to change)."
        )
        settings, parent = self.parent.config.lsp, self.parent
        lsp = language_servers(settings, (cwd,), parent.tasks, sandbox, parent.bridge) if settings.enabled else None
        return ChildPlace(cwd, (cwd,), sandbox, checkpoints, lsp, LocalBridge(), note)

    async def _merge(
        self, name: str, workplace: Workplace, result: Delegated, progress: ShowProgress, call: ParentCall | None
    ) -> Delegated:
        if result.state == "cancelled":
            return _told(result, "It was stopped, so none of its changes were applied (its copy was removed).")
        try:
            changes = await anyio.to_thread.run_sync(workplace.changes)
        except (GitFailed, OSError) as exc:
            return _told(result, f"What it changed could not be read ({exc}), so nothing was applied.")
        if not changes:
            return _told(result, "It changed no file.")
        if call is None:  # a delegate called without its call (not the `task` tool): nowhere to ask
            return _told(result, "Its changes were discarded: there is no call to ask about them in.")
        async with self._merging:
            return await merging.offer(self.parent, call, changes, name=name, ended=result, show=progress)


def child_sandbox(sandbox: CommandSandbox, cwd: Path, temp: Path) -> CommandSandbox:
    """The parent's sandbox around a child's copy: the same walls but for the folders it may write (its copy and its
    own temp folder; no linked worktree's git folder, so not the repository's shared one: its objects, refs and the
    parent's index), the same launcher, proxy, network and process limit."""
    walls = dataclasses.replace(
        sandbox.walls,
        roots=(Path(os.path.realpath(cwd)),),
        temp=Path(os.path.realpath(temp)),
        linked=(),
        gitlinks=GitlinkCache(),
    )
    return sandbox.sharing(walls, temp)


def _told(result: Delegated, note: str) -> Delegated:
    """The child's result with a note on what became of its changes, for the model and the user."""
    return dataclasses.replace(
        result, answer=f"{result.answer}\n\n{note}", shown=[*result.shown, text_content(f"_{note}_")]
    )


async def sweep(cwd: Path) -> tuple[str, str] | None:
    """Remove the worktrees, branches and copies of isolated children that agents which stopped left behind (see
    `places.sweep`): a notice for a session in `cwd` when some were made from its folder, else None."""
    try:
        swept = await anyio.to_thread.run_sync(sweep_left_behind)
    except Exception:  # a sweep never keeps a session from opening
        log.warning("sweeping isolated sub-agents' places failed", exc_info=True)
        return None
    real = await anyio.Path(cwd).resolve()
    here = [item for item in swept if Path(real).is_relative_to(item.source) or Path(item.source).is_relative_to(real)]
    for item in swept:
        log.info("removed %s of %s, left by an agent that stopped", item.what, item.source)
    if not here:
        return None
    what = "; ".join(item.what for item in here)
    return (
        "Sub-agents' copies left behind were removed",
        f"An agent that stopped left isolated sub-agents' copies of this folder: {what}. They were removed; what "
        "was in them had not been applied.",
    )
