"""What the model is told about where it works: a system prompt fixed per conversation, and short updates.

The system prompt (`prompts/system.md`: how to work, and the environment as it was when the conversation
began — folder, OS, date, permission mode, git state, AGENTS.md files, the skills' names and descriptions, the
sandbox's walls — then the session's own instructions, a `SystemPromptAddition`, which may instead replace how to
work) is built once per conversation and stored with the session, so every request of a session starts with the
same bytes and a provider's prompt cache can serve them. It is rebuilt only when the conversation restarts:
`/clear`, `/compact` (or an automatic compaction), a model switch, and new instructions for the session.

In an autonomous mode (`permissions.AUTONOMOUS_MODES`) and in a run no one watches (`coder-agent run`), the prompt
tells the model to keep going until the task is done and verified, without stopping to ask
(`prompts/autonomous.md`); in plan mode, to explore read-only and propose a plan (`prompts/plan_mode.md`);
otherwise it works with the user, asking when it must.

What changes between turns — the date, the git branch, status and commits, the AGENTS.md files, the mode (and with
it how to work), the skills, the number of errors the language servers report in the files checked so far, the
background jobs that ended — reaches the model as a short user message
(`prompts/environment_update.md`) placed before the user's next prompt, and only when one of those facts changed
since the model was last told. The conversation keeps the facts as last told (`Conversation.environment`) to tell
the difference; the jobs remember whether the model saw them end (`session.jobs`). A job that ends while a turn
runs is named the same way after that turn's next tool results (`jobs_note`).
"""

from __future__ import annotations

from coder_agent import prompts
from coder_agent.agent import workspace
from coder_agent.extensions import SKILLS_FACT, skills_text
from coder_agent.lsp.diagnostics import ERROR
from coder_agent.model.base import Message
from coder_agent.permissions import MODES, is_autonomous, is_mode
from coder_agent.session.conversation import Conversation
from coder_agent.session.turn_context import TurnContext

DATE = "Today's date"
MODE = "Permission mode"
GIT_BRANCH = "Git branch"
GIT_STATUS = "Git status"
GIT_COMMITS = "Recent commits"
INSTRUCTIONS = "Project instructions from "
WORKING = "How to work now"
DIAGNOSTICS = "Errors the language servers report"
INTERACTIVE = (
    "with the user: ask with `ask_user` when the request is ambiguous in a way that changes the result, or before "
    "a risky or irreversible choice."
)


def facts(env: workspace.Environment, mode: str, autonomous: bool = False) -> dict[str, str]:
    """The facts of the environment that may change during a conversation, by the label the model reads."""
    found = {DATE: env.date, MODE: mode_text(mode), WORKING: working_text(autonomous, mode)}
    if env.git is not None:
        found[GIT_BRANCH] = env.git.branch
        found[GIT_STATUS] = env.git.status
        if env.git.recent_commits:
            found[GIT_COMMITS] = "\n".join(env.git.recent_commits)
    for doc in env.agents_files:
        found[INSTRUCTIONS + doc.path] = doc.text
    if env.skills:
        found[SKILLS_FACT] = skills_text(env.skills)
    return found


def diagnostics_fact(ctx: TurnContext) -> dict[str, str]:
    """The errors the language servers last reported in the files checked so far (none before the first check)."""
    known = ctx.lsp.known() if ctx.lsp is not None else {}
    if not known:
        return {}
    with_errors = {path: sum(d.severity == ERROR for d in found) for path, found in known.items()}
    errors = sum(with_errors.values())
    files = sum(1 for count in with_errors.values() if count)
    return {DIAGNOSTICS: f"{errors} in {files} of the {len(known)} file(s) checked so far (`diagnostics` lists them)"}


def mode_text(mode: str) -> str:
    if not is_mode(mode):
        return mode
    described = MODES[mode]
    return f"{described.name} ({described.description})"


def working_text(autonomous: bool, mode: str = "") -> str:
    """How the model is to work: planning first (`prompts/plan_mode.md`), on its own until the task is done
    (`prompts/autonomous.md`), or with the user."""
    if mode == "plan":
        return prompts.load("plan_mode.md")
    return prompts.load("autonomous.md") if autonomous else INTERACTIVE


