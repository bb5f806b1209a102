"""The session updates newer than the stable schema, as the tests hold the agent to them: sub-agent sessions (RFD
"Subagent Sessions") and plan operations (RFD "Plan Operations").

* `check_sdk_reading` - such an update as a client built on the SDK's unstable types reads it: valid against the
  draft's `SessionNotification`, every field sent under the RFD's name and the draft's, agreeing;
* `Subagents` - the sub-agent sessions of one connection, held to the RFD's lifecycle rules.

Their shapes in the RFDs' terms are in `rfd.schema.json`, checked with the rest by `conformance.Conformance`.
"""

from __future__ import annotations

import json
from typing import Any, Final

from jsonschema import Draft202012Validator

from tests.support.acp_schemas import as_object, check_def, load_schema, violation

RFD_UPDATES: Final = frozenset({"subagent_update", "plan_update", "plan_removed", "cursor_update"})
SDK_DRAFTED: Final = frozenset({"subagent_update", "plan_update", "plan_removed"})
"""The RFD updates the SDK's unstable schema has a draft of (checked as its types read them too)."""
RFD_CLIENT_METHODS: Final = frozenset({"lsp/servers", "lsp/request"})
"""Client methods newer than the schema (docs/rfds/lsp-proxy.mdx): checked against the RFD's shapes alone."""
TERMINAL_STATES: Final = frozenset({"completed", "failed", "cancelled", "disconnected"})

SDK_UNREADABLE: Final = {"state": ("state",), "capabilities.cancel": ("capabilities", "cancel")}
"""Where a `subagent_update` cannot carry both shapes (one key: the RFD's string or boolean, the SDK's object): the RFD
shape is sent, and the SDK's types read it as "not given", since the unstable schema marks both
`x-deserialize-default-on-error`; the check drops them before validating, after making sure of the mark."""
SDK_NAMES: Final = (("subagentSessionId", "sessionId"), ("name", "title"), ("task", "description"))
"""The same value under the RFD's name and the SDK draft's: both must be sent, and agree."""


def check_sdk_reading(params: object, msg: object) -> None:
    """An RFD update (sub-agent sessions, plan operations) as a client built on the SDK's unstable types reads it:
    valid against its `SessionNotification`, every field the RFD names also under the draft's name (the same
    value), and a field whose shapes collide read as "not given" (checked to be marked so)."""
    params = as_object(params)
    update = dict(as_object(params.get("update")))
    kind = update.get("sessionUpdate")
    where = "agent→client"
    if kind not in SDK_DRAFTED:
        return
    if kind == "subagent_update":
        for rfd, sdk in SDK_NAMES:
            if update.get(rfd) is not None and update.get(sdk) != update.get(rfd):
                raise violation(where, f"subagent_update: {rfd} is not sent as the SDK's {sdk} too", msg)
        for path in SDK_UNREADABLE.values():
            update = _read_as_unset(update, path, msg)
    elif kind == "plan_update":
        plan = as_object(update.get("plan"))
        if plan.get("planId") != plan.get("id"):
            raise violation(where, "plan_update: the plan's id is not sent as the SDK's planId too", msg)
    elif kind == "plan_removed" and update.get("planId") != update.get("id"):
        raise violation(where, "plan_removed: id is not sent as the SDK's planId too", msg)
    check_def(
        "SessionNotification",
        {**params, "update": update},
        what=f"{where} session/update params (as the SDK's unstable types read them)",
        path="$.params",
        msg=msg,
        unstable=True,
    )


def _read_as_unset(update: dict[str, Any], path: tuple[str, ...], msg: object) -> dict[str, Any]:
    """`update` without the value at `path` when the SDK's schema would not take it (it reads it as not given),
    after checking the schema says so (`x-deserialize-default-on-error`)."""
    defs = load_schema(unstable=True)["$defs"]
    holder, definition = update, defs["SubagentUpdate"]
    for key in path[:-1]:
        holder = as_object(holder.get(key))
        ref = next(b["$ref"] for b in definition["properties"][key]["anyOf"] if "$ref" in b)
        definition = defs[ref.rsplit("/", 1)[-1]]
    key = path[-1]
    if key not in holder or holder[key] is None:
        return update
    schema = definition["properties"][key]
    if not schema.get("x-deserialize-default-on-error"):
        raise violation("agent→client", f"subagent_update: the SDK's schema would refuse {'.'.join(path)}", msg)
    probe = Draft202012Validator({**schema, "$defs": defs})
    if probe.is_valid(holder[key]):
        return update
    copy = json.loads(json.dumps(update))
    target = copy
    for step in path[:-1]:
        target = target[step]
    del target[key]
    return copy


def update_kind(params: object) -> object:
    return as_object(as_object(params).get("update")).get("sessionUpdate")


