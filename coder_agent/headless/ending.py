"""How a run ends: its exit status, and the sentence that says why with advice that works when followed.

0 when the model finished (`end_turn`); 1 on an error or when the turn stopped short (max turns, max tokens, a
refusal by the model); 3 when permissions kept the work from being done: a question no one could answer stopped
it (the advice names the `--allow` rule that lets the call through, or `--mode full-auto` for a command that must
leave the sandbox, which no rule lets out), or the run's mode refused a file change the task needed; 4 when the
answer is still not valid against `--output-schema` after a retry; 130 on Ctrl-C
(143 on SIGTERM). The mode a run was not told to use is said once at its start, with the flag that chooses another.
"""

from __future__ import annotations

import signal
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from coder_agent.headless.events import ModeRefusal, Permission, RunResult, Tally
from coder_agent.headless.run_options import RunOptions
from coder_agent.protocol.schema import StopReason
from coder_agent.session.turn_runner import TurnReport

if TYPE_CHECKING:
    from coder_agent.session.session import Session

CHANGE_KINDS = frozenset({"edit", "delete", "move"})
"""A call of these kinds that the read-only mode refused was a file change the task needed: the run ends with 3."""
EXIT_OK = 0
EXIT_ERROR = 1
EXIT_REFUSED = 3
EXIT_INVALID_OUTPUT = 4
EXIT_INTERRUPTED = 130

STOPPED_SHORT: dict[str, str] = {
    "max_turn_requests": "Stopped at the limit of model requests (--max-turns, or max_turn_requests in the config); "
    "`coder-agent run --continue` lets it go on.",
    "max_tokens": "The model's answer was cut at its output limit (max_tokens).",
    "refusal": "The model declined to answer.",
    "cancelled": "The turn was cancelled.",
}


@dataclass
class RunState:
    session: Session | None = None
    resumed: bool = False
    own_settings: bool = False
    """The run's own settings are in force (the session's stored ones go back when it ends)."""
    report: TurnReport | None = None
    """The prompt's turn, once it ended: its usage and cost are the run's."""
    stop_reason: StopReason | None = None
    error: str | None = None
    interrupted: int | None = None
    """The signal that cancelled the run."""
    mode: str | None = None
    """The mode the run worked in."""
    retries: list[TurnReport] = field(default_factory=list)
    """The turns that asked again for an answer valid against `--output-schema`."""
    structured_output: Any = None
    """The answer's JSON value, valid against `--output-schema`."""
    schema_problem: str | None = None
    """Why the last answer is not valid against `--output-schema` (None: it is, or none was asked for)."""


def mode_hint(sandboxed: bool) -> str:
    """How a person lets what read-only refuses run, in the flags of the command line."""
    return (
        f"give --mode accept-edits to let edits run, or --mode {'auto' if sandboxed else 'full-auto'} for commands too"
    )


def mode_note(mode: str, options: RunOptions, sandboxed: bool) -> str | None:
    """What the run says at its start about a mode it was not told to use (None: it was told, or a person at the
    terminal is asked each question)."""
    if options.mode_given or options.can_ask:
        return None
    if mode == "read-only":
        hint = mode_hint(sandboxed)
        return f"Mode: read-only, as there is no terminal to ask on: edits and commands are refused; {hint}."
    if mode == "auto":
        return "Mode: auto, as in CI: edits, and commands inside the sandbox, run unasked; --mode chooses another."
    if options.allow:
        return (
            f"Mode: {mode}, as --allow rules were given: what they allow runs, and a call that would ask stops the "
            "run; --mode chooses another."
        )
    return f"Mode: {mode}; --mode chooses another."


