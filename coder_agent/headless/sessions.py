"""`coder-agent sessions`, and picking a session for `run --resume` with no id: the stored sessions, newest first.

The sessions are the editors' and the runs' alike (one store). `sessions` lists those of the current folder (every
folder's with `--all`): id, title, when it was last used and its model; `--json` prints the same as one JSON array
for scripts. On a terminal, `run --resume` without an id shows the folder's latest sessions numbered and takes the
number typed; an id may also be given by its start, as long as only one session starts so.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console
from rich.text import Text

from coder_agent.errors import ResourceNotFound
from coder_agent.headless.terminal_input import discard_typed_ahead, read_line
from coder_agent.store import SessionStore, SessionSummary, parse_time
from coder_agent.visible import visible

PAGE = 200
PICKED_AT_MOST = 20
"""Sessions offered by the picker."""


def stored(store: SessionStore, cwd: Path | None) -> list[SessionSummary]:
    """Every stored session of `cwd` (None: of every folder), newest first."""
    found: list[SessionSummary] = []
    cursor: str | None = None
    while True:
        page, cursor = store.list(str(cwd) if cwd is not None else None, cursor, PAGE)
        found += page
        if cursor is None:
            return found


def main(cwd: Path, *, every_folder: bool, as_json: bool, store: SessionStore | None = None) -> int:
    """Print the sessions; exit status 0 (none is not an error: it says so)."""
    sessions = stored(store or SessionStore(), None if every_folder else cwd)
    if as_json:
        rows = [
            {"session_id": s.session_id, "title": s.title, "updated_at": s.updated_at, "model": s.model, "cwd": s.cwd}
            for s in sessions
        ]
        print(json.dumps(rows, ensure_ascii=False, indent=2))
        return 0
    console = Console(highlight=False, soft_wrap=True)
    if not sessions:
        where = "anywhere" if every_folder else f"in {cwd} (`coder-agent sessions --all` lists every folder's)"
        Console(stderr=True, highlight=False, soft_wrap=True).print(Text(f"No sessions {where}.", style="dim"))
        return 0
    for line in table(sessions, with_folder=every_folder):
        console.print(line)
    return 0


def table(sessions: Sequence[SessionSummary], *, with_folder: bool, numbered: bool = False) -> list[Text]:
    """One line per session: its id (or number), when it was last used, its model and title."""
    now = datetime.now(UTC)
    ages = [age(parse_time(s.updated_at), now) for s in sessions]
    models = [visible(s.model or "-") for s in sessions]
    age_width = max(len(a) for a in ages)
    model_width = max(len(m) for m in models)
    lines = []
    for n, (session, when, model) in enumerate(zip(sessions, ages, models, strict=True), 1):
        first = f"[{n}]".rjust(len(f"[{len(sessions)}]")) if numbered else session.session_id
        title = visible(session.title or "(untitled)")
        line = Text.assemble(
            (first, "bold" if numbered else "cyan"),
            "  ",
            (when.ljust(age_width), "dim"),
            "  ",
            (model.ljust(model_width), "dim"),
            "  ",
            title,
        )
        if with_folder:
            line.append(f"  {visible(session.cwd)}", style="dim")
        lines.append(line)
    return lines


def age(when: datetime, now: datetime) -> str:
    """How long ago, in the words a person scans a list with."""
    seconds = (now - when).total_seconds()
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h ago"
    if seconds < 7 * 86400:
        days = int(seconds // 86400)
        return f"{days} day{'' if days == 1 else 's'} ago"
    return when.astimezone().strftime("%Y-%m-%d")


def resolve(store: SessionStore, given: str) -> str:
    """The id of the one session whose id is `given` or starts with it; ResourceNotFound naming the fix otherwise."""
    everything = stored(store, None)
    if any(s.session_id == given for s in everything):
        return given
    matching = [s.session_id for s in everything if s.session_id.startswith(given)]
    if len(matching) == 1:
        return matching[0]
    if matching:
        raise ResourceNotFound(f"{len(matching)} sessions start with {given!r}: give more of the id.")
    raise ResourceNotFound(f"No session {given!r}: `coder-agent sessions` lists this folder's (--all: every folder's).")


async def pick(store: SessionStore, cwd: Path, console: Console, terminal_fd: int = 0) -> str:
    """The id of the session the person picks among the folder's latest; ResourceNotFound if none or none picked."""
    sessions = stored(store, cwd)[:PICKED_AT_MOST]
    if not sessions:
        raise ResourceNotFound(f"No session to resume in {cwd}; start one without --resume.")
    console.print(Text(f"Sessions in {visible(str(cwd))}, latest first:", style="bold"))
    for line in table(sessions, with_folder=False, numbered=True):
        console.print(line)
    discard_typed_ahead(terminal_fd)
    while True:
        console.print(Text(f"Resume which? 1-{len(sessions)} (Enter: none): ", style="bold"), end="")
        typed = await read_line(terminal_fd)
        text = (typed or "").strip()
        if not text:
            if typed is None:
                console.print()
            raise ResourceNotFound("No session was picked.")
        if text.isdigit() and 1 <= int(text) <= len(sessions):
            return sessions[int(text) - 1].session_id
        console.print(Text(f"Type a number from 1 to {len(sessions)}, or press Enter to stop.", style="dim"))
