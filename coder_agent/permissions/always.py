"""What an "always" answer remembers, and the choices a permission prompt offers (as plain data).

An "always" remembers exactly what the prompt showed, never more, and is offered only when the rule it
names would let this same call through next time:

* a file tool → the folder of the file (`edit:src/**`, the session folder's `edit:**`); never an "always
  allow" for a path outside the workspace (only the user's config can grant that);
* a command line → one rule per simple command not already allowed: a word prefix (`execute:git status`,
  `execute:pytest`) for ordinary programs; the exact command as written (`execute:=python3 -c '…'`) for
  shells, interpreters, wrappers, `NAME=value` assignments, broad programs (`rm`, `curl`, …) and any
  command that writes files through redirections or flags. A line the parser cannot follow gets no "always";
* a fetch → its host (`fetch:docs.python.org`), and no "always allow" for a local or private address;
* an MCP tool → that tool (`other:mcp__github__create_issue`);
* an MCP server's sampling request → that server's requests (`other:sampling/github`).

The option's label states the rule. `acp.presentation` turns `Choice`s into ACP permission options.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from coder_agent.globs import escape, unescape
from coder_agent.permissions.policy import Action, PermissionPolicy
from coder_agent.permissions.programs import remembered_as_prefix
from coder_agent.permissions.rules import PATH_KINDS, Rule, folder_rule
from coder_agent.visible import visible

SAMPLING_PREFIX = "sampling/"
"""Sampling requests of MCP servers are permitted as the tool `sampling/<server>`."""
MAX_EXACT_RULE = 300
"""Longer (or multi-line) commands are not offered an "always": the label must show the whole rule."""
NOUNS = {"read": "reads", "edit": "edits", "search": "searches", "delete": "deletes", "move": "moves"}

ChoiceKind = Literal["allow_once", "allow_always", "reject_once", "reject_always"]
ALLOWING: frozenset[ChoiceKind] = frozenset({"allow_once", "allow_always"})
REJECTION: ChoiceKind = "reject_once"


@dataclass(frozen=True)
class Choice:
    """One option of a permission prompt: its kind, the label the user reads, for an "always" the rules it remembers
    (as the config writes them), and its id when a prompt offers two options of one kind (by default, its kind)."""

    kind: ChoiceKind
    label: str
    rules: tuple[str, ...] = ()
    id: str = ""

    @property
    def option_id(self) -> str:
        """What the answer names (`optionId` on the wire)."""
        return self.id or self.kind


@dataclass(frozen=True)
class Offer:
    """The rules each "always" answer would remember (empty: that answer is not offered), and the choices."""

    allow: tuple[Rule, ...]
    deny: tuple[Rule, ...]

    def choices(self) -> list[Choice]:
        options = [Choice("allow_once", "Allow")]
        if self.allow:
            allow = tuple(str(rule) for rule in self.allow)
            options.append(Choice("allow_always", f"Always allow {describe(self.allow)}", allow))
        options.append(Choice("reject_once", "Reject"))
        if self.deny:
            deny = tuple(str(rule) for rule in self.deny)
            options.append(Choice("reject_always", f"Always reject {describe(self.deny)}", deny))
        return options

    def rules(self, kind: str) -> tuple[Rule, ...]:
        return self.allow if kind == "allow_always" else self.deny if kind == "reject_always" else ()


def chosen(choices: Sequence[Choice], answer: object) -> str:
    """The id of the offered choice an answer names. Anything else is a rejection: an id that was never
    offered (`"deny"`, `""`, an "always" this prompt did not offer, an id of an earlier prompt), or not a
    string at all. An answer is never read for what it looks like, only matched against what was offered."""
    return next((choice.option_id for choice in choices if choice.option_id == answer), REJECTION)


def kind_of(choices: Sequence[Choice], answer: str) -> ChoiceKind:
    """The kind of the choice with this id (a rejection for an id not offered)."""
    return next((choice.kind for choice in choices if choice.option_id == answer), REJECTION)


def offer(policy: PermissionPolicy, action: Action) -> Offer:
    """What "always allow" and "always reject" would remember for this action (no "always" whose rule holds
    characters its label could not show: escapes, zero-width or bidirectional ones)."""
    if action.outside_because is not None:
        return Offer((), ())  # leaving the sandbox is asked about each time
    allow, deny = _candidates(policy, action)
    if any(visible(str(rule)) != str(rule) for rule in (*allow, *deny)):
        return Offer((), ())
    if allow and policy.with_session_rules(allow=allow).decide(action).decision != "allow":
        allow = ()
    if deny and policy.with_session_rules(deny=deny).decide(action).decision != "deny":
        deny = ()
    return Offer(allow, deny)


def _candidates(policy: PermissionPolicy, action: Action) -> tuple[tuple[Rule, ...], tuple[Rule, ...]]:
    if action.tool is not None:
        rule = Rule(action.kind, action.tool)
        return (rule,), (rule,)
    if action.kind == "execute":
        rules = _command_rules(policy, action)
        return rules, rules
    if action.kind == "fetch" and action.target is not None:
        rule = Rule("fetch", escape(action.target.host))
        return (() if action.target.local else (rule,)), (rule,)
    if action.kind in PATH_KINDS and action.places:
        rules = tuple(dict.fromkeys(folder_rule(action.kind, place) for place in action.places))
        inside = all(place.inside for place in action.places)
        return (rules if inside else ()), rules
    rule = Rule(action.kind, "*")
    return (rule,), (rule,)


def _command_rules(policy: PermissionPolicy, action: Action) -> tuple[Rule, ...]:
    """Per simple command not yet allowed: its word prefix, or the exact command where a prefix would be too broad."""
    line = action.command
    if line is None or not line.understood:
        return ()
    allowed = [r for r in (*policy.allow, *policy.session_allow) if r.applies_to("execute")]
    rules: list[Rule] = []
    for command in line.commands:
        if any(rule.covers(command) for rule in allowed):
            continue
        prefix = None if command.exact_only or command.wrapped else remembered_as_prefix(command.argv)
        if prefix is not None:
            rules.append(Rule("execute", shlex.join(prefix)))
            continue
        origin = command.origin
        if "\n" in origin or len(origin) > MAX_EXACT_RULE:
            return ()
        rules.append(Rule("execute", f"={origin}"))
    return tuple(dict.fromkeys(rules))


def describe(rules: tuple[Rule, ...]) -> str:
    """The rules in words: "`git status …` commands", "exactly `python3 -c 'x'`", "edits in `src/`"."""
    return " and ".join(_describe(rule) for rule in rules)


def _describe(rule: Rule) -> str:
    if rule.kind == "execute":
        return f"exactly `{rule.pattern[1:]}`" if rule.exact else f"`{rule.pattern} …` commands"
    if rule.kind == "fetch":
        return f"fetches from {unescape(rule.pattern)}"
    if rule.pattern.startswith(SAMPLING_PREFIX):
        return f"completions for the MCP server `{rule.pattern.removeprefix(SAMPLING_PREFIX)}`"
    if rule.pattern.startswith("mcp__"):
        return f"`{rule.pattern}` calls"
    if rule.kind in PATH_KINDS:
        where = "the workspace" if rule.pattern == "**" else f"`{unescape(rule.pattern.removesuffix('/**'))}/`"
        return f"{NOUNS[rule.kind]} in {where}"
    return f"{rule.kind} calls"


def restore_rules(texts: list[str], *, allow: bool) -> list[Rule]:
    """A stored session's remembered rules, without those an "always" could not have made (older versions
    remembered broader ones: `execute:bash`, `fetch:*`) or that no longer parse."""
    rules = []
    for text in texts:
        try:
            rule = Rule.parse(text)
        except ValueError:
            continue
        if not allow or _restorable(rule):
            rules.append(rule)
    return rules


def _restorable(rule: Rule) -> bool:
    if rule.kind == "execute":
        if rule.exact:
            return True
        return rule.pattern not in ("", "*") and remembered_as_prefix(rule.words) == rule.words
    if rule.kind == "fetch":
        return rule.pattern != "" and escape(unescape(rule.pattern)) == rule.pattern
    return True
