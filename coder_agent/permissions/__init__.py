"""The permission layer: what a tool call may do without asking, one mechanism per module.

* `policy` — the one small module that decides allow, ask or deny from (mode, rules, resolved action);
* `modes` — the session modes as plain data (`ModeName`, what each means, which are autonomous);
* `rules` — rule strings (`edit:src/**`, `execute:git status`, `execute:=…`, `fetch:host`) and how they match;
* `always` — what an "always" answer remembers, and the choices a prompt offers;
* `paths` — resolution (symlinks, `..`) and containment against the session's roots;
* `shell`, `words`, `programs` and `writes` — command lines parsed into simple commands (words unquoted as
  bash does), wrappers, interpreters, the files they write;
* `network` — where a fetch goes (resolved once, local and private addresses told apart).

Nothing here builds ACP objects (`acp.presentation` does) or imports tree-sitter before a command is checked.
"""

from coder_agent.permissions.always import ALLOWING, Choice, ChoiceKind, Offer, chosen, kind_of, offer, restore_rules
from coder_agent.permissions.modes import (
    AUTONOMOUS_MODES,
    DEFAULT_MODE,
    MODES,
    NO_CHANGE_MODES,
    SANDBOXED_MODES,
    ModeInfo,
    ModeName,
    available_modes,
    is_autonomous,
    is_mode,
)
from coder_agent.permissions.network import FetchTarget, TargetError, resolve_target
from coder_agent.permissions.paths import Place, resolve, still_there
from coder_agent.permissions.policy import Action, Decision, PermissionPolicy, Verdict
from coder_agent.permissions.rules import Rule
from coder_agent.permissions.shell import CommandLine, SimpleCommand, analyse

__all__ = [
    "ALLOWING",
    "AUTONOMOUS_MODES",
    "DEFAULT_MODE",
    "MODES",
    "NO_CHANGE_MODES",
    "SANDBOXED_MODES",
    "Action",
    "Choice",
    "ChoiceKind",
    "CommandLine",
    "Decision",
    "FetchTarget",
    "ModeInfo",
    "ModeName",
    "Offer",
    "PermissionPolicy",
    "Place",
    "Rule",
    "SimpleCommand",
    "TargetError",
    "Verdict",
    "analyse",
    "available_modes",
    "chosen",
    "is_autonomous",
    "is_mode",
    "kind_of",
    "offer",
    "resolve",
    "resolve_target",
    "restore_rules",
    "still_there",
]
