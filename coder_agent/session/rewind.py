"""Rewinding a session in place: back to a cursor (`session.cursors`), the files, the conversation or both —
`_session/rewind`, `/rewind` and `coder-agent run --rewind N` all come here.

Files: every file the undo checkpoints after the cursor changed is put back as it was before the first of them
(`Checkpoints.plan_restore`): rewritten through the bridge (the editor's `fs/write_text_file`, so it shows; the
local disk where the client has no fs), recreated if a turn deleted it, deleted if a turn created it. Each path is
held against the session's folders again and written at its real place without following a symlink (a command may
have swapped one in since); one outside them, one a symlink now leads into `.git/` or `.coder-agent/`, or one with
another hard link, is refused and reported (`restore_place`, which `/undo` uses too). A file that
changed since the agent last wrote it (the user, a command) is a conflict: the rewind does nothing and asks
(`on_conflict`: "ask"), unless told to `overwrite` it or to `keep` it as it is and restore the rest.

Conversation: the history, the replay log, the marks and the cursors are cut where the cursor stands; the system
prompt and what was spent stay. With `dry_run` nothing changes: the answer says what would.

Nothing is lost: the session as it was (history, log, marks, cursors, checkpoints) becomes the `stash`, the files'
contents before the rewind become an undo checkpoint of their own (so `/undo` takes the files back), and a new
stash cursor is announced; rewinding to that cursor undoes the rewind (and makes the next stash: rewinds go back
and forth). A files-only rewind leaves the later cursors' files where the rewind put them. The caller runs a rewind
between turns (see `Session.between_turns`).
"""

from __future__ import annotations

import difflib
import logging
import os
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio

from coder_agent import nofollow
from coder_agent.checkpoints import CheckpointError, FileRestore
from coder_agent.errors import CallFailed, InvalidParams
from coder_agent.permissions.paths import resolve
from coder_agent.permissions.policy import PROTECTED_FOLDERS
from coder_agent.protocol.schema import CursorAnchor, CursorUpdate
from coder_agent.session.bridge import BridgeError
from coder_agent.session.cursors import Cursor, after_last_shown
from coder_agent.session.session import Session

log = logging.getLogger(__name__)

Mode = Literal["files", "conversation", "both"]
OnConflict = Literal["ask", "overwrite", "keep"]


class RewindFailed(CallFailed):
    """A rewind could not be planned or carried out (a snapshot is gone, a write failed); the message says why."""


@dataclass
class FileStep:
    """One file of a rewind."""

    path: str
    text: str | None
    """What it becomes (None: deleted)."""
    current: str | None
    """What it is now (None: it does not exist)."""
    changed_outside: bool
    refused: str | None = None
    real: Path | None = None
    """Where it really lies (symlinks resolved), checked against the session's folders."""

    @property
    def action(self) -> str:
        if self.text is None:
            return "delete"
        return "recreate" if self.current is None else "restore"

    def wire(self) -> dict[str, Any]:
        old, new = (self.current or "").splitlines(), (self.text or "").splitlines()
        added = removed = 0
        for line in difflib.unified_diff(old, new, lineterm="", n=0):
            if line.startswith("+") and not line.startswith("+++"):
                added += 1
            elif line.startswith("-") and not line.startswith("---"):
                removed += 1
        shown: dict[str, Any] = {"path": self.path, "action": self.action, "insertions": added, "deletions": removed}
        if self.changed_outside:
            shown["changedOutside"] = True
        if self.refused is not None:
            shown["refused"] = self.refused
        return shown


