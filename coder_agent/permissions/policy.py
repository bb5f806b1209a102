"""The permission policy: allow, ask or deny, from the session's mode, its rules and a resolved action.

`decide` reads top to bottom, and the first step that answers wins:

1. **Deny rules** (config, or "always reject" this session): deny if any one matches any part of the action:
   a path it touches, a simple command it runs (or a wrapper layer of one), a file a command writes, the host.
2. **Read-only and plan modes**: anything but reading, searching and fetching is denied.
3. **Containment**: a command that would leave the session's sandbox asks (outside full-auto: no rule lets one
   out unasked); a path outside the session's roots (cwd and additionalDirectories, symlinks resolved),
   a file a command visibly writes outside them, or a fetch of a local or private address asks, in every
   mode, unless a rule in the user's own config names that folder (absolute glob) or that host (exactly).
   So does a change to a file with other hard links (one may be outside). A file tool's change inside
   `.git/` or `.coder-agent/` asks too, outside full-auto, unless a rule in the
   user's own config names it (`edit:.git/hooks/**`): git runs what `.git/config` and hooks say; so does, with no
   rule to lift it, one inside the agent's own installation (`installation.own_places`: a `.venv` it runs from
   inside the project), which the agent itself runs and imports.
4. **Allow rules** (config, or "always allow" this session): allow if they cover every part: every path,
   every simple command of a command line the parser understood, the host, the MCP tool. A command whose
   arguments hold the words of a command deny rule (`strace rm f`), or that runs what its words do not show
   while command deny rules exist, is covered only by an exact rule.
5. **The mode**: reads and searches are allowed; `accept-edits` allows the built-in file edits; `auto` allows
   them too, and commands that run inside the sandbox (one that would run outside it asks); `full-auto`
   allows everything (in `auto` and `full-auto`, a command line the parser could not follow, a command whose
   arguments hold the words of a command deny rule, or one that runs what its words do not show (`git log
   --ext-diff`, awk's `system()` of a built string), still asks when command deny rules exist, since they could not
   be checked against it); anything else asks.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from coder_agent import installation
from coder_agent.permissions.modes import DEFAULT_MODE, NO_CHANGE_MODES, ModeName
from coder_agent.permissions.network import FetchTarget
from coder_agent.permissions.paths import Place
from coder_agent.permissions.rules import ANY, PATH_KINDS, Rule
from coder_agent.permissions.shell import CommandLine, SimpleCommand

if TYPE_CHECKING:
    from coder_agent.protocol.content import ToolKind

Decision = Literal["allow", "ask", "deny"]
QUIET_KINDS = frozenset({"read", "search", "think"})
READ_ONLY_KINDS = QUIET_KINDS | {"fetch"}
CHANGE_KINDS = frozenset({"edit", "delete", "move"})
SWITCH_THE_MODE = "switch the mode to allow changes and commands"
"""How a user lets what read-only refuses run (a run without an editor says it with its flags: `mode_hint`)."""
NO_CHANGE_REASONS: dict[str, str] = {
    "read-only": "the session is in read-only mode; {switch}",
    "plan": "the session is in plan mode: nothing is changed and no command runs until the user approves the plan "
    "(propose it with propose_plan)",
}
PROTECTED_FOLDERS = frozenset({".git", ".coder-agent"})
"""Changed by a file tool, these ask outside full-auto unless a rule in the user's own config names them."""


@dataclass(frozen=True)
class Action:
    """What a tool call is about to do, resolved: the policy decides on this alone."""

    kind: ToolKind
    places: tuple[Place, ...] = ()
    """The paths a file tool touches."""
    command: CommandLine | None = None
    """The analysed command line of run_command."""
    writes: tuple[Place, ...] = ()
    """Files the command visibly writes (redirections, tee, write flags), resolved."""
    target: FetchTarget | None = None
    """Where a fetch goes."""
    tool: str | None = None
    """For tools of MCP servers: the model-facing tool name, which rules match."""
    sandboxed: bool = False
    """For commands: it will run inside the session's sandbox."""
    outside_because: str | None = None
    """For commands: why it would run outside the sandbox, where the session has one (the model asked, with its
    reason)."""


@dataclass(frozen=True)
class Verdict:
    decision: Decision
    reason: str
    """Why, in words the user and the model can read."""
    by_mode: bool = False
    """It asks (or is refused) only because the mode says so (nothing about the call itself needs pointing out)."""