def autonomous(ctx: TurnContext) -> bool:
    """Whether the model works on its own this turn: an autonomous mode, or a run no one watches."""
    return is_autonomous(ctx.policy.mode) or ctx.unattended


def changes(told: dict[str, str], now: dict[str, str]) -> list[tuple[str, str | None]]:
    """What differs from what the model was told: (label, new value), or (label, None) for a fact gone."""
    changed: list[tuple[str, str | None]] = [(label, value) for label, value in now.items() if told.get(label) != value]
    changed += [(label, None) for label in told if label not in now]
    return changed


def system_message(conversation: Conversation) -> Message:
    return {"role": "system", "content": conversation.system or ""}


async def prepare(ctx: TurnContext) -> None:
    """Build the conversation's system prompt if it has none yet (in the background, once a session opens); a
    sub-agent's is its own instructions."""
    if ctx.conversation.system is not None:
        return
    if ctx.instructions is not None:
        ctx.conversation.fix_prompt(ctx.instructions, {})
        return
    env = await _describe(ctx)
    if ctx.conversation.system is None:
        _fix(ctx, env)


async def begin_turn(ctx: TurnContext) -> tuple[Message, Message | None]:
    """The system message for this turn's requests, and the environment update to put before the prompt.

    The update is None when nothing changed since the model was last told (or the prompt was just built)."""
    conversation = ctx.conversation
    mode = ctx.policy.mode
    env = await _describe(ctx)
    if conversation.system is None:
        _fix(ctx, env)
        return system_message(conversation), jobs_note(ctx)
    now = facts(env, mode, autonomous(ctx)) | diagnostics_fact(ctx)
    changed = changes(conversation.environment, now)
    conversation.told(now)
    ended = ended_jobs(ctx)
    if not changed and not ended:
        return system_message(conversation), None
    update = prompts.render("environment_update.md", changes=changed, jobs=ended)
    return system_message(conversation), {"role": "user", "content": update}


def ended_jobs(ctx: TurnContext) -> list[str]:
    """The session's background jobs that ended and the model was not told of, in words (they count as told)."""
    if ctx.parent_id is not None:  # a sub-agent's turn: the session's jobs are its parent's to hear of
        return []
    lines = []
    for job in ctx.jobs.take_ended():
        unread = job.handle.output.total - job.read_to
        more = f"; {unread:,} characters of its output unread (job_output)" if unread else ""
        lines.append(f"{job.label} {job.state()}{more}")
    return lines


def jobs_note(ctx: TurnContext) -> Message | None:
    """A short update naming the background jobs that ended since the model was last told (None: none did); it
    follows the tool results of a turn, or opens one."""
    ended = ended_jobs(ctx)
    if not ended:
        return None
    return {"role": "user", "content": prompts.render("environment_update.md", changes=[], jobs=ended)}


async def current_system_message(ctx: TurnContext) -> Message:
    """The system prompt as the next request will carry it (built now if the conversation has none)."""
    await prepare(ctx)
    return system_message(ctx.conversation)


def _fix(ctx: TurnContext, env: workspace.Environment) -> None:
    mode, addition = ctx.policy.mode, ctx.system_prompt_addition
    on_its_own = autonomous(ctx)
    walls = ctx.sandbox.walls.describe() if ctx.sandbox is not None else None
    system = prompts.render(
        "system.md",
        **env.template_values(),
        mode=mode_text(mode),
        autonomous=on_its_own,
        autonomy=working_text(True),
        planning=working_text(on_its_own, mode) if mode == "plan" else None,
        sandbox=walls,
        replaced_instructions=addition.text if addition is not None and addition.replaces else None,
        added_instructions=addition.text if addition is not None and not addition.replaces else None,
    )
    ctx.conversation.fix_prompt(system, facts(env, mode, on_its_own))


async def _describe(ctx: TurnContext) -> workspace.Environment:
    return await workspace.describe(
        ctx.cwd, list(ctx.additional_directories), sandbox=ctx.sandbox, refuse=ctx.reading_refused
    )
