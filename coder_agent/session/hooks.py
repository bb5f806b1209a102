"""`Hooks`: the commands of `[hooks]`, run on a session's events — the user's own, and a project file's once the user
trusts them.

Events, and what each hook gets on stdin (one JSON object; every one has `event`, `session_id`, `cwd`, `mode` and
`timestamp`):

* `session_start` — once per opened session, before its first prompt runs: `model`.
* `before_tool` — a tool call the model made, after it is shown and before its permission is asked: `tool`, `kind`,
  `title`, `call_id`, `input` (the call's arguments). A hook that exits non-zero (or times out, or cannot start)
  blocks the call: the model reads its stderr, and the call fails without anyone being asked.
* `after_tool` — a call that ran: the same, with `status` (`completed` or `failed`) and `output` (what the model
  reads). A hook that exits non-zero adds its stderr to what the model reads.
* `after_edit` — an edit tool's call that changed files: the same, with `files` (their paths). As `after_tool`; a
  file a hook changed (a formatter) is named to the model, to read again before editing it.
* `turn_end` — a prompt's turn ended: `stop_reason`, `answer` (the model's last message).
* `notification` — the agent waits for the user or tells them something: `kind` (`permission`, `question` or
  `notice`), `title`, `message`. Run in the background, never waited on.

Every hook runs through the one path the agent runs its own commands on (`LocalBridge.run_command`, as the checks
after an edit): a local process group in the session's folder, inside the session's sandbox whatever the mode
(where it has one), with the environment commands get (no keys), killed after its `timeout`, its output capped.
Only its stderr is read (stdout goes to /dev/null); key values are redacted from the JSON it gets.

A project file's hooks (`Config.project_hooks`) are repository content: at the start of the session's first turn
the user is asked once, the question naming each command, and a yes is remembered for that folder and those hooks
(`HookTrust`); hooks that changed are asked about again, and so are hooks trusted inside the walls where the session
has none. Where no one can be asked (a run without a terminal), they
do not run, and a notice says so once.
"""

from __future__ import annotations

import datetime
import fnmatch
import json
import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anyio.abc import TaskGroup

from coder_agent import nofollow, secrets
from coder_agent.config.hooks import HOOK_EVENTS, TOOL_EVENTS, HookCommand, HookEvent, HooksConfig, ProjectHooks
from coder_agent.permissions import Choice
from coder_agent.protocol.content import ContentToolCallContent, TextContent, ToolCallContent
from coder_agent.protocol.schema import ToolCallStart, ToolCallUpdate
from coder_agent.session.bridge import BridgeError, NoOneToAsk
from coder_agent.session.hook_trust import HookTrust
from coder_agent.session.local_bridge import LocalBridge

if TYPE_CHECKING:
    from coder_agent.permissions import PermissionPolicy
    from coder_agent.sandbox.command import CommandSandbox
    from coder_agent.session.redacting_bridge import RedactingBridge

log = logging.getLogger(__name__)

REPORT_CHARS = 4_000
"""A hook's stderr the model reads at most (its start and end)."""
FIELD_CHARS = 100_000
"""A text of the event longer than this reaches the hook cut in its middle."""
ONLY_STDERR = "exec >/dev/null\n"
"""Put before a hook's command line: what it writes on stdout is dropped, its stderr is what is read."""
TRUST, SKIP = "trust-hooks", "skip-hooks"
QUESTION = "project_hooks"
"""The name of the call that asks whether a project's hooks may run (no tool of the model's)."""


@dataclass(frozen=True)
class HookRun:
    """How one hook ended."""

    hook: HookCommand
    event: HookEvent
    exit_code: int | None
    stderr: str
    timed_out: bool = False
    problem: str | None = None
    """Why it could not start."""

    @property
    def passed(self) -> bool:
        return self.problem is None and not self.timed_out and self.exit_code == 0

    def report(self) -> str:
        """What went wrong, in a sentence, with the hook's stderr."""
        head = f"The {self.event} hook `{self.hook.command}`"
        if self.problem is not None:
            return f"{head} could not start: {self.problem}"
        if self.timed_out:
            return f"{head} timed out after {self.hook.timeout:g} s and was killed."
        text = _middle(self.stderr.strip(), REPORT_CHARS) or "(nothing on stderr)"
        return f"{head} exited with {self.exit_code}:\n{text}"