@dataclass
class PermissionPolicy:
    """Decides what a session's tool calls may do; holds the config's rules and the session's remembered ones."""

    cwd: Path
    mode: ModeName = DEFAULT_MODE
    allow: list[Rule] = field(default_factory=list)
    """From the user's config (a project file cannot add allow rules)."""
    deny: list[Rule] = field(default_factory=list)
    session_allow: list[Rule] = field(default_factory=list)
    session_deny: list[Rule] = field(default_factory=list)
    sandboxed: bool = False
    """The session's commands can run inside a sandbox (which `auto` needs)."""
    mode_hint: str = SWITCH_THE_MODE
    """How the user switches to a mode that allows what read-only refuses (a command line names its flag)."""

    def decide(self, action: Action) -> Verdict:
        if (rule := self._denying_rule(action)) is not None:
            return Verdict("deny", f"denied by the rule `{rule}`")
        if self.mode in NO_CHANGE_MODES and action.kind not in READ_ONLY_KINDS:
            return Verdict("deny", NO_CHANGE_REASONS[self.mode].format(switch=self.mode_hint), by_mode=True)
        if (reason := self._beyond_the_workspace(action) or self._protected(action)) is not None:
            return Verdict("ask", reason)
        if action.outside_because is not None and self.mode != "full-auto":
            return Verdict("ask", f"it would run outside the sandbox: {action.outside_because}")
        if (rules := self._allowing_rules(action)) is not None:
            return Verdict("allow", f"allowed by {', '.join(f'`{r}`' for r in rules)}")
        return self._by_mode(action)

    # ---- 1. deny --------------------------------------------------------------------------------

    def _denying_rule(self, action: Action) -> Rule | None:
        for rule in (*self.deny, *self.session_deny):
            if rule.applies_to(action.kind) and _matches(rule, action, for_deny=True):
                return rule
            if rule.applies_to("edit") and any(rule.matches_place(p, fold=True) for p in action.writes):
                return rule
        return None

    # ---- 3. containment -------------------------------------------------------------------------

    def _beyond_the_workspace(self, action: Action) -> str | None:
        for place in action.places:
            if not place.inside and not self._user_names(action.kind, place):
                return f"{place.real} is outside the workspace"
            if place.links > 1 and action.kind in CHANGE_KINDS and not self._user_names(action.kind, place):
                return f"{place.real} has {place.links} hard links: the same file may also be outside the workspace"
        for place in action.writes:
            if not place.inside and not self._user_names("edit", place):
                return f"the command writes {place.real}, outside the workspace"
            if place.links > 1 and not self._user_names("edit", place):
                return f"the command writes {place.real}, which has {place.links} hard links (one may be outside)"
        target = action.target
        if target is not None and target.local is not None and not self._user_names_host(target.host):
            return target.local
        return None

    def _user_names(self, kind: str, place: Place) -> bool:
        """Whether the user's own config names this outside path by an absolute glob."""
        return any(r.applies_to(kind) and r.absolute and r.matches_place(place) for r in self.allow)

    def _user_names_host(self, host: str) -> bool:
        """Whether the user's own config names this host exactly (no wildcard reaches a local address)."""
        return any(r.applies_to("fetch") and r.matches_host(host, explicit=True) for r in self.allow)

    def _protected(self, action: Action) -> str | None:
        """A file tool changing `.git/` or `.coder-agent/` outside full-auto: their files decide what git and the
        agent run, so an edit there would turn an allowed `git status` into any command."""
        if self.mode == "full-auto" or action.kind not in CHANGE_KINDS or action.tool is not None:
            return None
        own = installation.own_places()
        for place in action.places:
            if installation.inside(place.real, own):
                return (
                    f"{place.real} is part of coder-agent's own installation (its Python, packages or prompts): "
                    "what is written there would run in the agent itself"
                )
            name = next((part for part in place.relative.split("/") if part in PROTECTED_FOLDERS), None)
            if name is None or any(
                r.applies_to(action.kind) and name in r.pattern and r.matches_place(place) for r in self.allow
            ):
                continue
            return f"{place.relative} is in `{name}`, whose files decide what git or the agent runs"
        return None

    # ---- 4. allow -------------------------------------------------------------------------------

    def _allowing_rules(self, action: Action) -> list[Rule] | None:
        rules = [r for r in (*self.allow, *self.session_allow) if r.applies_to(action.kind)]
        if action.kind == "execute" and action.command is not None:
            line = action.command
            if not line.understood or not line.commands:
                return None
            used: list[Rule] = []
            unchecked = bool(self._command_deny_rules())
            for command in line.commands:
                exact_only = self._mentioning_rule(command) is not None or (unchecked and bool(command.hidden))
                rule = next((r for r in rules if r.covers(command) and (r.exact or not exact_only)), None)
                if rule is None:
                    return None
                used.append(rule)
            return list(dict.fromkeys(used))
        matching = [r for r in rules if _matches(r, action, for_deny=False)]
        return matching[:1] or None

    # ---- 5. the mode ----------------------------------------------------------------------------

    def _by_mode(self, action: Action) -> Verdict:
        if action.kind in QUIET_KINDS:
            return Verdict("allow", "reading and searching inside the workspace never ask")
        if self.mode == "full-auto":
            return self._unless_unchecked(action) or Verdict("allow", "full-auto mode")
        if self.mode == "auto":
            if action.kind == "edit" and action.tool is None:
                return Verdict("allow", "auto mode")
            if action.kind == "execute":
                if not action.sandboxed:
                    return Verdict("ask", "commands cannot be sandboxed in this session")
                return self._unless_unchecked(action) or Verdict("allow", "auto mode: inside the sandbox")
        if self.mode == "accept-edits" and action.kind == "edit" and action.tool is None:
            return Verdict("allow", "accept-edits mode")
        return Verdict("ask", f"{action.kind} asks in this mode", by_mode=True)

    def _unless_unchecked(self, action: Action) -> Verdict | None:
        """Asks for a command the deny rules could not be checked against; None when there is none."""
        line = action.command
        if line is not None and not line.understood and self._command_deny_rules():
            return Verdict(
                "ask", f"the command could not be checked against the deny rules: {'; '.join(line.problems)}"
            )
        for command in line.commands if line is not None else ():
            program = command.argv[0] if command.argv else "an assignment"
            if (rule := self._mentioning_rule(command)) is not None:
                return Verdict("ask", f"`{program}` is given the words of the deny rule `{rule}` and may run them")
            if command.hidden and self._command_deny_rules():
                why = "; ".join(command.hidden)
                return Verdict(
                    "ask", f"`{program}` runs what its words do not show ({why}): the deny rules cannot be checked"
                )
        return None

    def _command_deny_rules(self) -> list[Rule]:
        return [r for r in (*self.deny, *self.session_deny) if r.applies_to("execute")]

    def _mentioning_rule(self, command: SimpleCommand) -> Rule | None:
        """A command deny rule whose words are among the command's arguments (see `Rule.mentioned_in`)."""
        return next((r for r in self._command_deny_rules() if r.mentioned_in(command)), None)

    # ---- remembering ----------------------------------------------------------------------------

    def with_session_rules(self, allow: Iterable[Rule] = (), deny: Iterable[Rule] = ()) -> PermissionPolicy:
        """A copy with more remembered rules (to check what an "always" would do before offering it)."""
        return PermissionPolicy(
            self.cwd,
            self.mode,
            list(self.allow),
            list(self.deny),
            [*self.session_allow, *allow],
            [*self.session_deny, *deny],
            self.sandboxed,
            self.mode_hint,
        )

    def set_mode_hint(self, hint: str) -> None:
        """Say how the user switches the mode in read-only's refusals (a command line: its `--mode` flag)."""
        self.mode_hint = hint

    def add_rules(self, allow: Iterable[Rule], deny: Iterable[Rule]) -> None:
        """More rules with the config's standing (`coder-agent run --allow/--deny`)."""
        self.allow = [*self.allow, *allow]
        self.deny = [*self.deny, *deny]

    def restore_remembered(self, allow: Iterable[Rule], deny: Iterable[Rule]) -> None:
        """The rules a stored session remembered."""
        self.session_allow = list(allow)
        self.session_deny = list(deny)

    def forget_all(self) -> int:
        """Forget the rules remembered in this session; how many there were."""
        count = len(self.session_allow) + len(self.session_deny)
        self.session_allow.clear()
        self.session_deny.clear()
        return count

    def revoke(self, text: str) -> bool:
        """Forget one remembered rule, named as it is written; False if no such rule was remembered."""
        for rules in (self.session_allow, self.session_deny):
            for rule in list(rules):
                if str(rule) == text:
                    rules.remove(rule)
                    return True
        return False

    def remember(self, rules: Iterable[Rule], *, allow: bool) -> list[Rule]:
        """Add rules the user chose "always" for; returns those that were new."""
        target = self.session_allow if allow else self.session_deny
        added = [r for r in dict.fromkeys(rules) if r not in target]
        target.extend(added)
        return added


def _matches(rule: Rule, action: Action, *, for_deny: bool) -> bool:
    """Whether a rule of the action's kind matches it (deny: any part; allow: every part)."""
    if action.tool is not None:
        return rule.matches_tool(action.tool)
    if action.kind == "execute":
        line = action.command
        if line is None:
            return rule.pattern in ANY
        if rule.pattern in ANY:
            return True
        if for_deny:
            return any(rule.denies(i) for i in line.invocations) or any(rule.denies_command(c) for c in line.commands)
        return False  # allow rules for commands are checked per simple command in `_allowing_rules`
    if action.kind == "fetch" and action.target is not None:
        return rule.matches_host(action.target.host)
    if action.kind in PATH_KINDS and action.places:
        hits = [rule.matches_place(place, fold=for_deny) for place in action.places]
        return any(hits) if for_deny else all(hits)
    return rule.pattern in ANY or rule.pattern == "**"
