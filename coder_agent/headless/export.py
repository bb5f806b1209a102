"""`coder-agent export SESSION`: a stored session written out, as ATIF, as JSON or as Markdown.

* `atif`: the Agent Trajectory Interchange Format that Harbor and its leaderboards read (a schema of pydantic
  models in the `harbor` package, which coder-agent does not depend on: the shape is written here and checked
  against Harbor's own models in the Harbor integration's tests). The steps come from what the model was told
  and answered (the stored messages): the system prompt, each prompt, each model call with its text, reasoning
  and tool calls, and the results the model read back as the call's observation. A compacted session's earlier
  steps are gone from the model's history; `notes` says so, and the Markdown keeps what the person saw.
* `json`: the stored record as it is (the undo snapshots left out: they are the store's, not the session's).
* `markdown`: the conversation as the editor showed it (the replay log): prompts, answers, thoughts, plans and
  every tool call with its input, status and output or diff, for a person to read or attach to a bug report.

Everything the model or a tool wrote is data here: Markdown fences grow longer than any run of backticks inside
them, characters that could hide text are made visible, and key values of this environment are redacted from
every format (the store redacted them when it saved; this is for keys added since), as are the MCP servers' env
and header entries that hold a secret (`secrets.without_secret_entries`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal, TextIO

from coder_agent import __version__
from coder_agent.agent.system_prompt import MODE as MODE_FACT
from coder_agent.errors import ResourceNotFound
from coder_agent.headless.sessions import resolve
from coder_agent.permissions import MODES
from coder_agent.secrets import redact, redact_data, without_secret_entries
from coder_agent.session.replay import SESSION_KEY, SUBAGENT
from coder_agent.store import SessionRecord, SessionStore, StoreError
from coder_agent.tools.file_view import unfenced
from coder_agent.visible import visible

Format = Literal["atif", "json", "markdown"]
FORMATS: tuple[Format, ...] = ("atif", "json", "markdown")
ATIF_VERSION = "ATIF-v1.7"
AGENT_NAME = "coder-agent"
_IMAGE = "[image]"
PRIVATE = 0o600
"""The mode of a file `-o` writes: the owner's alone (a session's prompts, code and command output are private)."""


def main(session: str, fmt: Format, output: Path | None, *, store: SessionStore | None = None) -> int:
    """Write the session `session` (an id or the start of one) to `output` (None: stdout); the exit status."""
    sessions = store or SessionStore()
    try:
        record = sessions.load(resolve(sessions, session))
    except (ResourceNotFound, StoreError) as error:
        print(f"coder-agent export: {error}", file=sys.stderr)
        return 1
    text = render(record, fmt)
    if output is None:
        _write(sys.stdout, text)
        return 0
    from coder_agent.atomic import write_atomic

    try:
        write_atomic(output, text.encode("utf-8"), mode=PRIVATE)  # a session holds what the model read: private
    except OSError as error:
        print(f"coder-agent export: cannot write {output}: {error.strerror or error}", file=sys.stderr)
        return 1
    return 0


def _write(stream: TextIO, text: str) -> None:
    try:
        stream.write(text)
        stream.flush()
    except BrokenPipeError:  # `| head`: the reader has what it wanted
        pass


def render(record: SessionRecord, fmt: Format) -> str:
    """The session in `fmt`, as text ending with a newline."""
    if fmt == "markdown":
        return redact("".join(markdown(record)))
    if fmt == "atif":
        data = trajectory(record)
    else:  # a session stored before its servers' tokens were left out still has them: not exported
        data = record.model_dump(mode="json", exclude={"checkpoints"})
        data["mcp_servers"] = [without_secret_entries(server) for server in data.get("mcp_servers", [])]
    return json.dumps(redact_data(data), ensure_ascii=False, indent=2) + "\n"


# ---- ATIF -------------------------------------------------------------------------------------------------


def trajectory(record: SessionRecord) -> dict[str, Any]:
    """The session as an ATIF trajectory (a JSON object), built from the model's history."""
    steps: list[dict[str, Any]] = []
    for message in record.messages:
        role = message.get("role")
        if role == "system":
            steps.append({"source": "system", "message": _text(message.get("content"))})
        elif role == "user":
            steps.append({"source": "user", "message": _text(message.get("content"))})
        elif role == "assistant":
            steps.append(_agent_step(message, record))
        elif role == "tool":
            _observe(steps, message)
    if not steps:  # ATIF needs one step; a session that never reached its model has only its title
        steps.append({"source": "user", "message": record.title or ""})
    for number, step in enumerate(steps, 1):
        step["step_id"] = number
    compactions = sum(1 for e in record.events if e.get("sessionUpdate") == "compaction_update")
    result: dict[str, Any] = {
        "schema_version": ATIF_VERSION,
        "session_id": record.session_id,
        "agent": {
            "name": AGENT_NAME,
            "version": __version__,
            "model_name": record.model,
            "extra": {
                "mode": worked_in(record) or record.mode,
                "session_mode": record.mode,
                "reasoning_effort": record.reasoning_effort,
            },
        },
        "steps": [{key: value for key, value in step.items() if value is not None} for step in steps],
        "final_metrics": {**_token_totals(record), "total_cost_usd": record.cost if record.cost > 0 else None},
        "extra": {
            "title": record.title,
            "cwd": record.cwd,
            "created_at": record.created_at,
            "updated_at": record.updated_at,
            "context_tokens": record.context_tokens,
        },
    }
    result["final_metrics"] = {k: v for k, v in result["final_metrics"].items() if v is not None}
    result["final_metrics"]["total_steps"] = len(steps)
    if compactions:
        result["notes"] = (
            f"The conversation was compacted {compactions} time(s): the steps before the last compaction are "
            "summarised in the user step that opens the history, as the model saw them."
        )
    return result