class Subagents:
    """The sub-agent sessions of one connection, held to the RFD's lifecycle (docs/rfds/subagents.mdx):

    - a `subagent_update` is sent on the child's immediate parent; the first one for an id announces the child,
      and nothing bearing the child's session id comes before it;
    - after the child's terminal state (`completed`, `failed`, `cancelled`, `disconnected`) nothing more comes for
      it, and a request the agent made for it must have been answered, or cancelled by the agent, by then;
    - every child announced on a session is terminal before the agent answers that session's `session/prompt`
      (and `session/load`: the replay closes orphans as `disconnected`);
    - the client cancels a child alone (`session/cancel` with its id) only if its `capabilities.cancel` is true,
      and never prompts, loads or closes it.

    `session/load` makes the replay authoritative: the children of the loaded session are forgotten first.
    """

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}  # child id -> the session it was announced on
        self.state: dict[str, str] = {}  # child id -> its last state ("running" until told otherwise)
        self.cancellable: dict[str, bool] = {}
        self.sessions: set[str] = set()  # sessions the client opened (session/new answered, loaded, resumed)
        self._prompts: dict[Any, tuple[str, str]] = {}  # client request id -> (method, session id)
        self._requests: dict[Any, str] = {}  # agent request id -> the child it was made for
        self._agent_cancelled: set[Any] = set()

    def children_of(self, session_id: str) -> list[str]:
        return [child for child, parent in self.parent.items() if parent == session_id]

    def client_call(self, method: str, rid: Any, params: Any, msg: dict[str, Any]) -> None:
        session = as_object(params).get("sessionId")
        if not isinstance(session, str):
            return
        if session in self.parent:
            if method == "session/cancel":
                if not self.cancellable.get(session):
                    raise violation("client→agent", "session/cancel for a sub-agent not advertised cancellable", msg)
                return
            raise violation("client→agent", f"{method} with a sub-agent's session id (only session/cancel)", msg)
        if method in ("session/load", "session/resume"):
            self.sessions.add(session)
            if method == "session/load":
                for child in self.children_of(session):
                    del self.parent[child]
                    self.state.pop(child, None)
                    self.cancellable.pop(child, None)
        if method in ("session/prompt", "session/load") and rid is not None:
            self._prompts[rid] = (method, session)

    def agent_call(self, method: str, rid: Any, params: Any, msg: dict[str, Any]) -> None:
        params = as_object(params)
        if method == "$/cancel_request":
            self._agent_cancelled.add(params.get("requestId"))
            return
        session = params.get("sessionId")
        if not isinstance(session, str):
            return
        update = as_object(params.get("update"))
        if method == "session/update" and update.get("sessionUpdate") == "subagent_update":
            self._subagent_update(session, update, msg)
        if session in self.parent:
            if self.state.get(session) in TERMINAL_STATES:
                raise violation("agent→client", f"{method} for sub-agent {session} after its terminal state", msg)
            if rid is not None:
                self._requests[rid] = session
        elif self.sessions and session not in self.sessions:
            raise violation("agent→client", f"{method} for session {session}, never opened nor announced", msg)

    def _subagent_update(self, session: str, update: dict[str, Any], msg: dict[str, Any]) -> None:
        child = str(update.get("subagentSessionId"))
        known = self.parent.get(child)
        if known is None:
            if child in self.sessions:
                raise violation("agent→client", f"subagent_update announces {child}, a session of the client", msg)
            self.parent[child] = session
            self.state[child] = "running"
        elif known != session:
            raise violation("agent→client", f"subagent_update for {child} on {session}, not its parent {known}", msg)
        elif self.state.get(child) in TERMINAL_STATES:
            raise violation("agent→client", f"subagent_update for {child} after its terminal state", msg)
        capabilities = update.get("capabilities")
        if isinstance(capabilities, dict):
            self.cancellable[child] = capabilities.get("cancel") is True
        state = update.get("state")
        if state is not None:
            if state in TERMINAL_STATES:
                pending = [r for r, c in self._requests.items() if c == child and r not in self._agent_cancelled]
                if pending:
                    raise violation("agent→client", f"{child} ends while its request(s) {pending} are unanswered", msg)
            self.state[child] = str(state)

    def agent_answered(self, rid: Any, result: Any, msg: dict[str, Any]) -> None:
        """The agent answered a client request: a session/new opens a session; a prompt or a load ends with every
        child announced on its session terminal."""
        session_id = as_object(result).get("sessionId")
        if isinstance(session_id, str):
            self.sessions.add(session_id)
        method, session = self._prompts.pop(rid, ("", ""))
        if not method:
            return
        running = [child for child in self.children_of(session) if self.state.get(child) not in TERMINAL_STATES]
        if running:
            problem = f"{method} answered while sub-agents {running} have no terminal state"
            raise violation("agent→client", problem, msg)

    def client_answered(self, rid: Any) -> None:
        self._requests.pop(rid, None)
