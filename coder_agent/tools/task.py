"""`task`: hand a self-contained task to a sub-agent — a child agent with a context of its own — and get its final
answer back as the result.

`explore` sub-agents read and search only; `general` ones have the parent's tools (but no sub-agents of their own,
no questions for the user, no plan proposal), under the same permissions, deny rules and sandbox. Several `task`
calls of one reply run side by side (`runs_in_parallel`; the config's `subagents.parallel` caps how many at once).
The call shows the sub-agent's plan and steps as they happen; the work is done by the turn's `Delegate`
(`agent.subagents`). The call itself asks nothing: each thing a sub-agent does is asked about like the parent's.
"""

from __future__ import annotations

from pydantic import Field

from coder_agent.permissions import NO_CHANGE_MODES, Action
from coder_agent.session.delegation import Delegation, TaskKind
from coder_agent.tools.calls import Outcome, Prepared, ToolError
from coder_agent.tools.context import ToolContext
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


class Task(BuiltinTool):
    name = "task"
    kind = "think"
    params = TaskParams
    runs_in_parallel = True

    def title(self, params: TaskParams, ctx: ToolContext) -> str:
        return f"{params.kind.capitalize()}: {params.description}"

    async def prepare(self, params: TaskParams, ctx: ToolContext) -> Prepared:
        delegate = ctx.delegate
        if delegate is None:
            raise ToolError("A sub-agent cannot start sub-agents: do this part of the work yourself.")
        if params.kind == "general" and ctx.policy.mode in NO_CHANGE_MODES:
            raise ToolError(
                f"In {ctx.policy.mode} mode only `explore` tasks run: nothing may be changed yet. Use kind: explore."
            )
        task = Delegation(params.kind, params.description.strip(), params.prompt)

        async def run() -> Outcome:
            result = await delegate(task, ctx.show_all)
            return Outcome(result.answer, result.shown, failed=result.failed)

        return Prepared(Action("think"), self.title(params, ctx), run)