def _token_totals(record: SessionRecord) -> dict[str, int | None]:
    """The session's tokens as ATIF's final metrics name them (none for a session stored before they were kept)."""
    tokens = record.tokens
    if not tokens.get("requests"):
        return {}
    return {
        "total_prompt_tokens": tokens.get("input", 0),
        "total_completion_tokens": tokens.get("output", 0),
        "total_cached_tokens": tokens.get("cached") or None,
    }


def _agent_step(message: dict[str, Any], record: SessionRecord) -> dict[str, Any]:
    calls: list[dict[str, Any]] = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        calls.append(
            {
                "tool_call_id": str(call.get("id") or f"call_{len(calls) + 1}"),
                "function_name": str(function.get("name") or "unknown"),
                "arguments": _arguments(function.get("arguments")),
            }
        )
    return {
        "source": "agent",
        "model_name": record.model,
        "message": _text(message.get("content")),
        "reasoning_content": _reasoning(message),
        "tool_calls": calls or None,
        "llm_call_count": 1,
    }


def _reasoning(message: dict[str, Any]) -> str | None:
    """What the model thought, where the history keeps it: the thinking blocks of the families that must be sent
    them back (Anthropic's), else `reasoning_content`. Other providers' thoughts were shown, not kept."""
    blocks = message.get("thinking_blocks")
    if isinstance(blocks, list):
        text = "\n".join(str(b.get("thinking")) for b in blocks if isinstance(b, dict) and b.get("thinking"))
        return text or None
    reasoning = message.get("reasoning_content")
    return reasoning if isinstance(reasoning, str) and reasoning else None


def _arguments(raw: Any) -> dict[str, Any]:
    """A call's arguments as an object: parsed from the model's JSON, or kept whole under `raw` when it is not."""
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw or "{}")
        except ValueError:
            return {"raw": raw}
        return parsed if isinstance(parsed, dict) else {"raw": raw}
    return {} if raw is None else {"raw": raw}


def _observe(steps: list[dict[str, Any]], message: dict[str, Any]) -> None:
    """A tool result becomes part of the observation of the agent step whose call it answers."""
    call_id = message.get("tool_call_id")
    agent = next((s for s in reversed(steps) if s["source"] == "agent"), None)
    if agent is None:  # a result with no call before it (a damaged history): kept as what the model was told
        steps.append({"source": "user", "message": _text(message.get("content"))})
        return
    ids = {call["tool_call_id"] for call in agent.get("tool_calls") or []}
    result: dict[str, Any] = {"content": _text(message.get("content"))}
    if call_id in ids:
        result["source_call_id"] = call_id
    elif call_id is not None:
        result["extra"] = {"tool_call_id": str(call_id)}
    agent.setdefault("observation", {"results": []})["results"].append(result)


