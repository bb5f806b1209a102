"""Slash commands: the list the editor shows (`available_commands_update`) and what each one does.

A prompt that is a single text starting with `/name` is a command. Every command answers with visible
output, and an unknown one gets the list of those that exist. Commands are a table (`COMMANDS`): a name,
what the editor shows, and a handler that gets a `CommandContext` (the session, and the turn it runs in)
and the text after the name. Commands act on the session as a whole (its conversation, rules, undo
history, model), so unlike a turn they get the session itself.

After the built-in ones come the session's MCP prompts (`/mcp:<server>:<prompt>`), then the commands and skills
from files (`extensions`): a file command's body, with its arguments, and a skill's instructions become the
user's message of a model turn, nothing more (so a project's file can no more change the mode, the rules, the
model or the keys than the user's own message could). A built-in name always wins.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio

from coder_agent import extensions, nofollow, prompts
from coder_agent.agent.turn import Turn
from coder_agent.checkpoints import CheckpointError
from coder_agent.config import Config
from coder_agent.errors import RpcError
from coder_agent.protocol.content import ContentBlock, TextContent
from coder_agent.protocol.schema import AvailableCommand, AvailableCommandInput, ConfigOptionUpdate, StopReason
from coder_agent.session.bridge import BridgeError
from coder_agent.session.options import session_options
from coder_agent.session.rewind import current_reader, restore_place, rewind_command
from coder_agent.session.session import Session


@dataclass
class CommandContext:
    """What a command works with: its session, and the turn it runs in."""

    session: Session
    turn: Turn
    check: Callable[[Config], None]
    """Raises an RpcError naming the fix unless a config's model and credentials can work (for `/model`)."""
    user_message_id: str
    """The id of the command's own user message (a turn it runs is that message's turn)."""

    async def say(self, text: str) -> None:
        """Show text from the agent (not the model)."""
        await self.turn.say(text)

    async def run(self, prompt: Sequence[ContentBlock]) -> StopReason:
        """Run a model turn on this prompt, as if the user had sent it."""
        return await self.turn.run(prompt, self.user_message_id)

    async def switch_model(self, name: str) -> str:
        """`/model`: show the model and the configured ones, or switch this session to another (from its next
        turn); a sentence for the user."""
        state = self.session.state
        config = state.config
        if not name:
            others = [m for m in dict.fromkeys(config.models) if m != config.model]
            listed = "".join(f"\n- `{m}`" for m in others) or " none (list them under `models` in the config)"
            return f"The model is `{config.model}`. Other configured models:{listed}\n"
        try:
            self.check(config.model_copy(update={"model": name}))
        except RpcError as exc:
            return f"Cannot switch to `{name}`: {exc.message}\n"
        state.set_model(name)
        await self.session.services.bridge.update(ConfigOptionUpdate(config_options=session_options(self.session)))
        return f"Switched this session to `{name}`.\n"


Handler = Callable[[CommandContext, str], Awaitable[StopReason]]


@dataclass(frozen=True)
class Command:
    name: str
    description: str
    hint: str | None = None
    handler: Handler | None = None

    def advertised(self) -> AvailableCommand:
        return AvailableCommand(
            name=self.name,
            description=self.description,
            input=AvailableCommandInput(hint=self.hint) if self.hint else None,
        )


MCP_PROMPT_PREFIX = "mcp:"


