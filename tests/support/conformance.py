"""ACP wire conformance: validate every JSON-RPC message a test sends or receives against the official ACP schema.

This module owns the test-side reading of ``tests/acp_schema/schema.json`` (ACP protocol v1, JSON Schema draft
2020-12, copied unchanged from ``@agentclientprotocol/sdk``; see ``tests/acp_schema/SOURCE.md``) and of its unstable
companion ``schema.unstable.json`` (the same release with the features not yet stable: ``session/fork``,
``PromptResponse.usage``, ``systemPrompt``...). Every message is checked against both: the stable schema where it
has the method, and the unstable one where it does, so a field newer than the stable schema is still checked for
its shape (features newer than both follow their RFDs, checked by the tests themselves). The schema's root
``anyOf`` accepts almost anything, so the precise check is per method: every ``$defs`` entry that is a method's params
or result carries ``x-method`` (the wire name) and ``x-side`` (who handles it: ``agent``, ``client`` or ``protocol``
for ``$/cancel_request``). From those we build a ``(side, kind, method) -> def`` table once.

* :func:`load_schema` - the parsed schema, cached.
* :func:`method_table` - ``(x-side, kind, method) -> def name``, kind being ``Request``/``Response``/``Notification``.
* :func:`validate` - validate one instance against one ``$defs`` entry, raising ``AssertionError``.
* :class:`Conformance` - a stateful checker for one connection: JSON-RPC envelope, per-method params, and responses
  matched to their request by id (per direction) so ``result`` is checked against the right ``...Response`` def.

Capabilities: once the client's ``initialize`` has been seen, every agent→client call is also checked against what
that client advertised (ACP: an agent MUST NOT call what the client did not offer): ``fs/*`` against ``fs``,
``terminal/*`` against ``terminal``, ``elicitation/create`` against the mode in ``elicitation``,
``elicitation/complete`` against ``elicitation.url`` and the URL elicitations actually sent, the ``notice``,
``compaction_update`` and ``compaction_summary_chunk`` updates against ``session.notices`` and ``session.compaction``.
A capability counts only when it has the schema's shape (``true`` for flags, an object for the others), as the
schema's default-on-error says.

Strictness: agent→client traffic is always strict (it is what the agent under test produced), including rejecting
non-extension methods the client could not know. Client→agent traffic is strict by default, tolerates unknown
methods (the agent must answer those with -32601), and can be made lenient with ``strict=False`` for fuzz tests that
send deliberately broken frames: then request ids are only recorded so the agent's answers can still be matched.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any, Final, Literal, TypeGuard

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match

__all__ = ["SCHEMA_PATH", "Conformance", "def_for", "load_schema", "method_table", "validate"]

SCHEMA_PATH: Final = Path(__file__).resolve().parent.parent / "acp_schema" / "schema.json"
UNSTABLE_SCHEMA_PATH: Final = SCHEMA_PATH.with_name("schema.unstable.json")
RFD_SCHEMA_PATH: Final = SCHEMA_PATH.with_name("rfd.schema.json")
"""Session updates newer than the schema (sub-agent sessions, plan operations), written from their RFDs."""
RFD_UPDATES: Final = frozenset({"subagent_update", "plan_update", "plan_removed", "cursor_update"})
RFD_CLIENT_METHODS: Final = frozenset({"lsp/servers", "lsp/request"})
"""Client methods newer than the schema (docs/rfds/lsp-proxy.mdx): checked against the RFD's shapes alone."""
TERMINAL_STATES: Final = frozenset({"completed", "failed", "cancelled", "disconnected"})

Side = Literal["agent", "client"]
Kind = Literal["Request", "Response", "Notification"]

_KINDS: Final[tuple[Kind, ...]] = ("Request", "Response", "Notification")
_REQUEST_KEYS: Final = frozenset({"jsonrpc", "id", "method", "params"})
_NOTIFICATION_KEYS: Final = frozenset({"jsonrpc", "method", "params"})
_RESPONSE_KEYS: Final = frozenset({"jsonrpc", "id", "result", "error"})
_MAX_SHOWN: Final = 500

RequestId = str | int


