"""`propose_plan`: how plan mode ends — the model proposes its plan, the user approves it and picks the mode to go on
in (ask, accept edits, or auto where commands can be sandboxed), or keeps planning.

The plan is shown as the session's plan (ACP `plan`: its steps, all pending) and, to clients that show plan
documents, as a Markdown `plan_update` (RFD "Plan Operations"), removed (`plan_removed`) when the user keeps
planning or cancels. The question is a permission request on the call, whose content is the plan itself and whose
options are the modes: an approval switches the session's mode (the client is told, as after `session/set_mode`)
and the turn goes on carrying out the plan; "keep planning" ends the turn, so the user's next message says what to
change. The most careful approval comes first, with the option id `allow_once` (into the ask mode): clients that
approve by picking the first allowing option (acpx `--approve-all`, acp.el, avante) go on asking before each edit;
each option's name says its mode, as some clients show the names alone. With no one to ask (a run without a
terminal), the plan is the run's answer and the turn ends with it (no further model request). Only in plan mode:
elsewhere the model is told to use `update_plan` and get on with it.
"""

from __future__ import annotations

import anyio
from pydantic import Field

from coder_agent.permissions import Action, Choice, ModeName, available_modes
from coder_agent.protocol.content import PlanEntry, ToolCallContent
from coder_agent.protocol.schema import MarkdownPlan, PlanDocumentUpdate, PlanRemoved, PlanUpdate
from coder_agent.session.bridge import NoOneToAsk
from coder_agent.tools.calls import Outcome, Prepared, ToolError, TurnCancelled, text_content
from coder_agent.tools.context import ToolContext
from coder_agent.tools.tool import BuiltinTool, Params

PLAN_ID = "proposed-plan"
"""The id of the Markdown plan (`plan_update`): each proposal replaces the last."""
DROPPED = PlanRemoved(id=PLAN_ID, plan_id=PLAN_ID)
DROP_TIMEOUT = 5.0
"""How long telling the client a cancelled proposal is dropped may take before the cancel goes on without it."""
KEEP_PLANNING = "keep-planning"
GO_ON_IN: tuple[tuple[ModeName, str, str], ...] = (
    ("default", "allow_once", "Approve the plan, then ask before each edit and command (Ask mode)"),
    ("accept-edits", "approve:accept-edits", "Approve the plan, and accept its edits unasked (Accept edits mode)"),
    ("auto", "approve:auto", "Approve the plan, and run sandboxed commands unasked (Auto mode)"),
)
"""The modes an approved plan may go on in, most careful first: the option id and the name of each; `auto` only where
the session offers it."""


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
        choices = [Choice("allow_once", label, id=option) for mode, option, label in GO_ON_IN if mode in offered]
        choices.append(Choice("reject_once", "Keep planning (stay in Plan mode)", id=KEEP_PLANNING))
        approvals = {option: mode for mode, option, _ in GO_ON_IN}
        steps = [step.strip() for step in params.steps if step.strip()]

        async def run() -> Outcome:
            await ctx.update(
                PlanUpdate(entries=[PlanEntry(content=s, status="pending", priority="medium") for s in steps])
            )
            await ctx.update(PlanDocumentUpdate(plan=MarkdownPlan(id=PLAN_ID, plan_id=PLAN_ID, content=params.plan)))
            shown: list[ToolCallContent] = [text_content(params.plan)]
            try:
                answer = await ctx.choose(shown, choices)
            except (TurnCancelled, anyio.get_cancelled_exc_class()):
                with anyio.CancelScope(shield=True), anyio.move_on_after(DROP_TIMEOUT):
                    await ctx.update(DROPPED)
                raise
            except NoOneToAsk:
                return Outcome(
                    "No one can approve the plan here (the agent runs without an editor or a terminal to ask on), "
                    "so the plan itself is the answer the user gets, and the turn ends here. If they want it "
                    "carried out, their next message says so.",
                    shown,
                    ends_turn=True,
                )
            if answer not in approvals:
                await ctx.update(DROPPED)
                return Outcome(
                    "The user wants to keep planning. Stop here; their next message says what to change or look into.",
                    [*shown, text_content("Keep planning.")],
                    ends_turn=True,
                )
            mode = approvals[answer]
            await switch(mode)
            return Outcome(
                f"The user approved the plan; the session is now in {mode} mode. Carry out the plan now, step by "
                "step: keep its steps with update_plan (one in progress at a time), check your work as the plan says, "
                "and report what you did at the end.",
                [*shown, text_content(f"Approved: going on in {mode} mode.")],
            )

        return Prepared(Action("think"), self.title(params, ctx), run)