@dataclass
class Rewound:
    """What a rewind did (or, dry or asking, would do)."""

    mode: Mode
    rewound: bool = False
    files: list[FileStep] = field(default_factory=list)
    messages_dropped: int = 0
    cursor: Cursor | None = None
    """The stash cursor announced (going back to it undoes this rewind)."""
    asking: bool = False
    """Files changed outside the agent: nothing was done; say `overwrite` or `keep`."""

    @property
    def conflicts(self) -> list[str]:
        return [f.path for f in self.files if f.changed_outside and f.refused is None]

    def wire(self) -> dict[str, Any]:
        answer: dict[str, Any] = {"rewound": self.rewound}
        if self.mode != "conversation":
            steps = [f.wire() for f in self.files]
            answer["files"] = {
                "canRewind": all(f.refused is None for f in self.files),
                "changes": steps,
                "insertions": sum(s["insertions"] for s in steps),
                "deletions": sum(s["deletions"] for s in steps),
                "conflicts": self.conflicts,
            }
        if self.mode != "files":
            answer["conversation"] = {"rewound": self.rewound, "messagesDropped": self.messages_dropped}
        if self.cursor is not None:
            answer["cursorId"] = self.cursor.id
        if self.asking:
            answer["question"] = (
                "Files changed since the agent's last edit of them: rewind again with onConflict `overwrite` to "
                "replace them too, or `keep` to leave them as they are and restore the rest."
            )
        return answer


def find_cursor(session: Session, cursor_id: str | None, message_id: str | None) -> Cursor:
    """The cursor named, or the one before the user message named; InvalidParams naming the field otherwise."""
    cursors = session.state.conversation.cursors
    if cursor_id is not None:
        cursor = cursors.get(cursor_id)
        if cursor is None:
            raise InvalidParams(
                f"Invalid params: cursorId: {cursor_id!r} is not a cursor of this session (rewound past, compacted "
                "or cleared since, or never announced)",
                {"cursorId": cursor_id, "reason": "unknown_cursor"},
            )
        return cursor
    if message_id is None:
        raise InvalidParams("Invalid params: give cursorId (or messageId, a user message)", {"reason": "no_point"})
    for cursor in cursors.values():
        if cursor.message_id == message_id and cursor.position == "before":
            return cursor
    raise InvalidParams(
        f"Invalid params: messageId: {message_id!r} is not a user message this session can go back to before",
        {"messageId": message_id, "reason": "unknown_message_id"},
    )


def rewind_points(session: Session) -> list[dict[str, Any]]:
    """The user messages the session can go back to before, oldest first: `_session/rewind_points`' answer."""
    texts: dict[str, str] = {}
    for event in session.state.replay.events:
        if event.get("sessionUpdate") == "user_message_chunk" and isinstance(event.get("messageId"), str):
            content = event.get("content") or {}
            texts[event["messageId"]] = texts.get(event["messageId"], "") + str(content.get("text") or "")
    return [
        {"index": index, "cursorId": c.id, "messageId": c.message_id, "text": texts.get(c.message_id or "", "")}
        for index, c in enumerate(turn_cursors(session))
    ]


PICKER_LENGTH = 10


