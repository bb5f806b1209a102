"""`ask_user`: the model asks the user a question — free text, or a choice among options — and reads the answer.

Where the client can show a form (ACP `elicitation.form`) the question is one, tied to the tool call, and the
answer comes back as the call's result: accepted (with what the user chose or wrote), declined or dismissed,
each a plain sentence for the model. Where no one can be asked that way, the question is written into the
conversation as the agent's message and the turn ends there: the user's next prompt is the answer. A question
that reads as a request for a secret is refused (secrets never go through a form, nor to the model).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from coder_agent.permissions import Action
from coder_agent.protocol.content import TextContent, ToolCallContent
from coder_agent.protocol.schema import AgentMessageChunk, new_message_id
from coder_agent.session.user_questions import ACCEPT, CANCEL, DECLINE, Answer, FormQuestion, asks_for_secret
from coder_agent.tools.calls import Outcome, Prepared, ToolError, text_content
from coder_agent.tools.context import ToolContext
from coder_agent.tools.tool import BuiltinTool, Params

MAX_OPTIONS = 12
MAX_OPTION_CHARS = 200
TITLE_CHARS = 80

CHOICE, CHOICES, ANSWER = "choice", "choices", "answer"


class AskParams(Params):
    question: str = Field(min_length=1, max_length=2_000, description="The question, short and self-contained.")
    options: list[str] = Field(
        default_factory=list,
        max_length=MAX_OPTIONS,
        description="Answers to choose from (the likely ones, most likely first); leave out for an open question.",
    )
    multi_select: bool = Field(default=False, description="Let the user pick several options.")
    free_text: bool = Field(
        default=False, description="Also offer a field to write another answer (always there without options)."
    )

    @model_validator(mode="after")
    def _check_options(self) -> AskParams:
        cleaned = [option.strip() for option in self.options]
        if any(not option or len(option) > MAX_OPTION_CHARS for option in cleaned):
            raise ValueError(f"each option must be 1 to {MAX_OPTION_CHARS} characters")
        if len(set(cleaned)) != len(cleaned):
            raise ValueError("options must differ from each other")
        if self.multi_select and not cleaned:
            raise ValueError("multi_select needs options")
        self.options = cleaned
        return self

    @property
    def writes(self) -> bool:
        """Whether the user may write an answer of their own."""
        return self.free_text or not self.options


class AskUser(BuiltinTool):
    name = "ask_user"
    kind = "other"
    params = AskParams

    def title(self, params: AskParams, ctx: ToolContext) -> str:
        question = " ".join(params.question.split())
        return "Ask: " + (question if len(question) <= TITLE_CHARS else question[: TITLE_CHARS - 1] + "…")

    async def prepare(self, params: AskParams, ctx: ToolContext) -> Prepared:
        if params.writes and asks_for_secret(params.question):
            raise ToolError(
                "Not asked: the question reads as a request for a password, key, token or other secret. Never ask "
                "for secrets: tell the user where to put it themselves (an environment variable, their config).",
                "Not asked: questions never ask for secrets.",
            )

        async def run() -> Outcome:
            answer = await ctx.ask(FormQuestion(params.question, form_schema(params), tool_call_id=ctx.call_id))
            if answer.unasked is not None:
                return await _in_the_conversation(params, ctx, answer.unasked)
            return _outcome(answer)

        preview: list[ToolCallContent] = [text_content(_as_text(params))]
        return Prepared(Action("think"), self.title(params, ctx), run, preview=preview)


def form_schema(params: AskParams) -> dict[str, Any]:
    """The form: one choice (or several) among the options, and/or a free-text answer."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    if params.options and params.multi_select:
        properties[CHOICES] = {
            "type": "array",
            "title": "Choose any",
            "items": {"type": "string", "enum": params.options},
            **({} if params.free_text else {"minItems": 1}),
        }
    elif params.options:
        properties[CHOICE] = {"type": "string", "title": "Choose one", "enum": params.options}
    if params.options and not params.free_text:
        required.append(CHOICES if params.multi_select else CHOICE)
    if params.writes:
        properties[ANSWER] = {"type": "string", "title": "Or write your answer" if params.options else "Your answer"}
        if not params.options:
            required.append(ANSWER)
    return {"type": "object", "properties": properties, "required": required}


def _outcome(answer: Answer) -> Outcome:
    if answer.action == ACCEPT:
        said = _accepted(answer.content)
        if not said:
            return Outcome("The user submitted the form without answering.", [text_content("No answer.")])
        return Outcome("The user answered. " + " ".join(said), [text_content("\n".join(said))])
    if answer.action == DECLINE:
        return Outcome(
            "The user declined to answer. Do not ask again; go on with what you can decide yourself, "
            "or stop and say what you need.",
            [text_content("Declined.")],
        )
    if answer.action == CANCEL:
        return Outcome(
            "The user dismissed the question without answering. Do not ask it again right away; go on if you can, "
            "or stop and say what you need.",
            [text_content("Dismissed.")],
        )
    return Outcome(
        f"The editor answered with an action this agent does not know ({answer.action!r}); "
        "treat the question as unanswered.",
        [text_content("No answer.")],
        failed=True,
    )


def _accepted(content: dict[str, Any]) -> list[str]:
    said = []
    choice = content.get(CHOICE)
    if isinstance(choice, str) and choice:
        said.append(f"Chose: {choice}.")
    choices = content.get(CHOICES)
    if isinstance(choices, list) and choices:
        said.append("Chose: " + ", ".join(str(c) for c in choices) + ".")
    written = content.get(ANSWER)
    if isinstance(written, str) and written.strip():
        said.append(f"Wrote: {written.strip()}")
    return said


async def _in_the_conversation(params: AskParams, ctx: ToolContext, why: str) -> Outcome:
    """No one to ask in a form: the question becomes the agent's message and the turn ends."""
    await ctx.update(
        AgentMessageChunk(content=TextContent(text=f"\n\n{_as_text(params)}\n"), message_id=new_message_id())
    )
    return Outcome(
        f"The question could not be asked in a form ({why}), so it was shown to the user as your message and "
        "the turn ends here: the user's next message is the answer.",
        [text_content("Asked in the conversation.")],
        ends_turn=True,
    )


def _as_text(params: AskParams) -> str:
    lines = [params.question.strip()]
    if params.options:
        lines.append("")
        lines += [f"- {option}" for option in params.options]
        if params.multi_select:
            lines += ["", "(Any of these" + (", or another answer.)" if params.free_text else ".)")]
        elif params.free_text:
            lines += ["", "(One of these, or another answer.)"]
    return "\n".join(lines)