def advertised(session: Session | None = None, catalog: extensions.Catalog | None = None) -> list[AvailableCommand]:
    """The built-in commands, then the session's MCP prompts as `/mcp:<server>:<prompt>`, then the commands and
    skills from files (a name already taken is left out)."""
    listed = [command.advertised() for command in COMMANDS]
    for prompt in session.services.mcp_prompts if session is not None else []:
        names = " ".join(f"<{a.name}>" if a.required else f"[{a.name}]" for a in prompt.arguments)
        listed.append(
            AvailableCommand(
                name=f"{MCP_PROMPT_PREFIX}{prompt.server}:{prompt.name}",
                description=prompt.description or prompt.title or f"Prompt {prompt.name} of {prompt.server}",
                input=AvailableCommandInput(hint=names) if names else None,
            )
        )
    taken = {command.name for command in listed}
    for found in catalog.commands if catalog is not None else []:
        if found.name not in taken:
            taken.add(found.name)
            listed.append(
                AvailableCommand(
                    name=found.name,
                    description=found.description,
                    input=AvailableCommandInput(hint=found.hint) if found.hint else None,
                )
            )
    for skill in catalog.skills if catalog is not None else []:
        if skill.name not in taken:
            taken.add(skill.name)
            listed.append(
                AvailableCommand(
                    name=skill.name,
                    description=f"Skill: {skill.description}",
                    input=AvailableCommandInput(hint="what to use it for (optional)"),
                )
            )
    return listed


def parse(prompt: Sequence[ContentBlock]) -> tuple[str, str] | None:
    """(name, arguments) when the prompt is one text block starting with a slash command."""
    if len(prompt) != 1 or not isinstance(prompt[0], TextContent):
        return None
    text = prompt[0].text.strip()
    if not text.startswith("/") or text.startswith("//") or len(text) < 2:
        return None
    name, _, arguments = text[1:].partition(" ")
    if not name.replace("-", "").replace("_", "").replace(":", "").replace(".", "").isalnum():
        return None
    return name, arguments.strip()


def unknown(name: str, catalog: extensions.Catalog | None = None) -> str:
    listing = "\n".join(f"- `/{c.name}` — {c.description}" for c in COMMANDS)
    names = [c.name for c in catalog.commands] + [s.name for s in catalog.skills] if catalog else []
    from_files = [f"`/{found}`" for found in dict.fromkeys(names)]
    more = f"\n\nFrom files: {', '.join(from_files)}." if from_files else ""
    return f"Unknown command `/{name}`. The commands are:\n\n{listing}{more}\n"


def context_report(
    *,
    system_chars: int,
    tools_chars: int,
    tool_count: int,
    messages: list[dict[str, object]],
    used_tokens: int,
    window: int,
    cost: float,
    model: str,
    input_tokens: int = 0,
    cached_tokens: int = 0,
) -> str:
    """The `/context` table: rough token estimates by part, the last measured total, the prompt cache, the cost."""

    def tokens(chars: int) -> int:
        return max(0, round(chars / 4))

    by_role: dict[str, int] = {}
    counts: dict[str, int] = {}
    for message in messages:
        role = str(message.get("role", "?"))
        size = len(json.dumps(message.get("content"), ensure_ascii=False)) + len(
            json.dumps(message.get("tool_calls") or "")
        )
        by_role[role] = by_role.get(role, 0) + size
        counts[role] = counts.get(role, 0) + 1
    rows = [("System prompt", 1, tokens(system_chars)), ("Tool definitions", tool_count, tokens(tools_chars))]
    labels = {"user": "Your messages", "assistant": "Model answers and tool calls", "tool": "Tool results"}
    rows += [(labels.get(role, role), counts[role], tokens(size)) for role, size in by_role.items()]
    table = "\n".join(f"| {label} | {count} | ~{estimate:,} |" for label, count, estimate in rows)
    percent = f" ({100 * used_tokens / window:.0f}%)" if window else ""
    measured = f"{used_tokens:,} of {window:,} tokens{percent}" if used_tokens else "not measured yet (no model call)"
    if input_tokens:
        cache = (
            f"**Prompt cache:** {100 * cached_tokens / input_tokens:.0f}% of the input tokens sent so far were read "
            f"from the provider's cache ({cached_tokens:,} of {input_tokens:,}).\n\n"
        )
    else:
        cache = "**Prompt cache:** no model call measured yet.\n\n"
    return (
        f"**Context** — model `{model}`: {measured} after the last model call.\n\n"
        "| Part | Items | Tokens (estimate) |\n|---|---|---|\n"
        f"{table}\n\n{cache}**Cost so far:** ${cost:.4f} (where the provider's prices are known).\n"
    )