async def rewind_command(session: Session, arguments: str) -> str:
    """`/rewind [N] [files|conversation] [overwrite|keep]`: go back to before the Nth prompt counted back from this
    one (files and conversation unless one is named); with no N, the last prompts to pick from. Runs in the turn
    of its own prompt (which the rewind leaves out)."""
    words = arguments.split()
    points = turn_cursors(session)[:-1]  # the last is this command's own prompt
    mode: Mode = "files" if "files" in words else "conversation" if "conversation" in words else "both"
    on_conflict: OnConflict = "overwrite" if "overwrite" in words else "keep" if "keep" in words else "ask"
    number = next((int(w) for w in words if w.isdigit()), None)
    if number is None or not 1 <= number <= len(points):
        if not points:
            return "Nothing to rewind: no earlier prompt in this conversation (since it was last compacted).\n"
        texts = {p["cursorId"]: p["text"] for p in rewind_points(session)}
        listed = [
            f"{n}. {_first_line(texts.get(cursor.id, ''))}"
            for n, cursor in enumerate(reversed(points[-PICKER_LENGTH:]), start=1)
        ]
        return (
            "Go back to before which prompt? `/rewind N` puts the files and the conversation back as they were "
            "before prompt N (add `files` or `conversation` for one of them):\n\n" + "\n".join(listed) + "\n"
        )
    try:
        outcome = await rewind(session, points[-number], mode, on_conflict=on_conflict)
    except RewindFailed as exc:
        return f"Rewind failed: {exc}\n"
    if outcome.asking:
        changed = ", ".join(f"`{p}`" for p in outcome.conflicts)
        return (
            f"Nothing was rewound: {changed} changed since the agent's last edit. `/rewind {number} overwrite` "
            f"replaces those changes too; `/rewind {number} keep` leaves those files as they are.\n"
        )
    lines = [f"- {f.action} `{f.path}`" + (f" (not: {f.refused})" if f.refused else "") for f in outcome.files]
    dropped = f" {outcome.messages_dropped} message(s) of the conversation left out." if mode != "files" else ""
    return (
        f"Rewound to before prompt {number}.{dropped}\n" + "\n".join(lines) + "\n\n"
        "`/undo` puts the files back as they were before this rewind.\n"
    )


def _first_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= 80 else line[:79] + "…"


def turn_cursors(session: Session) -> list[Cursor]:
    """The cursors before each user message, oldest first (the points `/rewind` and `--rewind N` count)."""
    return [c for c in session.state.conversation.cursors.values() if c.position == "before" and not c.stash]


async def rewind(
    session: Session, cursor: Cursor, mode: Mode, *, dry_run: bool = False, on_conflict: OnConflict = "ask"
) -> Rewound:
    """Go back to `cursor` (see the module doc). RewindFailed if a snapshot cannot be read or a write fails (what
    was done before it stays done, and the stash can still undo it)."""
    state = session.state
    previous = state.stash
    outcome = Rewound(mode)
    if mode != "conversation":
        outcome.files = await _plan_files(session, cursor)
    if mode != "files":
        outcome.messages_dropped = _dropped(session, cursor, previous)
    if dry_run:
        return outcome
    if outcome.conflicts and on_conflict == "ask":
        outcome.asking = True
        return outcome
    checkpoints = state.checkpoints
    stash = state.stash_present()
    history = list(checkpoints.history)
    new_history = previous.checkpoints if cursor.stash and previous is not None else history[: cursor.checkpoints]
    await checkpoints.keep([*stash.checkpoints, *(previous.checkpoints if previous is not None else [])])
    undo_from = len(new_history) if mode != "conversation" else len(history)
    if mode != "conversation":
        checkpoints.restore(new_history)
        await _restore(session, [f for f in outcome.files if f.refused is None], skip_changed=on_conflict == "keep")
        state.checkpoints_undone()
    if mode != "files":
        state.go_back_to(cursor, previous)
    await checkpoints.keep(stash.checkpoints)
    outcome.rewound = True
    message_id, tool_call_id = after_last_shown(state.replay.events)
    outcome.cursor = state.cursor_here("after", message_id, tool_call_id, stash=True, checkpoints=undo_from)
    await announce(session, outcome.cursor)
    session.save_soon()
    log.info("session %s: rewound (%s) to %s", session.id, mode, cursor.id)
    return outcome


async def announce(session: Session, cursor: Cursor) -> None:
    """Send (and log for replays) a cursor's `cursor_update`."""
    anchor = CursorAnchor(position=cursor.position, message_id=cursor.message_id, tool_call_id=cursor.tool_call_id)
    update = CursorUpdate(cursor_id=cursor.id, anchor=anchor, capabilities=cursor.capabilities)
    await session.services.bridge.update(update)


async def announce_after_turn(session: Session) -> None:
    """A turn ended: a cursor after the last thing it showed (a failure to tell is logged: the turn is over)."""
    if session.closed:
        return
    state = session.state
    message_id, tool_call_id = after_last_shown(state.replay.events)
    try:
        await announce(session, state.cursor_here("after", message_id, tool_call_id))
    except Exception:
        log.warning("session %s: the cursor after the turn could not be announced", session.id, exc_info=True)


