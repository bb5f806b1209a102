"""`update_plan`: the model's plan for the task, shown by the editor as a plan (not as a tool call)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from coder_agent.permissions import Action
from coder_agent.protocol.content import PlanEntry
from coder_agent.protocol.schema import PlanUpdate
from coder_agent.tools.calls import Outcome, Prepared
from coder_agent.tools.context import ToolContext
from coder_agent.tools.tool import BuiltinTool, Params


class PlanItem(Params):
    content: str = Field(description="What the step is.")
    status: Literal["pending", "in_progress", "completed"] = Field(description="Its state.")
    priority: Literal["high", "medium", "low"] = Field(default="medium", description="How important it is.")


class PlanParams(Params):
    entries: list[PlanItem] = Field(description="The whole plan, every step, in order (it replaces the last one).")


class UpdatePlan(BuiltinTool):
    name = "update_plan"
    kind = "think"
    params = PlanParams
    announced = False

    def title(self, params: PlanParams, ctx: ToolContext) -> str:
        return "Update the plan"

    async def prepare(self, params: PlanParams, ctx: ToolContext) -> Prepared:
        async def run() -> Outcome:
            entries = [PlanEntry(content=e.content, status=e.status, priority=e.priority) for e in params.entries]
            await ctx.update(PlanUpdate(entries=entries))
            done = sum(e.status == "completed" for e in params.entries)
            return Outcome(f"Plan updated: {done} of {len(entries)} steps completed.")

        return Prepared(Action("think"), self.title(params, ctx), run)