async def run(ctx: CommandContext, name: str, arguments: str) -> StopReason:
    """Run a slash command in a turn; its output is shown as agent text."""
    command = BY_NAME.get(name)
    if command is not None and command.handler is not None:
        return await command.handler(ctx, arguments)
    if name.startswith(MCP_PROMPT_PREFIX):
        return await run_mcp_prompt(ctx, name, arguments)
    refuse = ctx.session.turn_context().reading_refused
    load = functools.partial(extensions.load_catalog, ctx.session.state.cwd, refuse=refuse)
    catalog = await anyio.to_thread.run_sync(load)
    found = catalog.command(name)
    if found is not None:
        return await run_file_command(ctx, found, arguments)
    skill = catalog.skill(name)
    if skill is not None:
        return await run_skill(ctx, skill, arguments)
    await ctx.say(unknown(name, catalog))
    return "end_turn"


async def run_file_command(ctx: CommandContext, command: extensions.FileCommand, arguments: str) -> StopReason:
    """`/name args` of a command file: its body, with the arguments, is the user's message of a model turn."""
    if command.problem is not None:
        await ctx.say(f"`/{command.name}` cannot run: {command.problem}. Fix the file, then try again.\n")
        return "end_turn"
    body = await _file_body(ctx, f"`/{command.name}` cannot run", command.path, command.origin)
    if body is None:
        return "end_turn"
    text = extensions.expand_arguments(body, arguments).strip()
    if not text:
        await ctx.say(f"`/{command.name}` has nothing in it: {command.path} is empty.\n")
        return "end_turn"
    return await ctx.run([TextContent(text=text)])


async def _file_body(ctx: CommandContext, failure: str, path: Path, origin: extensions.Origin) -> str | None:
    """A command or skill file's body, read now; None after saying why it cannot be read."""
    root = extensions.root_for(origin, ctx.session.state.cwd)
    try:
        refuse = ctx.session.turn_context().reading_refused
        return await anyio.to_thread.run_sync(functools.partial(extensions.read_body, path, root, refuse=refuse))
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        await ctx.say(f"{failure}: {path}: {reason}.\n")
        return None


async def run_skill(ctx: CommandContext, skill: extensions.Skill, arguments: str) -> StopReason:
    """`/skill-name [what for]`: the skill's instructions, as the user's message of a model turn."""
    body = await _file_body(ctx, f"The skill `{skill.name}` cannot be used", skill.path, skill.origin)
    if body is None:
        return "end_turn"
    task = f" for this: {arguments}" if arguments else ""
    text = (
        f"Use the skill `{skill.name}`{task}. Its instructions follow (from {skill.path}); files they mention are "
        f"in {skill.folder}.\n\n{body}"
    )
    return await ctx.run([TextContent(text=text)])


async def _compact(ctx: CommandContext, arguments: str) -> StopReason:
    if not await ctx.turn.compact_now(arguments or None):
        await ctx.say("Nothing to compact yet.\n")
    return "end_turn"


async def _clear(ctx: CommandContext, arguments: str) -> StopReason:
    ctx.session.state.conversation.clear()
    ctx.session.services.files.clear()
    await ctx.say("Started a fresh context: the model no longer sees the conversation above.\n")
    return "end_turn"


async def _context(ctx: CommandContext, arguments: str) -> StopReason:
    state, turn = ctx.session.state, ctx.turn
    system = await turn.system_message()
    tools = turn.tool_specs()
    await ctx.say(
        context_report(
            system_chars=len(str(system["content"])),
            tools_chars=len(json.dumps(tools)),
            tool_count=len(tools),
            messages=state.conversation.messages,
            used_tokens=state.conversation.context_tokens,
            window=await turn.model.context_window(),
            cost=state.spending.cost,
            model=turn.model.name,
            input_tokens=state.spending.input_tokens,
            cached_tokens=state.spending.cached_tokens,
        )
    )
    return "end_turn"


async def _init(ctx: CommandContext, arguments: str) -> StopReason:
    return await ctx.run([TextContent(text=prompts.load("init.md"))])


