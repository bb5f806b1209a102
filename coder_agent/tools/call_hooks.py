"""A tool call's hooks, as the executor runs them (`session.hooks` runs the commands): what a call is to a hook,
and what the `after_tool` and `after_edit` hooks that did not pass add to what the model reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from coder_agent.protocol.content import DiffContent
from coder_agent.session.hooks import Hooks
from coder_agent.tools.calls import Outcome, Prepared, ToolResult
from coder_agent.tools.tool import Tool


def call_facts(tool: Tool, prepared: Prepared, call_id: str, raw_input: Any) -> dict[str, Any]:
    """The call as a `before_tool` hook reads it (the later events add to it)."""
    return {"tool": tool.name, "kind": tool.kind, "title": prepared.title, "call_id": call_id, "input": raw_input}


async def after_call(hooks: Hooks, facts: dict[str, Any], outcome: Outcome, result: ToolResult) -> ToolResult:
    """Run `after_edit` (for an edit that changed files) and `after_tool`; the result with their reports added."""
    status = "failed" if outcome.failed else "completed"
    done = {**facts, "status": status, "output": result.text()}
    files = {Path(item.path): item.new_text for item in outcome.display if isinstance(item, DiffContent)}
    reports = await hooks.after_edit(done, files) if files and not outcome.failed else []
    reports += await hooks.after_tool(done)
    if not reports:
        return result
    notes = "\n\n".join(reports)
    output: str | list[dict[str, Any]]
    if isinstance(result.output, str):
        output = f"{result.output}\n\n{notes}"
    else:
        output = [*result.output, {"type": "text", "text": notes}]
    return ToolResult(output, failed=result.failed, ends_turn=result.ends_turn)
