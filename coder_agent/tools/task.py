"""`task`: hand a self-contained task to a sub-agent — a child agent with a context of its own — and get its final
answer back as the result.

`explore` sub-agents read and search only; `general` ones have the parent's tools (but no sub-agents of their own,
no questions for the user, no plan proposal), under the same permissions, deny rules and sandbox. Several `task`
calls of one reply run side by side (`runs_in_parallel`; the config's `subagents.parallel` caps how many at once).
The call shows the sub-agent's plan and steps as they happen; the work is done by the turn's `Delegate`
(`agent.subagents`). The call itself asks nothing: each thing a sub-agent does is asked about like the parent's.
A `general` task with `isolate` (default: the config's `subagents.isolate`) works in a place of its own; its changes
come back through this call (`ParentCall`): one question showing every file's diff, then written like any edit.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from coder_agent.permissions import NO_CHANGE_MODES, Action, Place
from coder_agent.session.delegation import Delegation, FileEdit, ParentCall, TaskKind
from coder_agent.tools.calls import Outcome, Prepared, ToolError
from coder_agent.tools.context import FileChange, ToolContext
from coder_agent.tools.tool import BuiltinTool, Params


class TaskParams(Params):
    description: str = Field(
        min_length=1,
        max_length=80,
        description="A few words naming the task, shown to the user (e.g. 'Find the cache').",
    )
    prompt: str = Field(
        min_length=1,
        description="The whole task for the sub-agent, self-contained (it sees nothing of this conversation): the "
        "goal, what you already know (paths, names), what to look at or change, and what its answer must contain.",
    )
    kind: TaskKind = Field(
        default="explore",
        description="`explore`: reads and searches only (finding code, tracing a flow, answering a question about "
        "the codebase). `general`: may also edit files and run commands, asked like yours.",
    )
    isolate: bool | None = Field(
        default=None,
        description="For `general` tasks: work in a private copy of the project (a git worktree on a scratch branch, "
        "or a copy of a folder that is not a repository); when the sub-agent finishes, its changes come back as one "
        "diff the user approves before anything changes here. Use it for `general` tasks that change files side by "
        "side. Default: the config's `subagents.isolate`.",
    )


class Task(BuiltinTool):
    name = "task"
    kind = "think"
    params = TaskParams
    runs_in_parallel = True

    def title(self, params: TaskParams, ctx: ToolContext) -> str:
        isolated = " (isolated)" if _isolated(params, ctx) else ""
        return f"{params.kind.capitalize()}{isolated}: {params.description}"

    async def prepare(self, params: TaskParams, ctx: ToolContext) -> Prepared:
        delegate = ctx.delegate
        if delegate is None:
            raise ToolError("A sub-agent cannot start sub-agents: do this part of the work yourself.")
        if params.kind == "general" and ctx.policy.mode in NO_CHANGE_MODES:
            raise ToolError(
                f"In {ctx.policy.mode} mode only `explore` tasks run: nothing may be changed yet. Use kind: explore."
            )
        task = Delegation(params.kind, params.description.strip(), params.prompt, _isolated(params, ctx))

        async def run() -> Outcome:
            result = await delegate(task, ctx.show_all, _parent_call(ctx))
            return Outcome(result.answer, result.shown, failed=result.failed)

        return Prepared(Action("think"), self.title(params, ctx), run)


def _isolated(params: TaskParams, ctx: ToolContext) -> bool:
    """Only a `general` task changes files, so only it is isolated."""
    chosen = params.isolate if params.isolate is not None else ctx.config.subagents.isolate
    return params.kind == "general" and chosen


def _parent_call(ctx: ToolContext) -> ParentCall:
    async def read(place: Place) -> str | None:
        ctx.still_there(place)
        return await ctx.read_whole(place.path, "merge", place.real) if await ctx.exists(place.path) else None

    async def write(edits: Sequence[FileEdit]) -> None:
        await ctx.write_all([FileChange(place, old, new) for place, old, new in edits])

    return ParentCall(ctx.call_id, ctx.choose, ctx.ask, read, write)