async def _permissions(ctx: CommandContext, arguments: str) -> StopReason:
    await ctx.say(permissions_command(ctx.session, arguments))
    return "end_turn"


async def _model(ctx: CommandContext, arguments: str) -> StopReason:
    await ctx.say(await ctx.switch_model(arguments))
    return "end_turn"


async def _mcp(ctx: CommandContext, arguments: str) -> StopReason:
    await ctx.say(mcp_report(ctx.session))
    return "end_turn"


async def _rewind(ctx: CommandContext, arguments: str) -> StopReason:
    await ctx.say(await rewind_command(ctx.session, arguments))
    return "end_turn"


async def _undo(ctx: CommandContext, arguments: str) -> StopReason:
    await ctx.say(await undo(ctx.session))
    return "end_turn"


def sandbox_report(session: Session) -> str:
    """The effective walls of the session's commands, in Markdown."""
    services = session.services
    sandbox = services.sandbox
    if sandbox is None:
        why = services.sandbox_problem or "`sandbox.enabled` is off in the config"
        return f"**Sandbox:** none — commands run with your account's rights ({why}).\n"
    facts = "".join(f"\n- {fact}" for fact in sandbox.support.facts())
    walls = "".join(f"\n- {line}" for line in sandbox.describe())
    return f"**Sandbox:** in every mode but full-auto, commands run inside these walls:{walls}{facts}\n"


def permissions_command(session: Session, arguments: str) -> str:
    policy = session.state.policy
    verb, _, rest = arguments.partition(" ")
    if verb == "clear":
        return f"Forgot {policy.forget_all()} rule(s) remembered in this session.\n"
    if verb == "revoke":
        target = rest.strip().strip("`")
        if policy.revoke(target):
            return f"Revoked `{target}` for this session.\n"
        return f"No rule `{target}` was remembered in this session (rules from the config stay; edit the file).\n"
    if verb:
        return "Usage: `/permissions`, `/permissions revoke <rule>`, `/permissions clear`.\n"

    def listing(rules: Sequence[object]) -> str:
        return ", ".join(f"`{rule}`" for rule in rules) or "none"

    return (
        f"**Mode:** {policy.mode}\n\n"
        f"- Remembered in this session — allow: {listing(policy.session_allow)}; deny: {listing(policy.session_deny)}\n"
        f"- From the config — allow: {listing(policy.allow)}; deny: {listing(policy.deny)}\n\n"
        f"{sandbox_report(session)}\n"
        "`/permissions revoke <rule>` forgets a remembered rule; `/permissions clear` forgets them all.\n"
    )


async def undo(session: Session) -> str:
    """`/undo`: put back the files the last turn changed, through the editor so it shows the change; each held to
    `restore_place` first (a command may have swapped a folder on the way for a symlink), or nothing is written."""
    bridge, checkpoints, files = session.services.bridge, session.state.checkpoints, session.services.files
    try:
        plan = await checkpoints.undo_last(current_reader(session))
    except CheckpointError as exc:
        return f"Undo failed: {exc}\n"
    if plan is None:
        return "Nothing to undo: no turn of this session changed files.\n"
    places = [await anyio.to_thread.run_sync(restore_place, Path(r.path), session.state.roots) for r in plan.files]
    refused = [f"- `{r.path}`: {why}" for r, (_, why) in zip(plan.files, places, strict=True) if why is not None]
    if refused:  # a command swapped a folder for a symlink since: nothing is written, anywhere
        checkpoints.put_back(plan.checkpoint)
        return (
            "Undo refused, nothing was changed: these files cannot be put back where they were:\n"
            + "\n".join(refused)
            + "\n"
        )
    lines = []
    try:
        for restore, (real, _) in zip(plan.files, places, strict=True):
            path = Path(restore.path)
            files.forget(restore.path)
            if restore.text is None:
                with contextlib.suppress(FileNotFoundError):
                    await anyio.to_thread.run_sync(nofollow.unlink, real)
                lines.append(f"- deleted `{restore.path}` (the turn created it)")
            else:
                await bridge.write_text_file(path, restore.text, real=real)
                lines.append(f"- restored `{restore.path}`")
    except (BridgeError, OSError) as exc:
        checkpoints.put_back(plan.checkpoint)
        return f"Undo stopped: {exc}\n" + "\n".join(lines) + "\n"
    session.state.checkpoints_undone()
    warning = ""
    if plan.changed_since:
        changed = ", ".join(f"`{p}`" for p in plan.changed_since)
        warning = f"\n\nNote: {changed} had changed since the agent's edit; those later changes were undone too."
    return "Undid the last turn's file changes:\n" + "\n".join(lines) + warning + "\n"