@cache
def load_schema(unstable: bool = False) -> dict[str, Any]:
    """The parsed ACP schema, or its unstable companion (cached; treat as read-only)."""
    with (UNSTABLE_SCHEMA_PATH if unstable else SCHEMA_PATH).open(encoding="utf-8") as f:
        schema: dict[str, Any] = json.load(f)
    return schema


@cache
def method_table(unstable: bool = False) -> dict[tuple[str, Kind, str], str]:
    """``(x-side, kind, method) -> def name`` for every ``$defs`` entry carrying ``x-method``, built once."""
    table: dict[tuple[str, Kind, str], str] = {}
    for name, definition in load_schema(unstable)["$defs"].items():
        method = definition.get("x-method")
        if method is None:
            continue
        kind = next((k for k in _KINDS if name.endswith(k)), None)
        if kind is None:
            raise RuntimeError(f"schema def {name} has x-method {method!r} but no Request/Response/Notification suffix")
        key = (definition["x-side"], kind, method)
        if key in table:
            raise RuntimeError(f"schema defs {table[key]} and {name} both claim {key}")
        table[key] = name
    return table


def def_for(method: str, handler: Side, kind: Kind, *, unstable: bool = False) -> str | None:
    """The def for ``method`` of ``kind`` when handled by ``handler`` (``protocol`` methods match either side)."""
    table = method_table(unstable)
    return table.get((handler, kind, method)) or table.get(("protocol", kind, method))


@cache
def load_rfd_schema() -> dict[str, Any]:
    """The RFD shapes (cached; treat as read-only)."""
    with RFD_SCHEMA_PATH.open(encoding="utf-8") as f:
        schema: dict[str, Any] = json.load(f)
    return schema


def _rfd_def(method: str, kind: Kind) -> str:
    """The RFD schema's def of a client method's params or result (`lsp/servers` -> `LspServersRequest`)."""
    name = "".join(part.capitalize() for part in method.replace("/", "_").split("_"))
    return f"{name}{kind}"


@cache
def _validator(def_name: str, unstable: bool = False) -> Draft202012Validator:
    rfd = load_rfd_schema()["$defs"]
    if def_name in rfd:
        return Draft202012Validator({"$ref": f"#/$defs/{def_name}", "$defs": rfd})
    defs = load_schema(unstable)["$defs"]
    if def_name not in defs:
        path = UNSTABLE_SCHEMA_PATH if unstable else SCHEMA_PATH
        raise KeyError(f"no $defs entry named {def_name!r} in {path.name}")
    return Draft202012Validator({"$ref": f"#/$defs/{def_name}", "$defs": defs})


def _show(msg: object) -> str:
    try:
        text = json.dumps(msg, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):  # circular structures and the like
        text = repr(msg)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


def _is_discriminator_miss(error: ValidationError) -> bool:
    """True when a oneOf/anyOf branch failed on what selects it: a tag's const/enum, or the value's own type."""
    depth = len(error.relative_path)
    return (error.validator in ("const", "enum") and depth <= 1) or (error.validator == "type" and depth == 0)


def _explain(error: ValidationError) -> tuple[str, str]:
    """JSON path and message for ``error``, looking inside oneOf/anyOf for the branch the instance was meant for."""
    while error.validator in ("oneOf", "anyOf") and error.context:
        branches: dict[Any, list[ValidationError]] = {}
        for sub in error.context:
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        plausible = [errs for errs in branches.values() if not any(_is_discriminator_miss(e) for e in errs)]
        if len(plausible) == 1:  # e.g. the SessionUpdate variant whose "sessionUpdate" tag matched
            error = best_match(plausible[0]) or error
            continue
        tags = [e for e in error.context if e.validator in ("const", "enum") and len(e.relative_path) <= 1]
        tagged = {e.relative_schema_path[0] for e in tags}
        if not plausible and tagged == branches.keys():  # every variant is tagged and none matched: list the tags
            allowed: list[Any] = []
            for tag in tags:
                values = [tag.validator_value] if tag.validator == "const" else list(tag.validator_value)
                allowed += [v for v in values if v not in allowed]
            return tags[0].json_path, f"{tags[0].instance!r} is not one of {allowed}"
        break
    return error.json_path, error.message