class Hooks:
    """One session's hooks: the user's (`user`), and the project file's (`project`) once trusted."""

    def __init__(
        self,
        user: HooksConfig,
        project: ProjectHooks | None,
        *,
        session_id: str,
        cwd: Path,
        policy: PermissionPolicy,
        bridge: RedactingBridge,
        tasks: TaskGroup,
        sandbox: CommandSandbox | None,
        trust: HookTrust | None = None,
    ) -> None:
        self.user = user
        self.project = project
        self.session_id = session_id
        self.cwd = cwd
        self.policy = policy
        self.bridge = bridge
        self.tasks = tasks
        self.sandbox = sandbox
        self.trust = trust or HookTrust()
        self.project_trusted: bool | None = None
        """Whether the project's hooks run (None: not settled yet; they are settled at the first turn)."""
        self.started = False

    @classmethod
    def wanted(cls, user: HooksConfig, project: ProjectHooks | None) -> bool:
        return not user.empty or project is not None

    # ---- events --------------------------------------------------------------------------------

    async def session_start(self, model: str | None) -> None:
        """Once per session, before its first prompt: settle the project's hooks, then run `session_start`."""
        if self.started:
            return
        self.started = True
        if self.project is not None and self.project_trusted is None:
            self.project_trusted = await self._settle_trust(self.project)
        for run in await self._run_all("session_start", {"model": model}):
            await self._told(run)

    async def before_tool(self, call: Mapping[str, Any]) -> str | None:
        """None when the call may go on; else what the model reads (the first hook that blocked it)."""
        for hook in self._hooks("before_tool", str(call.get("tool", ""))):
            run = await self._run(hook, "before_tool", call)
            if not run.passed:
                return f"Blocked by a hook: {run.report()}\nDo not retry this call as it is."
        return None

    async def after_tool(self, call: Mapping[str, Any]) -> list[str]:
        """What the model reads besides the call's result: the hooks that did not pass."""
        return [run.report() for run in await self._run_all("after_tool", call, str(call.get("tool", "")))]

    async def after_edit(self, call: Mapping[str, Any], files: Mapping[Path, str | None]) -> list[str]:
        """As `after_tool`, for an edit that changed `files` (path → the text the edit left, None: deleted); a file a
        hook changed is named, so the model reads it again before its next edit."""
        facts = {**call, "files": [str(path) for path in files]}
        reports = [run.report() for run in await self._run_all("after_edit", facts, str(call.get("tool", "")))]
        if self._hooks("after_edit", str(call.get("tool", ""))):
            for path, left in files.items():
                now = _text_of(path)
                if now is not None and now != left:
                    reports.append(
                        f"The after_edit hooks changed {path} after your edit: read it again before editing it."
                    )
        return reports

    async def turn_end(self, stop_reason: str, answer: str) -> None:
        for run in await self._run_all("turn_end", {"stop_reason": stop_reason, "answer": answer}):
            await self._told(run)

    def notify(self, kind: str, title: str, message: str | None) -> None:
        """The user is waited on or told something: run `notification` in the background (never waited on; a
        failure is logged, not told, which would notify again)."""
        if not self._hooks("notification"):
            return

        async def run() -> None:
            for hook in self._hooks("notification"):
                done = await self._run(hook, "notification", {"kind": kind, "title": title, "message": message})
                if not done.passed:
                    log.warning("session %s: %s", self.session_id, done.report())

        self.tasks.start_soon(run)

    # ---- running -------------------------------------------------------------------------------

    def _hooks(self, event: HookEvent, tool: str | None = None) -> list[HookCommand]:
        hooks = list(self.user.of(event))
        if self.project is not None and self.project_trusted:
            hooks += self.project.hooks.of(event)
        if tool is None or event not in TOOL_EVENTS:
            return hooks
        return [hook for hook in hooks if not hook.tools or any(fnmatch.fnmatchcase(tool, g) for g in hook.tools)]

    async def _run_all(self, event: HookEvent, facts: Mapping[str, Any], tool: str | None = None) -> list[HookRun]:
        """Run every hook of the event in order; those that did not pass."""
        runs = [await self._run(hook, event, facts) for hook in self._hooks(event, tool)]
        return [run for run in runs if not run.passed]

    async def _run(self, hook: HookCommand, event: HookEvent, facts: Mapping[str, Any]) -> HookRun:
        payload = {
            "event": event,
            "session_id": self.session_id,
            "cwd": str(self.cwd),
            "mode": self.policy.mode,
            "timestamp": datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds"),
            **facts,
        }
        data = json.dumps(secrets.redact_data(_capped(payload)), ensure_ascii=False, default=str).encode()
        try:
            result = await LocalBridge().run_command(
                ONLY_STDERR + hook.command,
                cwd=self.cwd,
                timeout=hook.timeout,
                show=_shown_nowhere,
                sandbox=self.sandbox,
                stdin=data,
            )
        except BridgeError as exc:
            return HookRun(hook, event, None, "", problem=str(exc))
        return HookRun(hook, event, result.exit_code, secrets.redact(result.output), timed_out=result.timed_out)

    async def _told(self, run: HookRun) -> None:
        await self.bridge.notice("warning", f"A {run.event} hook failed", run.report())

    # ---- trusting a project's hooks ------------------------------------------------------------

    async def _settle_trust(self, project: ProjectHooks) -> bool:
        """Whether the project's hooks run: trusted before (these very hooks, in this folder), or now."""
        walled = self.sandbox is not None
        if self.trust.trusted(project, walled=walled):
            return True
        call_id = f"hooks_{uuid.uuid4().hex[:12]}"
        title = f"Run the hooks of {project.file}?"
        content: list[ToolCallContent] = [_text(_listing(project, sandboxed=walled))]
        choices = [
            Choice("allow_always", "Trust them (remembered here until they change)", id=TRUST),
            Choice("reject_once", "Do not run them", id=SKIP),
        ]
        start = ToolCallStart(tool_call_id=call_id, title=title, name=QUESTION, kind="execute", content=content)
        await self.bridge.update(start)
        request = ToolCallUpdate(tool_call_id=call_id, title=title, kind="execute", status="pending", content=content)
        why = ""
        try:
            answer = await self.bridge.request_permission(request, choices)
        except NoOneToAsk:
            answer, why = None, "no one can be asked here (no terminal or editor); they run once you trust them"
        except BridgeError as exc:
            answer, why = None, f"the question could not be asked: {exc}"
        trusted = answer == TRUST
        if trusted:
            try:
                self.trust.remember(project, walled=walled)
            except OSError as exc:
                log.warning("the trust in %s's hooks could not be remembered: %s", project.file, exc)
        shown = "Trusted: they run." if trusted else "Not run."
        status: Any = "completed" if trusted else "failed"
        await self.bridge.update(ToolCallUpdate(tool_call_id=call_id, status=status, content=[*content, _text(shown)]))
        if why:
            await self.bridge.notice("info", "The project's hooks were not run", f"{project.file}: {why}.")
        return trusted


