"""ACP wire conformance: validate every JSON-RPC message a test sends or receives against the official ACP schema.

This module owns the test-side reading of ``tests/acp_schema/schema.json`` (ACP protocol v1, JSON Schema draft
2020-12, copied unchanged from ``@agentclientprotocol/sdk``; see ``tests/acp_schema/SOURCE.md``) and of its unstable
companion ``schema.unstable.json`` (the same release with the features not yet stable: ``session/fork``,
``PromptResponse.usage``, ``systemPrompt``...). Every message is checked against both: the stable schema where it
has the method, and the unstable one where it does, so a field newer than the stable schema is still checked for
its shape. The session updates newer than the stable schema (sub-agent sessions, plan operations) are checked
against their RFDs' shapes (``rfd.schema.json``) and against the unstable schema's drafts of them as the SDK's types
read them (``rfd_updates.check_sdk_reading``: every field sent under both names, agreeing), and the sub-agent
sessions to the RFD's lifecycle (``rfd_updates.Subagents``). The schema's root
``anyOf`` accepts almost anything, so the precise check is per method: every ``$defs`` entry that is a method's params
or result carries ``x-method`` (the wire name) and ``x-side`` (who handles it: ``agent``, ``client`` or ``protocol``
for ``$/cancel_request``). From those we build a ``(side, kind, method) -> def`` table once.

* :func:`load_schema` - the parsed schema, cached (these three in ``acp_schemas``, re-exported here).
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

from typing import Any, Final, TypeGuard

from tests.support.acp_schemas import (
    SCHEMA_PATH,
    Kind,
    Side,
    as_object,
    check_both,
    check_def,
    def_for,
    load_schema,
    method_table,
    rfd_def,
    validate,
    violation,
)
from tests.support.rfd_updates import RFD_CLIENT_METHODS, RFD_UPDATES, Subagents, check_sdk_reading, update_kind

__all__ = ["SCHEMA_PATH", "Conformance", "def_for", "load_schema", "method_table", "validate"]

_REQUEST_KEYS: Final = frozenset({"jsonrpc", "id", "method", "params"})
_NOTIFICATION_KEYS: Final = frozenset({"jsonrpc", "method", "params"})
_RESPONSE_KEYS: Final = frozenset({"jsonrpc", "id", "result", "error"})

RequestId = str | int


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
            raise violation(where, f"a JSON-RPC message must be an object, got {type(msg).__name__}", msg)
        if msg.get("jsonrpc") != "2.0":
            raise violation(where, f'"jsonrpc" must be "2.0", got {msg.get("jsonrpc")!r}', msg)
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
            raise violation(where, f'"method" must be a non-empty string, got {method!r}', msg)
        if extra := sorted(set(msg) - (_REQUEST_KEYS if is_request else _NOTIFICATION_KEYS)):
            raise violation(where, f"{label} has unexpected top-level members {extra}", msg)
        params = msg.get("params")
        if params is not None and not isinstance(params, dict | list):
            raise violation(where, f'{label}: "params" must be an object or array, got {type(params).__name__}', msg)
        if is_request and not _is_request_id(msg["id"]):
            # JSON-RPC discourages null request ids, and a null-id answer is reserved for unreadable frames.
            raise violation(where, f'{label}: "id" must be a string or integer, got {msg["id"]!r}', msg)

        def_name = def_for(method, handler, kind)
        newer = def_for(method, handler, kind, unstable=True)
        if sender == "agent" and method == "session/update" and update_kind(params) in RFD_UPDATES:
            # newer than the stable schema: the RFD's shape, and the SDK's unstable draft as its types read it
            def_name, newer = "RfdSessionNotification", None
        elif handler == "client" and method in RFD_CLIENT_METHODS:
            def_name, newer = rfd_def(method, kind), None
        if def_name is not None or newer is not None:
            # Absent/null params are checked as {} so the def's required members still apply.
            instance = {} if params is None else params
            check_both(def_name, newer, instance, what=f"{where} {label} params", path="$.params", msg=msg)
            if def_name == "RfdSessionNotification":
                check_sdk_reading(params, msg)
        else:
            other: Kind = "Notification" if is_request else "Request"
            if def_for(method, handler, other) is not None:
                raise violation(
                    where, f"{method} is a {other.lower()} for the {handler}, sent as a {kind.lower()}", msg
                )
            if sender == "agent" and not method.startswith("_"):
                problem = f"{method!r} is neither an ACP {kind.lower()} the client handles nor a _extension method"
                raise violation(where, problem, msg)

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
                raise violation(where, f"{label} reuses id {rid!r} while it is still awaiting an answer", msg)
            pending[rid] = [method if def_name is not None or newer is not None else None]

    def _check_response(self, msg: dict[str, Any], sender: Side, handler: Side, where: str) -> None:
        if "id" not in msg:
            raise violation(where, 'a message without "method" is a response and needs an "id"', msg)
        if extra := sorted(set(msg) - _RESPONSE_KEYS):
            raise violation(where, f"response has unexpected top-level members {extra}", msg)
        has_result, has_error = "result" in msg, "error" in msg
        if has_result == has_error:
            raise violation(where, 'a response must have exactly one of "result" and "error"', msg)
        rid = msg["id"]
        if rid is not None and not _is_request_id(rid):
            raise violation(where, f'response "id" must be a string, integer or null, got {rid!r}', msg)

        method: str | None = None
        if rid is None:
            # Only the answer to a frame whose id could not be read (parse error, invalid request) has a null id.
            if has_result:
                raise violation(where, 'a response with "id": null must carry an "error", not a "result"', msg)
        else:
            # The sender answers requests it handles: the agent answers the client's requests and vice versa.
            found, method = self._take(self._to_agent if sender == "agent" else self._to_client, rid, newest=has_error)
            if not found:
                raise violation(where, f"response to id {rid!r}: no outstanding request from the {handler}", msg)

        if sender == "agent" and rid is not None:
            self.subagents.agent_answered(rid, msg.get("result"), msg)
        elif rid is not None:
            self.subagents.client_answered(rid)
        if has_error:
            what = f"{where} error response" + (f" to {method}" if method else "")
            check_def("Error", msg["error"], what=what, path="$.error", msg=msg)
        elif method is not None and sender == "client" and method in RFD_CLIENT_METHODS:
            check_both(
                rfd_def(method, "Response"),
                None,
                msg["result"],
                what=f"{where} {method} result",
                path="$.result",
                msg=msg,
            )
        elif method is not None:
            stable, newer = def_for(method, sender, "Response"), def_for(method, sender, "Response", unstable=True)
            check_both(stable, newer, msg["result"], what=f"{where} {method} result", path="$.result", msg=msg)

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
        fs = as_object(caps.get("fs"))
        elicitation = as_object(caps.get("elicitation"))
        session = as_object(caps.get("session"))
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
            isinstance(caps.get("lsp"), dict) or isinstance(as_object(caps.get("_meta")).get("lsp"), dict)
        ):
            needs = "lsp (or _meta.lsp)"
        elif method == "elicitation/complete":
            if not isinstance(elicitation.get("url"), dict):
                needs = "elicitation.url"
            elif params.get("elicitationId") not in self._url_elicitations:
                raise violation("agent→client", "elicitation/complete for a URL elicitation it never sent", msg)
        elif method == "session/update":
            kind = as_object(params.get("update")).get("sessionUpdate")
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
                isinstance(session.get("cursors"), dict) or as_object(caps.get("_meta")).get("cursors") is True
            ):
                needs = "session.cursors (or _meta.cursors)"
        if needs is not None:
            raise violation("agent→client", f"{method} sent, but the client did not advertise {needs}", msg)
