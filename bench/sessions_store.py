"""Micro-benchmark of coder_agent.store.SessionStore alone (no agent, no event loop).

In a temp directory (or `--dir`, which must be empty or absent) it saves `--sessions` small sessions (default 1,000,
spread over 7 working directories) and one big one: `--turns` turns (default 200) of realistic history, where each
turn is a user prompt, a few tool calls (reads with file contents, edits with diffs, a shell command) and the
assistant's streamed answer, both as the model's messages and as the ACP `session/update` events the editor was shown.

Then it times, as medians over `--runs` runs:

  list, first page        `list()` on a fresh SessionStore (nothing parsed yet, as at agent start-up), and again on
                          the same store (summaries already parsed, only the directory is re-read and stat'ed)
  list, all pages         every page with the default limit of 50, walking the cursors
  list, one cwd           the first page filtered by one working directory
  load, big session       `load()` of the big session, and its file size
  save, big session       `save()` of the big session (write + fsync + rename, and its summary)

Goal: a cold first page well under 300 ms with 1,000 sessions (target < 50 ms); the exit status is 0 when it is
under 300 ms, 1 otherwise.

Usage (from the repository root):

  uv run python bench/sessions_store.py
  uv run python bench/sessions_store.py --sessions 5000 --turns 400 --runs 9

Stdlib + the coder_agent package only. Prints its report to stdout (this is not the agent).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from coder_agent.store import SessionRecord, SessionStore

GOAL_MS = 300.0
TARGET_MS = 50.0

PROSE = (
    "the parser now keeps track of nested scopes so that each closing brace pops the right frame and the error "
    "message points at the unmatched token instead of the end of the file which was confusing when the input "
    "was long; tests cover empty input unicode identifiers and deeply nested blocks"
)
WORDS = PROSE.split()


def words(rng: random.Random, count: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(count))


def source_file(rng: random.Random, lines: int) -> str:
    body = []
    for n in range(lines):
        indent = "    " * rng.randint(0, 3)
        body.append(f"{indent}value_{n} = compute({rng.randint(0, 999)}, {words(rng, 3)!r})")
    return "\n".join(body) + "\n"


def text_events(text: str, kind: str, message_id: str) -> list[dict[str, Any]]:
    """A streamed message as the editor saw it: one chunk per few words."""
    pieces = text.split(" ")
    return [
        {"sessionUpdate": kind, "messageId": message_id, "content": {"type": "text", "text": " ".join(chunk) + " "}}
        for chunk in (pieces[i : i + 6] for i in range(0, len(pieces), 6))
    ]


def big_session(session_id: str, turns: int, seed: int = 7) -> SessionRecord:
    rng = random.Random(seed)
    messages: list[dict[str, Any]] = [{"role": "system", "content": words(rng, 400)}]
    events: list[dict[str, Any]] = []
    call = 0
    for turn in range(turns):
        prompt = f"Turn {turn}: " + words(rng, rng.randint(15, 80))
        messages.append({"role": "user", "content": prompt})
        events.append({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": prompt}})
        for _ in range(rng.randint(1, 4)):
            call += 1
            call_id = f"call_{call:05d}"
            path = f"src/module_{rng.randint(0, 40)}.py"
            kind = rng.choice(["read", "edit", "edit", "execute"])
            if kind == "read":
                name, arguments, result = "read_file", {"path": path}, source_file(rng, rng.randint(40, 120))
                content: list[dict[str, Any]] = [{"type": "content", "content": {"type": "text", "text": result}}]
            elif kind == "edit":
                old = source_file(rng, rng.randint(5, 30))
                new = old.replace("compute", "compute_checked", 2) + "    # handled\n"
                name, arguments, result = "edit_file", {"path": path, "old_text": old, "new_text": new}, "Edited."
                content = [{"type": "diff", "path": f"/home/dev/project/{path}", "oldText": old, "newText": new}]
            else:
                output = "\n".join(f"tests/test_{n}.py::test_case PASSED" for n in range(rng.randint(5, 60)))
                name, arguments, result = "run_command", {"command": "uv run pytest -q"}, output
                content = [{"type": "content", "content": {"type": "text", "text": output}}]
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": json.dumps(arguments)},
                        }
                    ],
                }
            )
            messages.append({"role": "tool", "tool_call_id": call_id, "content": result})
            events.append(
                {
                    "sessionUpdate": "tool_call",
                    "toolCallId": call_id,
                    "title": f"{name} {path}",
                    "kind": kind,
                    "status": "pending",
                    "rawInput": arguments,
                    "locations": [{"path": f"/home/dev/project/{path}"}],
                }
            )
            events.append({"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "in_progress"})
            events.append(
                {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "completed", "content": content}
            )
        answer = words(rng, rng.randint(40, 250))
        messages.append({"role": "assistant", "content": answer})
        events.extend(text_events(answer, "agent_message_chunk", f"msg_{turn}"))
        events.append({"sessionUpdate": "usage_update", "used": 1000 * turn, "size": 200_000})
    return SessionRecord(
        session_id=session_id,
        cwd="/home/dev/project",
        title="A long refactoring session",
        created_at="2026-11-30T08:00:00.000Z",
        updated_at="2026-11-30T12:00:00.000Z",
        model="openai/gpt-5",
        messages=messages,
        events=events,
        cost=4.2,
        context_tokens=150_000,
        allow_rules=["Bash(uv run pytest:*)"],
        checkpoints=[{"turn": n, "files": {}} for n in range(turns)],
    )


def small_session(n: int) -> SessionRecord:
    minute, second = divmod(n, 60)
    stamp = f"2026-11-{1 + (minute // 60) % 28:02d}T{(minute // 60) % 24:02d}:{minute % 60:02d}:{second:02d}.000Z"
    return SessionRecord(
        session_id=f"sess_{n:08x}",
        cwd=f"/home/dev/project_{n % 7}",
        title=f"Session {n}: fix the thing",
        created_at=stamp,
        updated_at=stamp,
        messages=[{"role": "user", "content": "fix the thing"}, {"role": "assistant", "content": "Done."}],
        events=[{"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Done."}}],
    )


def median_ms(runs: int, action: Callable[[], object]) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def all_pages(store: SessionStore) -> int:
    count, cursor = 0, None
    while True:
        page, cursor = store.list(cursor=cursor)
        count += len(page)
        if cursor is None:
            return count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=1000, help="small sessions to store (default 1000)")
    parser.add_argument("--turns", type=int, default=200, help="turns in the big session (default 200)")
    parser.add_argument("--runs", type=int, default=7, help="timed runs per measure (default 7)")
    parser.add_argument("--dir", type=Path, help="where to store (default: a new temp directory, removed after)")
    options = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="coder-agent-store-bench-") as temp:
        root = options.dir if options.dir is not None else Path(temp) / "sessions"
        if root.exists() and any(root.iterdir()):
            parser.error(f"{root} is not empty")
        store = SessionStore(root)

        print(f"python {sys.version.split()[0]}   root {root}   runs {options.runs} (medians)")
        started = time.perf_counter()
        for n in range(options.sessions):
            store.save(small_session(n))
        elapsed = time.perf_counter() - started
        print(
            f"saved {options.sessions} small sessions in {elapsed:.2f} s "
            f"({elapsed / options.sessions * 1000:.2f} ms each)"
        )

        big = big_session("sess_big", options.turns)
        store.save(big)
        total = options.sessions + 1
        size = (root / "sess_big.json").stat().st_size
        print(f"big session: {options.turns} turns, {len(big.messages)} messages, {len(big.events)} events")
        print()

        rows: list[tuple[str, float]] = []
        cold_first = median_ms(options.runs, lambda: SessionStore(root).list())
        rows.append((f"list, first page, fresh store ({total} sessions)", cold_first))
        rows.append(("list, first page, same store", median_ms(options.runs, store.list)))
        assert all_pages(store) == total
        pages = -(-total // 50)
        rows.append(
            (f"list, all {pages} pages, fresh store", median_ms(options.runs, lambda: all_pages(SessionStore(root))))
        )
        rows.append((f"list, all {pages} pages, same store", median_ms(options.runs, lambda: all_pages(store))))
        rows.append(
            (
                "list, first page of one cwd, same store",
                median_ms(options.runs, lambda: store.list(cwd="/home/dev/project_3")),
            )
        )
        loaded = store.load("sess_big")
        assert loaded == big
        rows.append(
            (f"load, big session ({size / 1e6:.2f} MB)", median_ms(options.runs, lambda: store.load("sess_big")))
        )
        rows.append(("save, big session (with fsync)", median_ms(options.runs, lambda: store.save(big))))
        rows.append(("save, small session (with fsync)", median_ms(options.runs, lambda: store.save(small_session(0)))))

        width = max(len(label) for label, _ in rows)
        for label, ms in rows:
            print(f"{label:<{width}}  {ms:8.2f} ms")
        print()
        print(f"big session file: {size:,} bytes")
        verdict = "PASS" if cold_first < GOAL_MS else "FAIL"
        target = "met" if cold_first < TARGET_MS else "missed"
        print(
            f"goal: cold first page < {GOAL_MS:.0f} ms: {verdict} "
            f"({cold_first:.1f} ms; target {TARGET_MS:.0f} ms {target})"
        )
        return 0 if cold_first < GOAL_MS else 1


if __name__ == "__main__":
    sys.exit(main())