def result(run: RunState, refused: list[Permission], tally: Tally) -> RunResult:
    session = run.session
    result = RunResult(
        session_id=session.id if session is not None else None,
        stop_reason=run.stop_reason,
        exit_code=EXIT_OK,
        answer=tally.final_answer,
        usage=tally.usage,
        files_changed=tally.files_changed,
        refused=refused,
        refused_by_mode=tally.refused_by_mode,
    )
    if run.report is not None:
        turns = [run.report.spent, *(retry.spent for retry in run.retries)]
        result.usage.model_requests = sum(spent.requests for spent in turns)
        result.usage.tokens = sum(spent.input_tokens + spent.output_tokens for spent in turns)
        cost = sum(spent.cost for spent in turns)
        result.cost = round(cost, 6) if cost > 0 else None
    result.structured_output = run.structured_output
    if run.interrupted is not None:
        result.stop_reason = "cancelled"
        result.exit_code = EXIT_INTERRUPTED if run.interrupted == signal.SIGINT else 128 + run.interrupted
        result.error = "Interrupted. " + _pick_up(session)
    elif run.error is not None:
        result.exit_code, result.error = EXIT_ERROR, run.error
    elif refused:
        result.exit_code, result.error = EXIT_REFUSED, _refusal(refused[0], session, run.mode)
    elif run.stop_reason != "end_turn":
        result.exit_code = EXIT_ERROR
        result.error = STOPPED_SHORT.get(run.stop_reason or "", f"The turn stopped: {run.stop_reason}.")
    elif run.schema_problem is not None:
        result.exit_code = EXIT_INVALID_OUTPUT
        result.error = f"The answer is not valid against the JSON Schema of --output-schema: {run.schema_problem}."
    elif any(r.kind in CHANGE_KINDS and r.mode == "read-only" for r in result.refused_by_mode):
        result.exit_code, result.error = EXIT_REFUSED, mode_refusals(result.refused_by_mode, session)
    return result


def mode_refusals(refusals: list[ModeRefusal], session: Session | None) -> str:
    """What the run's mode refused, counted and named, and how to let it run: the end of a run whose answer was
    worked out without those calls (whatever it says)."""
    changes = [r for r in refusals if r.kind in CHANGE_KINDS]
    counts = Counter("file change" if r.kind in CHANGE_KINDS else "command" if r.kind == "execute" else "call"
                     for r in refusals)  # fmt: skip
    counted = " and ".join(f"{n} {what}{'' if n == 1 else 's'}" for what, n in counts.items())
    named = "; ".join(r.title for r in refusals[:3]) + ("; …" if len(refusals) > 3 else "")
    sandboxed = session is not None and session.state.policy.sandboxed
    commands = "auto" if sandboxed else "full-auto"
    again = f"coder-agent run --resume {session.id}" if session is not None else "coder-agent run --continue"
    them = "it" if len(refusals) == 1 else "them"
    how = (
        f'`{again} --mode accept-edits "go ahead"` (--mode {commands} for commands too)'
        if changes
        else f'`{again} --mode {commands} "go ahead"`'
    )
    return (
        f"The {refusals[0].mode} mode refused {counted} ({named}): the answer was worked out without {them}, "
        f"whatever it says. To let {them} run: {how}."
    )


def _refusal(event: Permission, session: Session | None, run_mode: str | None) -> str:
    """Why the run stopped, and the command that runs the stopped call and goes on."""
    mode = "accept-edits" if event.kind == "edit" else "auto" if _auto_would_run(event, session) else "full-auto"
    resume = f"coder-agent run --resume {session.id}" if session is not None else "coder-agent run --continue"
    if event.leaves_sandbox:  # no rule lets a command out of the sandbox, and the run's mode would ask again
        return (
            f"Stopped: {event.title} ({event.kind}) needs to run outside the sandbox, and there is no terminal to ask "
            f"on. To run it outside and go on: `{resume} --mode full-auto` (commands then run with your account's "
            "rights, unasked); or run on a terminal to be asked."
        )
    stopped = f"Stopped: {event.title} ({event.kind}) needs permission, and there is no terminal to ask on."
    if run_mode not in (None, "default"):
        resume += f" --mode {run_mode}"  # the run's mode was for that run only: say it again
    if event.allow_rules:
        rules = " ".join(f"--allow '{rule}'" for rule in event.allow_rules)
        return (
            f"{stopped} To allow it and go on from there: `{resume} {rules}` (or --mode {mode} in place of "
            "--allow); or run on a terminal to be asked."
        )
    how = "No rule can be suggested for it (it reaches outside the workspace, or the command could not be checked): "
    how += f"add an exact rule to your config and run `{resume}` to go on, or run on a terminal to be asked."
    return f"{stopped} {how}"


def _auto_would_run(event: Permission, session: Session | None) -> bool:
    """A command the auto mode would run: the session has a sandbox and was not already in auto."""
    return session is not None and session.state.policy.sandboxed and session.state.policy.mode != "auto"


def _pick_up(session: Session | None) -> str:
    if session is None:
        return ""
    return f"The session is saved: `coder-agent run --resume {session.id} ...` (or --continue) picks it up."
