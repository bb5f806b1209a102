"""Which tool calls of one model reply run side by side, and how a group of them runs.

A reply's calls run in the model's order, one at a time, except runs of neighbours:

- consecutive `task` calls (a tool that `runs_in_parallel`) run side by side, each waiting on a sub-agent of its
  own (the sub-agents' own limit may hold some back);
- consecutive calls of tools that only read (`read_only`: read_file, grep, glob, diagnostics, fetch, MCP tools
  marked `readOnlyHint`, and any tool whose definition says so) run side by side, at most `MAX_PARALLEL_READS` at once,
  each shown finished as soon as it is. One that needs the user's permission first waits until every call before
  it in the reply has finished: questions come one at a time, in the model's order, as they did. Any other call
  (a write, a command) ends the run, so a read after a write waits for it.

The results always go back to the model in its order (`Turn.run_calls`). A cancel from a permission question ends
the other calls of its group too (cancelled, shown so), so nothing else is asked after it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import anyio

from coder_agent.model.base import ToolCallRequest
from coder_agent.tools.calls import BeforeAsking, StoppedForPermission, ToolResult, ToolSet, TurnCancelled

MAX_PARALLEL_READS = 8
"""The most read-only calls of one reply that run at once."""

Outcome = ToolResult | TurnCancelled
"""A call's result, or the cancel it ended in (`StoppedForPermission` included)."""


@dataclass
class Group:
    """Calls that run together: side by side when `side_by_side`, else one call alone."""

    calls: list[ToolCallRequest]
    side_by_side: str | None = None
    """"tasks" or "reads" when the calls run side by side."""


def groups(calls: Sequence[ToolCallRequest], tools: ToolSet) -> list[Group]:
    """The calls in order, runs of consecutive `task` calls and of consecutive read-only calls together."""

    def kind(call: ToolCallRequest) -> str | None:
        if tools.parallel(call.name):
            return "tasks"
        return "reads" if tools.read_only(call.name) else None

    found: list[Group] = []
    for call in calls:
        side_by_side = kind(call)
        if side_by_side is not None and found and found[-1].side_by_side == side_by_side:
            found[-1].calls.append(call)
        else:
            found.append(Group([call], side_by_side))
    return found


async def run_group(group: Group, tools: ToolSet) -> list[Outcome]:
    """Each call's outcome, in the group's order."""
    if len(group.calls) == 1:
        return [await outcome(tools, group.calls[0])]
    found: dict[str, Outcome] = {}
    finished = {call.id: anyio.Event() for call in group.calls}
    reads = group.side_by_side == "reads"
    limit = anyio.CapacityLimiter(MAX_PARALLEL_READS if reads else len(group.calls))

    async def run(index: int, call: ToolCallRequest) -> None:
        async def turn_to_ask() -> None:
            for earlier in group.calls[:index]:
                await finished[earlier.id].wait()

        try:
            async with limit:
                found[call.id] = result = await outcome(tools, call, turn_to_ask if reads else None)
        finally:
            finished[call.id].set()
        if isinstance(result, TurnCancelled) and not isinstance(result, StoppedForPermission):
            side_by_side.cancel_scope.cancel()  # the user cancelled from a question: nothing more is asked

    async with anyio.create_task_group() as side_by_side:
        for index, call in enumerate(group.calls):
            side_by_side.start_soon(run, index, call)
    return [found.get(call.id) or TurnCancelled() for call in group.calls]


async def outcome(tools: ToolSet, call: ToolCallRequest, before_asking: BeforeAsking | None = None) -> Outcome:
    try:
        return await tools.run(call, before_asking)
    except TurnCancelled as cancelled:  # StoppedForPermission included
        return cancelled