def _listing(project: ProjectHooks, *, sandboxed: bool) -> str:
    where = "inside the sandbox" if sandboxed else "with your account's rights (commands cannot be sandboxed here)"
    lines = [f"{project.file} sets commands to run on this session's events, {where}:"]
    for event in HOOK_EVENTS:
        for hook in project.hooks.of(event):
            tools = f" (for {', '.join(hook.tools)})" if hook.tools else ""
            lines.append(f"- {event}{tools}: `{hook.command}`")
    lines.append("They come with the repository: run them only if you trust it.")
    return "\n".join(lines)


def _text(text: str) -> ContentToolCallContent:
    return ContentToolCallContent(content=TextContent(text=text))


def _text_of(path: Path) -> str | None:
    """The file's text, or None: a path that is not a regular file (a named pipe something swapped in) is not waited
    on, and its last part is not followed."""
    try:
        return nofollow.read_bytes(nofollow.leaf(path)).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _capped(value: Any) -> Any:
    """The event with every long text cut in its middle."""
    if isinstance(value, str):
        return _middle(value, FIELD_CHARS)
    if isinstance(value, Mapping):
        return {str(k): _capped(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_capped(v) for v in value]
    return value


def _middle(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[… {len(text) - 2 * half} characters left out …]\n{text[-half:]}"


async def _shown_nowhere(content: ToolCallContent) -> None:
    return None