def _dropped(session: Session, cursor: Cursor, previous: Any) -> int:
    now = len(session.state.conversation.messages)
    if cursor.stash:
        return max(now - len(previous.messages), 0) if previous is not None else 0
    return max(now - cursor.messages, 0)


def current_reader(session: Session) -> Callable[[Path], Awaitable[str | None]]:
    """Reads a file as it is now, through the bridge (the editor's buffer where it has one); None if it is gone."""
    bridge = session.services.bridge

    async def read_current(path: Path) -> str | None:
        try:
            return await bridge.read_text_file(path) if await anyio.Path(path).exists() else None
        except BridgeError:
            return None

    return read_current


async def _plan_files(session: Session, cursor: Cursor) -> list[FileStep]:
    state = session.state
    undone = state.checkpoints.history[cursor.checkpoints :]
    read_current = current_reader(session)
    try:
        restores = await state.checkpoints.plan_restore(undone, read_current)
    except CheckpointError as exc:
        raise RewindFailed(f"The files cannot be restored: {exc}") from None
    steps = []
    for restore in restores:
        steps.append(await _step(session, restore, await read_current(Path(restore.path))))
    return [s for s in steps if s.current != s.text]


async def _step(session: Session, restore: FileRestore, current: str | None) -> FileStep:
    step = FileStep(restore.path, restore.text, current, restore.changed_since)
    step.real, step.refused = await anyio.to_thread.run_sync(restore_place, Path(restore.path), session.state.roots)
    return step


def restore_place(path: Path, roots: Sequence[Path]) -> tuple[Path, str | None]:
    """Where putting back the file a tool wrote at `path` writes now (its real place), and why it must not (None: it
    may): a command may have swapped a folder on the way for a symlink since, to a place outside the session's
    folders (`~/.bashrc`) or into `.git/` or `.coder-agent/` (`.git/config`), whose files the tool itself could
    not have written unasked. `/undo` and rewinds both hold each file to this before writing anything. Blocking."""
    place = resolve(path, roots)
    if not place.inside:
        return place.real, "it lies outside the session's folders now (a symlink on its path?)"
    if place.links > 1:
        return place.real, "it has other hard links: writing it would change a file elsewhere too"
    named = set(Path(os.path.abspath(path)).parts)
    entered = [part for part in place.relative.split("/") if part in PROTECTED_FOLDERS and part not in named]
    if entered:
        return place.real, f"it leads into `{entered[0]}` now (a symlink on its path?), whose files decide what runs"
    return place.real, None


async def _restore(session: Session, steps: list[FileStep], *, skip_changed: bool) -> None:
    """Write the steps, recording what each file held before as an undo checkpoint of its own."""
    checkpoints, bridge, files = session.state.checkpoints, session.services.bridge, session.services.files
    steps = [s for s in steps if not (skip_changed and s.changed_outside)]
    if not steps:
        return
    checkpoints.begin_turn(f"rewind_{uuid.uuid4().hex[:12]}")
    try:
        for step in steps:
            path, real = Path(step.path), step.real
            assert real is not None
            try:
                await checkpoints.before_change(path, step.current)
            except CheckpointError as exc:
                raise RewindFailed(f"Could not keep {step.path} as it was before the rewind: {exc}") from None
            files.forget(path)
            try:
                if step.text is None:
                    await anyio.to_thread.run_sync(nofollow.unlink, real)
                else:
                    await bridge.write_text_file(path, step.text, real=real)
                    checkpoints.after_change(path, step.text)
            except FileNotFoundError:
                continue
            except (BridgeError, OSError) as exc:
                raise RewindFailed(f"Rewinding stopped at {step.path}: {exc}") from None
    finally:
        checkpoints.end_turn()
