"""`propose_plan`: how plan mode ends — the model proposes its plan, the user approves it and picks the mode to go on
in (ask, accept edits, or auto where commands can be sandboxed), or keeps planning.

The plan is shown as the session's plan (ACP `plan`: its steps, all pending) and, to clients that show plan
documents, as a Markdown `plan_update` (RFD "Plan Operations"). The question is a permission request on the call,
whose content is the plan itself and whose options are the modes: an approval switches the session's mode (the
client is told, as after `session/set_mode`) and the turn goes on carrying out the plan; "keep planning" ends the
turn, so the user's next message says what to change. With no one to ask (a run without a terminal), the plan is
the run's answer and the turn ends with it (no further model request). Only in plan mode: elsewhere the model is
told to use `update_plan` and get on with it.
"""

from __future__ import annotations

from pydantic import Field

from coder_agent.permissions import Action, Choice, ModeName, available_modes
from coder_agent.protocol.content import PlanEntry, ToolCallContent
from coder_agent.protocol.schema import MarkdownPlan, PlanDocumentUpdate, PlanUpdate
from coder_agent.session.bridge import NoOneToAsk
from coder_agent.tools.calls import Outcome, Prepared, ToolError, text_content
from coder_agent.tools.context import ToolContext
from coder_agent.tools.tool import BuiltinTool, Params

PLAN_ID = "proposed-plan"
"""The id of the Markdown plan (`plan_update`): each proposal replaces the last."""
APPROVE = "approve:"
KEEP_PLANNING = "keep-planning"
GO_ON_IN: tuple[tuple[ModeName, str], ...] = (
    ("accept-edits", "Yes, and accept edits"),
    ("default", "Yes, and ask before each edit and command"),
    ("auto", "Yes, in auto mode (sandboxed commands run unasked)"),
)
"""The modes an approved plan may go on in, and how the choice reads; `auto` only where the session offers it."""


class ProposalParams(Params):
    plan: str = Field(
        min_length=1,
        description="The plan in Markdown: what you found, the approach, the files to change and how, and how you "
        "will check the result.",
    )
    steps: list[str] = Field(
        min_length=1,
        description="The plan's steps in order, a short line each: the checklist you keep with update_plan once the "
        "plan is approved.",
    )


class ProposePlan(BuiltinTool):
    name = "propose_plan"
    kind = "think"
    params = ProposalParams

    def title(self, params: ProposalParams, ctx: ToolContext) -> str:
        return "Proposed plan"

    async def prepare(self, params: ProposalParams, ctx: ToolContext) -> Prepared:
        if ctx.policy.mode != "plan" or ctx.switch_mode is None:
            raise ToolError(
                "propose_plan is for plan mode, and the session is not in it: share your plan with update_plan if "
                "it helps, and carry on with the task."
            )
        switch = ctx.switch_mode
        offered = {mode.id for mode in available_modes(ctx.policy.sandboxed)}
        choices = [Choice("allow_once", label, id=APPROVE + mode) for mode, label in GO_ON_IN if mode in offered]
        choices.append(Choice("reject_once", "No, keep planning", id=KEEP_PLANNING))
        steps = [step.strip() for step in params.steps if step.strip()]

        async def run() -> Outcome:
            await ctx.update(
                PlanUpdate(entries=[PlanEntry(content=s, status="pending", priority="medium") for s in steps])
            )
            await ctx.update(PlanDocumentUpdate(plan=MarkdownPlan(id=PLAN_ID, plan_id=PLAN_ID, content=params.plan)))
            shown: list[ToolCallContent] = [text_content(params.plan)]
            try:
                answer = await ctx.choose(shown, choices)
            except NoOneToAsk:
                return Outcome(
                    "No one can approve the plan here (the agent runs without an editor or a terminal to ask on), "
                    "so the plan itself is the answer the user gets, and the turn ends here. If they want it "
                    "carried out, their next message says so.",
                    shown,
                    ends_turn=True,
                )
            if not answer.startswith(APPROVE):
                return Outcome(
                    "The user wants to keep planning. Stop here; their next message says what to change or look into.",
                    [*shown, text_content("Keep planning.")],
                    ends_turn=True,
                )
            mode: ModeName = next(m for m, _ in GO_ON_IN if APPROVE + m == answer)
            await switch(mode)
            return Outcome(
                f"The user approved the plan; the session is now in {mode} mode. Carry out the plan now, step by "
                "step: keep its steps with update_plan (one in progress at a time), check your work as the plan says, "
                "and report what you did at the end.",
                [*shown, text_content(f"Approved: going on in {mode} mode.")],
            )

        return Prepared(Action("think"), self.title(params, ctx), run)