def _check_def(def_name: str, instance: object, *, what: str, path: str, msg: object, unstable: bool = False) -> None:
    error = best_match(_validator(def_name, unstable).iter_errors(instance))
    if error is None:
        return
    json_path, problem = _explain(error)
    where = path + json_path[1:]  # json_path is relative to `instance` and starts with "$"
    schema = " (unstable schema)" if unstable else ""
    raise AssertionError(
        f"ACP conformance: {what} does not match {def_name}{schema}\n  at {where}: {problem}\n  message: {_show(msg)}"
    )


def _check_both(
    stable: str | None, unstable: str | None, instance: object, *, what: str, path: str, msg: object
) -> None:
    """Check against the stable def and the unstable one, where each schema has it."""
    if stable is not None:
        _check_def(stable, instance, what=what, path=path, msg=msg)
    if unstable is not None:
        _check_def(unstable, instance, what=what, path=path, msg=msg, unstable=True)


def validate(def_name: str, instance: object, *, unstable: bool = False) -> None:
    """Validate ``instance`` against ``$defs[def_name]``; raise ``AssertionError`` naming the failing JSON path."""
    _check_def(def_name, instance, what=def_name, path="$", msg=instance, unstable=unstable)


def _is_request_id(value: object) -> TypeGuard[RequestId]:
    """A usable request id: a string or an integer (JSON-RPC discourages null, and the schema has no floats)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


class Conformance:
    """Checks one ACP connection's traffic, in order, in both directions.

    Feed every frame as it crosses the wire (already ``json.loads``-ed): :meth:`check_client_to_agent` for what the
    test client writes to the agent's stdin, :meth:`check_agent_to_client` for what the agent writes to stdout.
    Each raises ``AssertionError`` on the first violation. Outstanding requests are tracked per direction so each
    response is validated against the ``...Response`` def of the method it answers.
    """

    def __init__(self) -> None:
        # id -> methods awaiting an answer, oldest first (a list only so lenient mode can survive duplicate ids:
        # an error answer is taken to reject the newest of them, a result to answer the oldest);
        # the method is None when it is unknown to the schema (extension or garbage): answers get envelope checks only.
        self._to_agent: dict[RequestId, list[str | None]] = {}  # sent by the client, the agent must answer
        self._to_client: dict[RequestId, list[str | None]] = {}  # sent by the agent, the client must answer
        self.capabilities: dict[str, Any] | None = None  # the client's, from its initialize (None: not seen yet)
        self._url_elicitations: set[str] = set()  # elicitationIds of URL elicitations the agent sent
        self.subagents = Subagents()  # the sub-agent sessions the agent announced, and their lifecycle

    @property
    def pending_agent_answers(self) -> dict[RequestId, str | None]:
        """Client requests the agent has not answered yet: id -> method (None if unknown to the schema)."""
        return {rid: methods[0] for rid, methods in self._to_agent.items()}

    @property
    def pending_client_answers(self) -> dict[RequestId, str | None]:
        """Agent requests the client has not answered yet: id -> method."""
        return {rid: methods[0] for rid, methods in self._to_client.items()}

    def check_client_to_agent(self, msg: object, strict: bool = True) -> None:
        """Check a frame the client sends. ``strict=False`` (fuzzing) only records request ids, never raises."""
        if strict:
            self._check(msg, sender="client")
        else:
            self._record_leniently(msg)

    def check_agent_to_client(self, msg: object) -> None:
        """Check a frame the agent sends; always strict."""
        self._check(msg, sender="agent")

    # -- internals ---------------------------------------------------------------------------------------------------

    def _record_leniently(self, msg: object) -> None:
        # Mirror how a JSON-RPC peer reads a frame, so every answer the agent owes is expected: a frame with "method"
        # is a call; one with "result"/"error" is a response; anything else with a usable id gets an error back.
        # Unusable ids (null, floats, objects, ...) are not recorded: the agent can only answer those with id null.
        if not isinstance(msg, dict):
            return
        rid = msg.get("id")
        if "method" in msg:
            method = msg["method"]
            self._note_initialize(msg)
            known = isinstance(method, str) and any(
                def_for(method, "agent", "Request", unstable=newer) is not None for newer in (False, True)
            )
            if _is_request_id(rid):
                self._to_agent.setdefault(rid, []).append(method if known else None)
        elif "result" in msg or "error" in msg:
            self._take(self._to_client, rid, newest=False)  # the client answering an agent request, however badly
        elif _is_request_id(rid):
            self._to_agent.setdefault(rid, []).append(None)

    @staticmethod
    def _take(pending: dict[Any, list[str | None]], rid: object, *, newest: bool) -> tuple[bool, str | None]:
        """Pop the request ``rid`` answers; ``newest`` picks the latest of duplicate ids (the one rejected at once)."""
        try:
            methods = pending.get(rid)
        except TypeError:  # unhashable ids are never pending
            return False, None
        if not methods:
            return False, None
        method = methods.pop(-1 if newest else 0)
        if not methods:
            del pending[rid]
        return True, method

    def _check(self, msg: object, *, sender: Side) -> None:
        handler: Side = "agent" if sender == "client" else "client"
        where = f"{sender}→{handler}"
        if not isinstance(msg, dict):
            raise _violation(where, f"a JSON-RPC message must be an object, got {type(msg).__name__}", msg)
        if msg.get("jsonrpc") != "2.0":
            raise _violation(where, f'"jsonrpc" must be "2.0", got {msg.get("jsonrpc")!r}', msg)
        if "method" in msg:
            self._check_call(msg, sender, handler, where)
        else:
            self._check_response(msg, sender, handler, where)

    def _check_call(self, msg: dict[str, Any], sender: Side, handler: Side, where: str) -> None:
        method = msg["method"]
        is_request = "id" in msg
        kind: Kind = "Request" if is_request else "Notification"
        label = f"{method} {kind.lower()}"
        if not isinstance(method, str) or not method:
            raise _violation(where, f'"method" must be a non-empty string, got {method!r}', msg)
        if extra := sorted(set(msg) - (_REQUEST_KEYS if is_request else _NOTIFICATION_KEYS)):
            raise _violation(where, f"{label} has unexpected top-level members {extra}", msg)
        params = msg.get("params")
        if params is not None and not isinstance(params, dict | list):
            raise _violation(where, f'{label}: "params" must be an object or array, got {type(params).__name__}', msg)
        if is_request and not _is_request_id(msg["id"]):
            # JSON-RPC discourages null request ids, and a null-id answer is reserved for unreadable frames.
            raise _violation(where, f'{label}: "id" must be a string or integer, got {msg["id"]!r}', msg)

        def_name = def_for(method, handler, kind)
        newer = def_for(method, handler, kind, unstable=True)
        if sender == "agent" and method == "session/update" and _update_kind(params) in RFD_UPDATES:
            def_name, newer = "RfdSessionNotification", None  # newer than both schemas: the RFD's shape alone
        elif handler == "client" and method in RFD_CLIENT_METHODS:
            def_name, newer = _rfd_def(method, kind), None
        if def_name is not None or newer is not None:
            # Absent/null params are checked as {} so the def's required members still apply.
            instance = {} if params is None else params
            _check_both(def_name, newer, instance, what=f"{where} {label} params", path="$.params", msg=msg)
        else:
            other: Kind = "Notification" if is_request else "Request"
            if def_for(method, handler, other) is not None:
                raise _violation(
                    where, f"{method} is a {other.lower()} for the {handler}, sent as a {kind.lower()}", msg
                )
            if sender == "agent" and not method.startswith("_"):
                problem = f"{method!r} is neither an ACP {kind.lower()} the client handles nor a _extension method"
                raise _violation(where, problem, msg)

        if sender == "client":
            self._note_initialize(msg)
            self.subagents.client_call(method, msg.get("id"), params, msg)
        else:
            self._check_advertised(method, params, msg)
            self.subagents.agent_call(method, msg.get("id"), params, msg)

        if is_request:
            pending = self._to_agent if sender == "client" else self._to_client
            rid = msg["id"]
            if rid in pending:
                raise _violation(where, f"{label} reuses id {rid!r} while it is still awaiting an answer", msg)
            pending[rid] = [method if def_name is not None or newer is not None else None]

    def _check_response(self, msg: dict[str, Any], sender: Side, handler: Side, where: str) -> None:
        if "id" not in msg:
            raise _violation(where, 'a message without "method" is a response and needs an "id"', msg)
        if extra := sorted(set(msg) - _RESPONSE_KEYS):
            raise _violation(where, f"response has unexpected top-level members {extra}", msg)
        has_result, has_error = "result" in msg, "error" in msg
        if has_result == has_error:
            raise _violation(where, 'a response must have exactly one of "result" and "error"', msg)
        rid = msg["id"]
        if rid is not None and not _is_request_id(rid):
            raise _violation(where, f'response "id" must be a string, integer or null, got {rid!r}', msg)

        method: str | None = None
        if rid is None:
            # Only the answer to a frame whose id could not be read (parse error, invalid request) has a null id.
            if has_result:
                raise _violation(where, 'a response with "id": null must carry an "error", not a "result"', msg)
        else:
            # The sender answers requests it handles: the agent answers the client's requests and vice versa.
            found, method = self._take(self._to_agent if sender == "agent" else self._to_client, rid, newest=has_error)
            if not found:
                raise _violation(where, f"response to id {rid!r}: no outstanding request from the {handler}", msg)

        if sender == "agent" and rid is not None:
            self.subagents.agent_answered(rid, msg.get("result"), msg)
        elif rid is not None:
            self.subagents.client_answered(rid)
        if has_error:
            what = f"{where} error response" + (f" to {method}" if method else "")
            _check_def("Error", msg["error"], what=what, path="$.error", msg=msg)
        elif method is not None and sender == "client" and method in RFD_CLIENT_METHODS:
            _check_both(
                _rfd_def(method, "Response"),
                None,
                msg["result"],
                what=f"{where} {method} result",
                path="$.result",
                msg=msg,
            )
        elif method is not None:
            stable, newer = def_for(method, sender, "Response"), def_for(method, sender, "Response", unstable=True)
            _check_both(stable, newer, msg["result"], what=f"{where} {method} result", path="$.result", msg=msg)

    def _note_initialize(self, msg: dict[str, Any]) -> None:
        params = msg.get("params")
        if msg.get("method") == "initialize" and isinstance(params, dict):
            capabilities = params.get("clientCapabilities")
            self.capabilities = capabilities if isinstance(capabilities, dict) else {}

    def _check_advertised(self, method: str, params: Any, msg: dict[str, Any]) -> None:
        """Fail if the agent calls or sends what the client did not advertise in ``initialize``."""
        caps = self.capabilities
        if caps is None or not isinstance(params, dict):
            return
        fs = _object(caps.get("fs"))
        elicitation = _object(caps.get("elicitation"))
        session = _object(caps.get("session"))
        needs: str | None = None
        if method == "fs/read_text_file" and fs.get("readTextFile") is not True:
            needs = "fs.readTextFile"
        elif method == "fs/write_text_file" and fs.get("writeTextFile") is not True:
            needs = "fs.writeTextFile"
        elif method.startswith("terminal/") and caps.get("terminal") is not True:
            needs = "terminal"
        elif method == "elicitation/create":
            mode = params.get("mode")
            if not isinstance(elicitation.get(mode), dict):
                needs = f"elicitation.{mode}"
            elif mode == "url":
                self._url_elicitations.add(str(params.get("elicitationId")))
        elif method.startswith("lsp/") and not (
            isinstance(caps.get("lsp"), dict) or isinstance(_object(caps.get("_meta")).get("lsp"), dict)
        ):
            needs = "lsp (or _meta.lsp)"
        elif method == "elicitation/complete":
            if not isinstance(elicitation.get("url"), dict):
                needs = "elicitation.url"
            elif params.get("elicitationId") not in self._url_elicitations:
                raise _violation("agent→client", "elicitation/complete for a URL elicitation it never sent", msg)
        elif method == "session/update":
            kind = _object(params.get("update")).get("sessionUpdate")
            if kind == "notice" and not isinstance(session.get("notices"), dict):
                needs = "session.notices"
            elif kind in ("compaction_update", "compaction_summary_chunk") and not isinstance(
                session.get("compaction"), dict
            ):
                needs = "session.compaction"
            elif kind in ("plan_update", "plan_removed") and not any(
                isinstance(caps.get(name), dict) for name in ("plan", "planCapabilities")
            ):
                needs = "plan (or planCapabilities)"
            elif kind == "subagent_update" and not isinstance(caps.get("subagents"), dict):
                needs = "subagents"
            elif kind == "cursor_update" and not (
                isinstance(session.get("cursors"), dict) or _object(caps.get("_meta")).get("cursors") is True
            ):
                needs = "session.cursors (or _meta.cursors)"
        if needs is not None:
            raise _violation("agent→client", f"{method} sent, but the client did not advertise {needs}", msg)


def _object(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _update_kind(params: object) -> object:
    return _object(_object(params).get("update")).get("sessionUpdate")


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
        session = _object(params).get("sessionId")
        if not isinstance(session, str):
            return
        if session in self.parent:
            if method == "session/cancel":
                if not self.cancellable.get(session):
                    raise _violation("client→agent", "session/cancel for a sub-agent not advertised cancellable", msg)
                return
            raise _violation("client→agent", f"{method} with a sub-agent's session id (only session/cancel)", msg)
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
        params = _object(params)
        if method == "$/cancel_request":
            self._agent_cancelled.add(params.get("requestId"))
            return
        session = params.get("sessionId")
        if not isinstance(session, str):
            return
        update = _object(params.get("update"))
        if method == "session/update" and update.get("sessionUpdate") == "subagent_update":
            self._subagent_update(session, update, msg)
        if session in self.parent:
            if self.state.get(session) in TERMINAL_STATES:
                raise _violation("agent→client", f"{method} for sub-agent {session} after its terminal state", msg)
            if rid is not None:
                self._requests[rid] = session
        elif self.sessions and session not in self.sessions:
            raise _violation("agent→client", f"{method} for session {session}, never opened nor announced", msg)

    def _subagent_update(self, session: str, update: dict[str, Any], msg: dict[str, Any]) -> None:
        child = str(update.get("subagentSessionId"))
        known = self.parent.get(child)
        if known is None:
            if child in self.sessions:
                raise _violation("agent→client", f"subagent_update announces {child}, a session of the client", msg)
            self.parent[child] = session
            self.state[child] = "running"
        elif known != session:
            raise _violation("agent→client", f"subagent_update for {child} on {session}, not its parent {known}", msg)
        elif self.state.get(child) in TERMINAL_STATES:
            raise _violation("agent→client", f"subagent_update for {child} after its terminal state", msg)
        capabilities = update.get("capabilities")
        if isinstance(capabilities, dict):
            self.cancellable[child] = capabilities.get("cancel") is True
        state = update.get("state")
        if state is not None:
            if state in TERMINAL_STATES:
                pending = [r for r, c in self._requests.items() if c == child and r not in self._agent_cancelled]
                if pending:
                    raise _violation("agent→client", f"{child} ends while its request(s) {pending} are unanswered", msg)
            self.state[child] = str(state)

    def agent_answered(self, rid: Any, result: Any, msg: dict[str, Any]) -> None:
        """The agent answered a client request: a session/new opens a session; a prompt or a load ends with every
        child announced on its session terminal."""
        session_id = _object(result).get("sessionId")
        if isinstance(session_id, str):
            self.sessions.add(session_id)
        method, session = self._prompts.pop(rid, ("", ""))
        if not method:
            return
        running = [child for child in self.children_of(session) if self.state.get(child) not in TERMINAL_STATES]
        if running:
            problem = f"{method} answered while sub-agents {running} have no terminal state"
            raise _violation("agent→client", problem, msg)

    def client_answered(self, rid: Any) -> None:
        self._requests.pop(rid, None)


def _violation(where: str, problem: str, msg: object) -> AssertionError:
    return AssertionError(f"ACP conformance ({where}): {problem}\n  message: {_show(msg)}")