def _text(content: Any) -> str:
    """A message's content as text: its text parts joined, an image as a placeholder."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_part_text(part) for part in content)
    return "" if content is None else str(content)


def _part_text(part: Any) -> str:
    if isinstance(part, dict):
        if part.get("type") == "text":
            return str(part.get("text") or "")
        if part.get("type") in ("image_url", "image"):
            return _IMAGE
        return json.dumps(part, ensure_ascii=False)
    return str(part)


# ---- Markdown ---------------------------------------------------------------------------------------------

_HEADINGS = {"user_message_chunk": "## You", "agent_message_chunk": "## Agent"}
_STATUS = {"completed": "✓", "failed": "✗", "in_progress": "…", "pending": "…"}


def markdown(record: SessionRecord) -> Iterator[str]:
    """The conversation as the person saw it, in Markdown."""
    yield f"# {_line(record.title or 'Untitled session')}\n\n"
    facts = [
        ("Session", f"`{record.session_id}`"),
        ("Folder", _line(record.cwd)),
        ("Model", _line(record.model or "(default)")),
        ("Mode", _modes(record)),
        ("Started", record.created_at),
        ("Last used", record.updated_at),
    ]
    if record.cost > 0:
        facts.append(("Cost", f"${record.cost:.4f}"))
    yield "".join(f"- **{name}:** {value}\n" for name, value in facts) + "\n"
    previous: str | None = None
    for event in record.events:
        kind = event.get("sessionUpdate")
        if event.get(SESSION_KEY) is not None or kind == SUBAGENT:
            continue  # a sub-agent's own session: its parent's `task` call shows its steps and answer
        if kind == "agent_thought_chunk" and previous != "agent_message_chunk":
            yield f"{_HEADINGS['agent_message_chunk']}\n\n"  # the agent's thinking opens its part, not the prompt's
            previous = "agent_message_chunk"
        if kind in _HEADINGS:
            if kind != previous:
                yield f"{_HEADINGS[kind]}\n\n"
            yield _prose(_content_text(event.get("content"))) + "\n\n"
        elif kind == "agent_thought_chunk":
            thought = _content_text(event.get("content"))
            yield "".join(f"> {line}\n" if line else ">\n" for line in _prose(thought).splitlines()) + "\n"
        elif kind == "tool_call":
            yield from _tool_call(event)
        elif kind == "plan":
            entries = event.get("entries") or []
            yield "**Plan**\n\n" + "".join(_plan_entry(entry) for entry in entries) + "\n"
        elif kind == "compaction_update":
            yield f"_The conversation was compacted ({event.get('status', 'unknown')})._\n\n"
        previous = kind if kind in _HEADINGS else previous if kind == "agent_thought_chunk" else None


def _tool_call(event: dict[str, Any]) -> Iterable[str]:
    status = str(event.get("status") or "pending")
    yield f"### {_STATUS.get(status, '•')} {_line(str(event.get('title') or 'Tool call'))}\n\n"
    yield f"_{event.get('kind') or 'other'}, {status}_\n\n"
    raw_input = event.get("rawInput")
    if raw_input not in (None, {}, ""):
        yield _fenced(json.dumps(raw_input, ensure_ascii=False, indent=2), "json")
    for item in event.get("content") or []:
        if item.get("type") == "diff":
            yield f"{_code(_line(str(item.get('path'))))}\n\n"
            yield _fenced(_diff(item.get("oldText"), str(item.get("newText") or "")), "diff")
        elif item.get("type") == "content":
            text = _content_text(item.get("content"))
            if text:  # a command's output comes fenced already: fenced once, anew
                yield _fenced(unfenced(text).strip("\n"), "")


def _modes(record: SessionRecord) -> str:
    """The mode the session last worked in, as its model was told (a run's `--mode` holds for the run only, so the
    stored mode may be another), and the session's own when they differ."""
    worked = worked_in(record)
    if worked is None or worked == record.mode:
        return record.mode
    return f"{worked} (its last prompt's; the session's own: {record.mode})"


def worked_in(record: SessionRecord) -> str | None:
    """The mode the model was last told it works in (the system prompt's environment, kept up to date by the
    environment updates), or None when the session never reached its model."""
    system = next((m for m in record.messages[:1] if m.get("role") == "system"), None)
    told = str(((system or {}).get("environment") or {}).get(MODE_FACT) or "")
    return next((mode for mode, info in MODES.items() if told.startswith(f"{info.name} (")), None)


def _plan_entry(entry: dict[str, Any]) -> str:
    mark = "x" if entry.get("status") == "completed" else " "
    return f"- [{mark}] {_line(str(entry.get('content') or ''))}\n"


def _diff(old: str | None, new: str) -> str:
    import difflib

    lines = difflib.unified_diff((old or "").splitlines(), new.splitlines(), "before", "after", lineterm="", n=2)
    return "\n".join(lines)


def _content_text(content: Any) -> str:
    if isinstance(content, dict):
        if content.get("type") == "text":
            return str(content.get("text") or "")
        if content.get("type") == "image":
            return _IMAGE
        if content.get("type") == "resource_link":
            return f"[{content.get('name') or content.get('uri')}]"
    return ""


def _fenced(text: str, language: str) -> str:
    """`text` in a code fence longer than any run of backticks inside it, so nothing in it can close the fence."""
    fence = "`" * max(3, _longest_backticks(text) + 1)
    return f"{fence}{language}\n{visible(text)}\n{fence}\n\n"


def _code(text: str) -> str:
    """`text` as inline code that no backtick inside it can end."""
    ticks = "`" * (_longest_backticks(text) + 1)
    return f"{ticks} {text} {ticks}" if "`" in text else f"{ticks}{text}{ticks}"


def _longest_backticks(text: str) -> int:
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    return longest


def _prose(text: str) -> str:
    return visible(text.strip("\n"))


def _line(text: str) -> str:
    """Text for a heading or a list item: one line, hidden characters visible."""
    return visible(" ".join(text.split()))