def mcp_report(session: Session) -> str:
    """`/mcp`: each server of the session, its state and its tools."""
    hub = session.services.mcp
    if hub is None:
        return "This session has no MCP servers (the editor passes them when it opens the session).\n"
    lines = []
    for status in hub.statuses():
        state = {"connected": "connected", "failed": "failed", "closed": "closed"}.get(status.state, status.state)
        detail = f" — {status.error}" if status.error else f" — {status.tool_count} tool(s)"
        lines.append(f"- **{status.name}** ({status.transport}): {state}{detail}")
    tools = ", ".join(f"`{t.qualified_name}`" for t in hub.tools()) or "none"
    return "**MCP servers**\n\n" + "\n".join(lines) + f"\n\nTools: {tools}\n"


async def run_mcp_prompt(ctx: CommandContext, name: str, arguments: str) -> StopReason:
    """`/mcp:<server>:<prompt> args`: fetch the prompt from its server and send it as the user's message."""
    from coder_agent.mcp.types import McpError

    session = ctx.session
    server, _, prompt_name = name[len(MCP_PROMPT_PREFIX) :].partition(":")
    hub = session.services.mcp
    prompt = next((p for p in session.services.mcp_prompts if p.server == server and p.name == prompt_name), None)
    if prompt is None or hub is None:
        await ctx.say(unknown(name))
        return "end_turn"
    values = _prompt_arguments([a.name for a in prompt.arguments], arguments)
    missing = [a.name for a in prompt.arguments if a.required and a.name not in values]
    if missing:
        await ctx.say(f"`/{name}` needs: {', '.join(missing)}.\n")
        return "end_turn"
    try:
        text = await hub.get_prompt(server, prompt_name, values)
    except McpError as exc:
        await ctx.say(f"The MCP server could not give the prompt: {exc}\n")
        return "end_turn"
    return await ctx.run([TextContent(text=text)])


def _prompt_arguments(names: list[str], text: str) -> dict[str, str]:
    """`key=value` pairs, or words in order; a single argument takes the whole text."""
    if not names or not text:
        return {}
    if len(names) == 1 and "=" not in text:
        return {names[0]: text}
    values: dict[str, str] = {}
    positional = iter(names)
    for word in text.split():
        key, sep, value = word.partition("=")
        if sep and key in names:
            values[key] = value
        else:
            name = next(positional, None)
            if name is not None:
                values[name] = word
    return values


COMMANDS: tuple[Command, ...] = (
    Command("compact", "Summarise the conversation so far to free context", "optional focus for the summary", _compact),
    Command("clear", "Start a fresh context in this session (the model forgets the conversation)", None, _clear),
    Command("context", "Show what fills the context window, and the cost so far", None, _context),
    Command("undo", "Restore the files the agent changed in its last turn", None, _undo),
    Command(
        "rewind",
        "Go back to before one of the last prompts (files and conversation)",
        "[N] [files|conversation]",
        _rewind,
    ),
    Command("init", "Look at the project and write an AGENTS.md for it", None, _init),
    Command(
        "permissions", "List the permission rules; revoke one or clear them", "revoke <rule> | clear", _permissions
    ),
    Command("mcp", "Show the MCP servers of this session and their status", None, _mcp),
    Command("model", "Show the model, or switch to another", "model name, e.g. openai/gpt-4.1", _model),
)
BY_NAME = {command.name: command for command in COMMANDS}
