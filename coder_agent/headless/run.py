"""`coder-agent run`: one prompt through the agent without an editor — the same sessions, tools and store.

The session opens (new, `--continue`: the latest of the folder, or `--resume ID`: an id, the start of one, or a
session picked on the terminal) with a `LocalBridge`: the disk, local process groups, updates to the output
format, permission questions to `answers`; with `--add-dir` folders and `--mcp-config` servers, and a resumed
session with the MCP servers stored with it. The prompt goes to the session (with what was piped next to it);
with none, the session goes on from the call its last turn stopped at for want of a permission. The run's
`--mode`, `--allow`/`--deny`, `--model` and `--max-turns` hold for this run only: the session is stored with
the mode it had before, and a resumed one with its own model (every save during the run too, so a run killed
midway leaves it so); an editor that reopens it does not inherit a `full-auto` given on a command line. A new
session keeps the model it was made with.

Ctrl-C (or SIGTERM) cancels the turn the way an editor's cancel does: the running command's process group is
killed, the history is repaired and the session saved; a second Ctrl-C quits at once. With `--output-schema` the
answer is checked against the schema, and an invalid one gets a retry (`headless.output_schema`). How the run ends,
its exit status and what it says then are `headless.ending`'s; usage errors (2) are found before this module runs.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

import anyio
from anyio.abc import TaskGroup
from rich.console import Console
from rich.text import Text

from coder_agent.agent import wake
from coder_agent.errors import InvalidParams, ResourceNotFound, RpcError
from coder_agent.headless import sessions
from coder_agent.headless.ending import EXIT_INTERRUPTED, RunState, mode_hint, mode_note, mode_refusals
from coder_agent.headless.ending import result as result_of
from coder_agent.headless.events import JsonOutput, Output, Stdout, StreamJsonOutput, Tally
from coder_agent.headless.mcp_config import merged, stored_servers
from coder_agent.headless.output_schema import RETRIES, OutputSchema
from coder_agent.headless.render import TextOutput, stderr_console, stdout_console
from coder_agent.headless.run_options import RunOptions
from coder_agent.headless.terminal_permissions import TerminalPermissions
from coder_agent.headless.terminal_questions import TerminalQuestions
from coder_agent.protocol.content import TextContent
from coder_agent.protocol.schema import McpServer, SessionUpdate
from coder_agent.secrets import redact
from coder_agent.session import rewind as rewinding
from coder_agent.session.conversation import SystemPromptAddition
from coder_agent.session.local_bridge import LocalBridge
from coder_agent.session.turn_runner import TurnReport
from coder_agent.stdio import reserve_stdout
from coder_agent.store import StoreError

if TYPE_CHECKING:
    from pathlib import Path

    from coder_agent.agent.manager import SessionManager
    from coder_agent.session.session import Session
    from coder_agent.session.state import SessionState

log = logging.getLogger(__name__)

ManagerFactory = Callable[[TaskGroup], "SessionManager"]


def main(options: RunOptions, build: ManagerFactory) -> int:
    """Run the prompt; the exit status. stdout carries only the output format (fd 1 is pointed at stderr)."""
    stdout = os.fdopen(reserve_stdout(), "w", encoding="utf-8", errors="replace")
    try:
        return anyio.run(run_in, options, build, stdout, backend="asyncio")
    except KeyboardInterrupt:  # before the signal handler was in place
        return EXIT_INTERRUPTED
    finally:
        with contextlib.suppress(OSError):  # the reader went away: nothing more to say to it
            stdout.close()


async def run_in(options: RunOptions, build: ManagerFactory, file: TextIO) -> int:
    """The run in the current event loop, its output format written to `file`; the exit status."""
    console = stderr_console()
    output = _output(options, Stdout(file), console)
    asker = console if options.can_ask else None
    answers = TerminalPermissions(output, asker)
    tally = Tally(options.cwd)

    async def sink(update: SessionUpdate) -> None:
        tally.see(update)
        await output.show(update)

    bridge = LocalBridge(sink, answers, TerminalQuestions(output, asker))
    run = RunState()
    async with anyio.create_task_group() as tasks:
        manager = build(tasks)
        with anyio.CancelScope() as work:
            tasks.start_soon(_cancel_on_signals, manager, work, run, output, console)
            try:
                await _work(manager, options, bridge, run, tally, output, console)
            except RpcError as exc:
                run.error = redact(exc.message)
            except Exception as exc:
                log.exception("coder-agent run failed")
                run.error = redact(f"Unexpected error: {exc} (the log has the details)")
        with anyio.CancelScope(shield=True):
            if run.session is not None and run.own_settings:
                run.session.state.take_stored_mode()  # the run's mode was for this run only
                run.session.save_soon()
            await manager.aclose()  # cancels what is left and saves every session
        tasks.cancel_scope.cancel()
    result = result_of(run, answers.refused, tally)
    result.piped_input = options.piped_summary()
    if result.error:
        output.pause()
        console.print(Text(result.error, style="red" if result.exit_code != EXIT_INTERRUPTED else "yellow"))
    elif result.refused_by_mode:  # commands the mode refused: the answer did without them, which the person hears
        output.pause()
        console.print(Text(mode_refusals(result.refused_by_mode, run.session), style="yellow"))
    output.finished(result)
    return result.exit_code


async def _work(
    manager: SessionManager,
    options: RunOptions,
    bridge: LocalBridge,
    run: RunState,
    tally: Tally,
    output: Output,
    console: Console,
) -> None:
    session = await _open(manager, options, bridge, run, console if options.can_ask else None)
    run.session = session
    saved = session.state
    # A resumed session keeps its own model; a new one keeps the model it was made with (the run's).
    saved.store_instead(mode=saved.policy.mode, model=saved.config.model if run.resumed else None)
    run.own_settings = True
    _apply(manager, saved, options)
    if saved.policy.mode == "auto" and not saved.policy.sandboxed:
        if not options.mode_chosen_for_ci:
            why = session.services.sandbox_problem or "sandbox.enabled is off in your config"
            raise InvalidParams(
                f"--mode auto needs the sandbox, and commands cannot be sandboxed here: {why}. "
                "Use --mode full-auto to run them with your account's rights."
            )
        saved.set_mode("read-only")
        await session.services.bridge.notice(
            "warning",
            "Running read-only",
            f"In CI the default mode is auto, which needs the sandbox "
            f"({session.services.sandbox_problem or 'sandbox.enabled is off in your config'}); "
            "give --mode to choose another.",
        )
    else:
        note = mode_note(saved.policy.mode, options, saved.policy.sandboxed)
        if note is not None:
            console.print(Text(note, style="dim"))
    run.mode = saved.policy.mode
    tally.cwd = saved.cwd
    output.started(
        {
            "session_id": session.id,
            "cwd": str(saved.cwd),
            "model": saved.config.model,
            "mode": saved.policy.mode,
            "resumed": run.resumed,
            "piped_input": options.piped_summary(),
        }
    )
    await manager.ready(session)
    if options.rewind is not None:
        await _rewind(manager, session, options.rewind)
    prompt = options.prompt_blocks()
    run.report = TurnReport()
    if prompt is None and options.rewind is None:
        await manager.resume(session, run.report)
    elif prompt is not None:
        await manager.prompt(session, [TextContent(text=text) for text in prompt], run.report)
    run.stop_reason = run.report.stop_reason
    if saved.continues_alone:
        await wake.settle(session, saved.config.wake.run_wait)  # background jobs may wake it
    if options.output_schema is not None:
        await _structured(manager, session, options.output_schema, run, tally)


async def _structured(
    manager: SessionManager, session: Session, schema: OutputSchema, run: RunState, tally: Tally
) -> None:
    """Check the answer against `--output-schema`; an invalid one gets `RETRIES` more turns, told what was wrong."""
    for retry in range(RETRIES + 1):
        if run.stop_reason != "end_turn":
            return  # the turn stopped short: that is what the run reports
        value, run.schema_problem = schema.check(tally.final_answer)
        if run.schema_problem is None:
            run.structured_output = value
            return
        if retry == RETRIES:
            return
        tally.new_turn()
        report = TurnReport()
        run.retries.append(report)
        await manager.prompt(session, [TextContent(text=schema.retry(run.schema_problem))], report)
        run.stop_reason = report.stop_reason


async def _rewind(manager: SessionManager, session: Session, count: int) -> None:
    """--rewind N: back to before the Nth-last prompt, files and conversation (a file changed since is kept)."""
    points = rewinding.turn_cursors(session)
    if count > len(points):
        raise InvalidParams(f"--rewind {count}: the session has {len(points)} prompt(s) to go back over")
    outcome = await manager.rewind(session, (points[-count].id, None), "both", on_conflict="keep")
    kept = ", ".join(outcome.conflicts)
    note = f" Kept as they are (changed since the agent's edit): {kept}." if kept else ""
    await session.services.bridge.notice("info", f"Rewound to before prompt {count} back", note.strip() or None)


async def _open(
    manager: SessionManager, options: RunOptions, bridge: LocalBridge, run: RunState, asker: Console | None
) -> Session:
    def client(session_id: str) -> LocalBridge:
        return bridge

    if options.resume is None and not options.continue_latest:
        return await manager.create(options.cwd, list(options.add_dirs), list(options.mcp_servers), client)
    store = manager.store
    if options.resume is not None and store is not None:
        if options.resume == "" and asker is not None:
            session_id = await sessions.pick(store, options.cwd, asker)
        else:
            session_id = await anyio.to_thread.run_sync(sessions.resolve, store, options.resume)
    elif options.resume is not None:
        session_id = options.resume
    else:
        page, _ = await manager.list(str(options.cwd), None)
        if not page:
            raise ResourceNotFound(f"No session to continue in {options.cwd}; start one without --continue.")
        session_id = page[0].session_id
    cwd, extra, servers = await _stored(manager, session_id, options)
    run.resumed = True
    extra += [folder for folder in options.add_dirs if folder not in extra]
    return await manager.reopen(session_id, cwd, extra, merged(servers, list(options.mcp_servers)), client)


async def _stored(
    manager: SessionManager, session_id: str, options: RunOptions
) -> tuple[Path, list[Path], list[McpServer]]:
    """Where a resumed session worked before (unless --cwd says otherwise), and the MCP servers it had (an
    editor's session keeps its servers on the command line)."""
    from pathlib import Path

    store = manager.store
    if store is None:
        return options.cwd, [], []

    def stored() -> tuple[Path, list[Path], list[McpServer]] | None:
        try:
            record = store.load(session_id)
        except StoreError:
            return None  # reopening says what is wrong with it
        servers = stored_servers(record.mcp_servers)
        if options.cwd_given:
            return options.cwd, [], servers
        cwd = Path(record.cwd)
        if not cwd.is_dir():
            raise ResourceNotFound(f"Session {session_id} worked in {cwd}, which is gone; give --cwd to use another.")
        return cwd, [Path(d) for d in record.additional_directories if Path(d).is_dir()], servers

    return await anyio.to_thread.run_sync(stored) or (options.cwd, [], [])


def _apply(manager: SessionManager, saved: SessionState, options: RunOptions) -> None:
    """The run's own mode, rules, model and request limit; no one watches it, so the model finishes on its own."""
    saved.set_mode(options.mode or saved.config.default_mode)
    saved.policy.set_mode_hint(mode_hint(saved.policy.sandboxed))
    saved.run_unattended()
    saved.policy.add_rules(options.allow, options.deny)
    if options.append_system_prompt is not None:
        saved.set_system_prompt_addition(SystemPromptAddition(options.append_system_prompt))
    updates: dict[str, Any] = {}
    if options.model is not None and options.model != saved.config.model:
        updates["model"] = options.model
    if options.max_turns is not None:
        updates["max_turn_requests"] = options.max_turns
    if "auto_continue" not in saved.config.wake.model_fields_set:  # on in a run, unless the config says otherwise
        updates["wake"] = saved.config.wake.model_copy(update={"auto_continue": True})
    if updates:
        config = saved.config.model_copy(update=updates)
        manager.runner.check(config)
        saved.set_config(config)


async def _cancel_on_signals(
    manager: SessionManager, work: anyio.CancelScope, run: RunState, output: Output, console: Console
) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            if run.interrupted is not None:
                os._exit(128 + signum)  # the second Ctrl-C: now
            run.interrupted = signum
            output.pause()
            console.print(Text("Cancelling… (Ctrl-C again to quit at once)", style="yellow"))
            manager.cancel_all()
            work.cancel()


def _output(options: RunOptions, stdout: Stdout, console: Console) -> Output:
    if options.output == "json":
        return JsonOutput(stdout)
    if options.output == "stream-json":
        return StreamJsonOutput(stdout)
    markdown = stdout_console(stdout) if stdout.isatty() else None
    structured = options.output_schema is not None
    return TextOutput(stdout, console, markdown=markdown, verbose=options.verbose, structured=structured)
