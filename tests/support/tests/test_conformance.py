"""Tests for the ACP wire-conformance helper in tests/support/conformance.py."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tests.support.conformance import Conformance, def_for, load_schema, method_table, validate

SESSION = "sess-1"


def _request(rid: int | str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def _notification(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


def _result(rid: int | str | None, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def _error(rid: int | str | None, code: int = -32601, message: str = "Method not found") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


def _update(update: dict[str, Any]) -> dict[str, Any]:
    return _notification("session/update", {"sessionId": SESSION, "update": update})


def _prompting() -> Conformance:
    """A checker that has seen a client `session/prompt` request with id 2."""
    conf = Conformance()
    conf.check_client_to_agent(_request(2, "session/prompt", {"sessionId": SESSION, "prompt": []}))
    return conf


# -- the schema and the tables derived from it ----------------------------------------------------------------------


def test_vendored_schema_is_a_valid_draft_2020_12_schema() -> None:
    Draft202012Validator.check_schema(load_schema())


def test_method_table_pairs_requests_with_responses_per_side() -> None:
    table = method_table()
    assert def_for("session/update", "client", "Notification") == "SessionNotification"
    assert def_for("session/cancel", "agent", "Notification") == "CancelNotification"
    assert def_for("$/cancel_request", "agent", "Notification") == "CancelRequestNotification"
    assert def_for("$/cancel_request", "client", "Notification") == "CancelRequestNotification"
    assert def_for("fs/read_text_file", "client", "Request") == "ReadTextFileRequest"
    assert def_for("fs/read_text_file", "agent", "Request") is None
    assert def_for("session/prompt", "agent", "Response") == "PromptResponse"
    requests = {(side, method) for side, kind, method in table if kind == "Request"}
    responses = {(side, method) for side, kind, method in table if kind == "Response"}
    assert requests == responses
    assert ("agent", "initialize") in requests
    assert ("client", "session/request_permission") in requests


def test_validate_reports_def_and_path() -> None:
    validate("PromptResponse", {"stopReason": "end_turn"})
    with pytest.raises(AssertionError, match=r"PromptResponse[\s\S]*\$\.stopReason"):
        validate("PromptResponse", {"stopReason": "done"})
    with pytest.raises(KeyError, match="NoSuchDef"):
        validate("NoSuchDef", {})


# -- client → agent and the agent's answers -------------------------------------------------------------------------


def test_initialize_round_trip_passes() -> None:
    conf = Conformance()
    conf.check_client_to_agent(
        _request(
            0,
            "initialize",
            {
                "protocolVersion": 1,
                "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True},
                "clientInfo": {"name": "test-client", "version": "0.0.1"},
            },
        )
    )
    assert conf.pending_agent_answers == {0: "initialize"}
    conf.check_agent_to_client(
        _result(
            0,
            {
                "protocolVersion": 1,
                "agentCapabilities": {"loadSession": True, "promptCapabilities": {"image": False}},
                "agentInfo": {"name": "coder-agent", "version": "0.1.0"},
                "authMethods": [],
            },
        )
    )
    assert conf.pending_agent_answers == {}


def test_initialize_request_without_protocol_version_fails() -> None:
    with pytest.raises(AssertionError, match=r"initialize request params does not match InitializeRequest"):
        Conformance().check_client_to_agent(_request(0, "initialize", {"clientCapabilities": {}}))


def test_agent_message_chunk_passes_and_bogus_session_update_fails() -> None:
    conf = Conformance()
    conf.check_agent_to_client(
        _update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}})
    )
    with pytest.raises(AssertionError) as info:
        conf.check_agent_to_client(_update({"sessionUpdate": "bogus", "content": {"type": "text", "text": "hi"}}))
    text = str(info.value)
    assert "session/update" in text
    assert "SessionNotification" in text
    assert (
        "at $.params.update.sessionUpdate: 'bogus' is not one of ['user_message_chunk', 'agent_message_chunk'" in text
    )
    assert '"bogus"' in text  # the offending message is shown


def test_current_mode_update_requires_current_mode_id() -> None:
    conf = Conformance()
    conf.check_agent_to_client(_update({"sessionUpdate": "current_mode_update", "currentModeId": "code"}))
    with pytest.raises(AssertionError, match=r"\$\.params\.update: 'currentModeId' is a required property"):
        conf.check_agent_to_client(_update({"sessionUpdate": "current_mode_update"}))


def test_prompt_response_with_unknown_stop_reason_fails() -> None:
    expected = r"session/prompt result does not match PromptResponse\n  at \$\.result\.stopReason: 'done' is not one of"
    with pytest.raises(AssertionError, match=expected):
        _prompting().check_agent_to_client(_result(2, {"stopReason": "done"}))


def test_prompt_response_with_known_stop_reason_passes() -> None:
    conf = _prompting()
    conf.check_agent_to_client(_result(2, {"stopReason": "end_turn"}))
    with pytest.raises(AssertionError, match="no outstanding request"):  # answered twice
        conf.check_agent_to_client(_result(2, {"stopReason": "end_turn"}))


def test_error_response_passes() -> None:
    conf = _prompting()
    conf.check_agent_to_client(_error(2, -32603, "Internal error"))
    assert conf.pending_agent_answers == {}


@pytest.mark.parametrize(
    ("error", "where"),
    [({"code": "oops", "message": "x"}, r"\$\.error\.code"), ({"code": -32603}, r"\$\.error: 'message' is a required")],
)
def test_malformed_error_object_fails(error: dict[str, Any], where: str) -> None:
    with pytest.raises(AssertionError, match=rf"error response to session/prompt does not match Error\n  at {where}"):
        _prompting().check_agent_to_client({"jsonrpc": "2.0", "id": 2, "error": error})


def test_response_with_both_result_and_error_fails() -> None:
    both = {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}, "error": {"code": -1, "message": "x"}}
    with pytest.raises(AssertionError, match="exactly one of"):
        _prompting().check_agent_to_client(both)


@pytest.mark.parametrize(
    ("msg", "problem"),
    [
        ({"id": 2, "result": {"stopReason": "end_turn"}}, '"jsonrpc" must be "2.0"'),
        ({"jsonrpc": "2.0", "result": {"stopReason": "end_turn"}}, 'needs an "id"'),
        ({"jsonrpc": "2.0", "id": 2}, "exactly one of"),
        (_result(99, {}), "no outstanding request"),
        (_result(None, {}), '"id": null must carry an "error"'),
        (["not", "an", "object"], "must be an object"),
    ],
)
def test_broken_agent_envelopes_fail(msg: Any, problem: str) -> None:
    with pytest.raises(AssertionError, match=problem):
        _prompting().check_agent_to_client(msg)


def test_null_id_error_answers_an_unreadable_frame() -> None:
    Conformance().check_agent_to_client(_error(None, -32700, "Parse error"))


def test_client_notifications_are_checked() -> None:
    conf = _prompting()
    conf.check_client_to_agent(_notification("session/cancel", {"sessionId": SESSION}))
    conf.check_client_to_agent(_notification("$/cancel_request", {"requestId": 2}))
    with pytest.raises(AssertionError, match="CancelNotification"):
        conf.check_client_to_agent(_notification("session/cancel", {}))


def test_extension_and_unknown_client_methods_skip_param_validation() -> None:
    conf = Conformance()
    conf.check_client_to_agent(_request(7, "_acme/ping", {"anything": [1, 2]}))
    conf.check_client_to_agent(_request(8, "no/such_method", {}))
    conf.check_agent_to_client(_result(7, {"pong": True}))  # unknown method: result is not validated
    conf.check_agent_to_client(_error(8))


# -- agent → client and the client's answers ------------------------------------------------------------------------


def test_read_text_file_round_trip_validates_the_client_response() -> None:
    conf = Conformance()
    read = _request(0, "fs/read_text_file", {"sessionId": SESSION, "path": "/repo/a.py", "line": 1, "limit": 10})
    conf.check_agent_to_client(read)
    assert conf.pending_client_answers == {0: "fs/read_text_file"}
    conf.check_client_to_agent(_result(0, {"content": "print('hi')\n"}))
    assert conf.pending_client_answers == {}

    conf.check_agent_to_client(_request(1, "fs/read_text_file", {"sessionId": SESSION, "path": "/repo/a.py"}))
    with pytest.raises(AssertionError, match=r"fs/read_text_file result does not match ReadTextFileResponse"):
        conf.check_client_to_agent(_result(1, {"text": "wrong member"}))


def test_agent_request_with_bad_params_fails() -> None:
    with pytest.raises(AssertionError, match=r"ReadTextFileRequest\n  at \$\.params: 'path' is a required property"):
        Conformance().check_agent_to_client(_request(0, "fs/read_text_file", {"sessionId": SESSION}))


def test_agent_may_not_call_methods_the_client_does_not_handle() -> None:
    conf = Conformance()
    conf.check_agent_to_client(_request(0, "_acme/hello", {}))  # extensions are fine
    with pytest.raises(AssertionError, match="neither an ACP request the client handles"):
        conf.check_agent_to_client(_request(1, "session/prompt", {"sessionId": SESSION, "prompt": []}))
    with pytest.raises(AssertionError, match="is a notification for the client, sent as a request"):
        conf.check_agent_to_client(_request(2, "session/update", {"sessionId": SESSION, "update": {}}))


def test_agent_request_ids_must_be_unique_while_outstanding() -> None:
    conf = Conformance()
    conf.check_agent_to_client(_request(0, "terminal/output", {"sessionId": SESSION, "terminalId": "t"}))
    with pytest.raises(AssertionError, match="reuses id 0"):
        conf.check_agent_to_client(_request(0, "terminal/output", {"sessionId": SESSION, "terminalId": "t"}))


# -- lenient client checks for fuzzing ------------------------------------------------------------------------------


def test_lenient_mode_records_ids_without_raising() -> None:
    conf = Conformance()
    for garbage in [42, None, [], {"id": 1}, {"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": 5}]:
        conf.check_client_to_agent(garbage, strict=False)
    conf.check_client_to_agent(_request(3, "session/prompt", {"sessionId": SESSION, "prompt": []}), strict=False)
    assert conf.pending_agent_answers == {1: None, 3: "initialize"}
    conf.check_agent_to_client(_error(1, -32600, "Invalid request"))
    conf.check_agent_to_client(_error(3, -32600, "Invalid request"))  # rejects the newest duplicate id 3 ...
    conf.check_agent_to_client(_error(None, -32700, "Parse error"))
    with pytest.raises(AssertionError, match="InitializeResponse"):  # ... so the oldest one is still owed an answer
        conf.check_agent_to_client(_result(3, {"stopReason": "end_turn"}))


def test_agent_output_stays_strict_after_lenient_input() -> None:
    conf = Conformance()
    conf.check_client_to_agent({"jsonrpc": "2.0", "id": 5, "method": "session/prompt", "params": {}}, strict=False)
    with pytest.raises(AssertionError, match="PromptResponse"):
        conf.check_agent_to_client(_result(5, {"stopReason": "done"}))


# -- capabilities: nothing the client did not advertise ------------------------------------------------------------


def _initialized(capabilities: dict[str, Any]) -> Conformance:
    conf = Conformance()
    params = {"protocolVersion": 1, "clientCapabilities": capabilities}
    conf.check_client_to_agent(_request(0, "initialize", params), strict=False)  # malformed ones on purpose
    return conf


@pytest.mark.parametrize(
    ("capabilities", "message", "needs"),
    [
        ({"fs": {"readTextFile": False}}, _request(1, "fs/read_text_file", {"sessionId": SESSION, "path": "/a"}), "fs"),
        ({"terminal": "yes"}, _request(1, "terminal/output", {"sessionId": SESSION, "terminalId": "t"}), "terminal"),
        (
            {"elicitation": {"url": {}}},
            _request(
                1,
                "elicitation/create",
                {"sessionId": SESSION, "mode": "form", "message": "?", "requestedSchema": {"type": "object"}},
            ),
            "elicitation.form",
        ),
        (
            {"elicitation": {"form": {}, "url": None}},
            _request(
                1,
                "elicitation/create",
                {"sessionId": SESSION, "mode": "url", "message": "?", "elicitationId": "e", "url": "https://x.org"},
            ),
            "elicitation.url",
        ),
        ({}, _update({"sessionUpdate": "notice", "severity": "info", "title": "t"}), "session.notices"),
        (
            {"session": {"notices": {}}},
            _update({"sessionUpdate": "compaction_update", "compactionId": "c", "status": "in_progress"}),
            "session.compaction",
        ),
    ],
)
def test_what_the_client_did_not_advertise_is_a_violation(
    capabilities: dict[str, Any], message: dict[str, Any], needs: str
) -> None:
    with pytest.raises(AssertionError, match=f"did not advertise {needs}"):
        _initialized(capabilities).check_agent_to_client(message)


def test_what_the_client_advertised_passes_and_complete_needs_a_url_elicitation_sent() -> None:
    conf = _initialized({"elicitation": {"form": {}, "url": {}}, "session": {"notices": {}, "compaction": {}}})
    conf.check_agent_to_client(_update({"sessionUpdate": "notice", "severity": "info", "title": "t"}))
    conf.check_agent_to_client(
        _update(
            {"sessionUpdate": "compaction_summary_chunk", "compactionId": "c", "content": {"type": "text", "text": "s"}}
        )
    )
    with pytest.raises(AssertionError, match="never sent"):
        conf.check_agent_to_client(_notification("elicitation/complete", {"elicitationId": "e1"}))
    url = {"sessionId": SESSION, "mode": "url", "message": "Sign in", "elicitationId": "e1", "url": "https://x.org/a"}
    conf.check_agent_to_client(_request(1, "elicitation/create", url))
    conf.check_agent_to_client(_notification("elicitation/complete", {"elicitationId": "e1"}))


# -- sub-agent sessions and plan operations (the RFDs' shapes and rules) ----------------------------------------------


def _with(capabilities: dict[str, Any]) -> Conformance:
    conf = Conformance()
    conf.check_client_to_agent(_request(0, "initialize", {"protocolVersion": 1, "clientCapabilities": capabilities}))
    conf.check_client_to_agent(_request(2, "session/prompt", {"sessionId": SESSION, "prompt": []}))
    return conf


def _announce(child: str = "child-1", **fields: Any) -> dict[str, Any]:
    """A `subagent_update` in both shapes, the RFD's and the SDK draft's, as the agent sends it."""
    sdk = {"sessionId": child, "title": fields.get("name"), "description": fields.get("task")}
    both = {**{k: v for k, v in sdk.items() if v is not None}, **fields}
    return _update({"sessionUpdate": "subagent_update", "subagentSessionId": child, **both})


def _on(session: str, update: dict[str, Any]) -> dict[str, Any]:
    return _notification("session/update", {"sessionId": session, "update": update})


TEXT = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}


def test_a_sub_agent_announced_then_ended_before_the_prompt_answer_passes() -> None:
    conf = _with({"subagents": {}})
    conf.check_agent_to_client(_announce(name="explore-1", task="Look", capabilities={"cancel": True}))
    conf.check_agent_to_client(_on("child-1", TEXT))
    conf.check_client_to_agent(_notification("session/cancel", {"sessionId": "child-1"}))
    conf.check_agent_to_client(_announce(state="cancelled"))
    conf.check_agent_to_client(_result(2, {"stopReason": "end_turn"}))


@pytest.mark.parametrize(
    ("capabilities", "frames", "problem"),
    [
        ({}, [_announce()], "did not advertise subagents"),
        ({"subagents": {}}, [_announce(state="stuck")], "does not match RfdSessionNotification"),
        ({"subagents": {}}, [_announce(), _announce(state="completed"), _on("child-1", TEXT)], "after its terminal"),
        ({"subagents": {}}, [_announce(), _announce(state="completed"), _announce(name="x")], "after its terminal"),
        ({"subagents": {}}, [_announce(), _result(2, {"stopReason": "end_turn"})], "have no terminal state"),
        (
            {"subagents": {}},
            [_announce(), _on("other", _announce()["params"]["update"])],
            "not its parent",
        ),
    ],
)
def test_sub_agent_sessions_break_the_rfd(capabilities: dict[str, Any], frames: list[Any], problem: str) -> None:
    conf = _with(capabilities)
    conf.subagents.sessions.update({SESSION, "other"})
    *before, last = frames
    for frame in before:
        conf.check_agent_to_client(frame)
    with pytest.raises(AssertionError, match=problem):
        conf.check_agent_to_client(last)


def test_a_child_request_must_be_answered_or_cancelled_before_the_child_ends() -> None:
    conf = _with({"subagents": {}})
    conf.check_agent_to_client(_announce())
    asked = {"sessionId": "child-1", "toolCall": {"toolCallId": "c1"}, "options": []}
    conf.check_agent_to_client(_request(7, "session/request_permission", asked))
    with pytest.raises(AssertionError, match="unanswered"):
        conf.check_agent_to_client(_announce(state="cancelled"))
    conf = _with({"subagents": {}})
    conf.check_agent_to_client(_announce())
    conf.check_agent_to_client(_request(7, "session/request_permission", asked))
    conf.check_agent_to_client(_notification("$/cancel_request", {"requestId": 7}))
    conf.check_agent_to_client(_announce(state="cancelled"))


def test_the_client_may_cancel_only_a_child_that_allows_it_and_never_prompt_one() -> None:
    conf = _with({"subagents": {}})
    conf.check_agent_to_client(_announce())
    with pytest.raises(AssertionError, match="not advertised cancellable"):
        conf.check_client_to_agent(_notification("session/cancel", {"sessionId": "child-1"}))
    with pytest.raises(AssertionError, match="only session/cancel"):
        conf.check_client_to_agent(_request(9, "session/prompt", {"sessionId": "child-1", "prompt": []}))


def test_plan_updates_need_the_capability_and_both_shapes() -> None:
    plan = {"type": "markdown", "id": "p", "planId": "p", "content": "# Plan"}
    markdown = {"sessionUpdate": "plan_update", "plan": plan}
    _with({"plan": {}}).check_agent_to_client(_update(markdown))
    removed = {"sessionUpdate": "plan_removed", "id": "p", "planId": "p"}
    _with({"planCapabilities": {}}).check_agent_to_client(_update(removed))
    with pytest.raises(AssertionError, match="did not advertise plan"):
        _with({}).check_agent_to_client(_update(markdown))
    without_id = {"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": "p", "content": "# Plan"}}
    with pytest.raises(AssertionError, match="RfdSessionNotification"):
        _with({"plan": {}}).check_agent_to_client(_update(without_id))
    rfd_only = {"sessionUpdate": "plan_update", "plan": {"type": "markdown", "id": "p", "content": "# Plan"}}
    with pytest.raises(AssertionError, match="planId too"):
        _with({"plan": {}}).check_agent_to_client(_update(rfd_only))
    with pytest.raises(AssertionError, match="planId too"):
        _with({"plan": {}}).check_agent_to_client(_update({"sessionUpdate": "plan_removed", "id": "p"}))


@pytest.mark.parametrize(
    ("update", "problem"),
    [
        ({"sessionUpdate": "subagent_update", "subagentSessionId": "child-1"}, "SDK's sessionId too"),
        (
            {"sessionUpdate": "subagent_update", "subagentSessionId": "child-1", "sessionId": "child-1", "name": "x"},
            "SDK's title too",
        ),
        (
            {"sessionUpdate": "subagent_update", "subagentSessionId": "child-1", "sessionId": "child-2"},
            "SDK's sessionId too",
        ),
        (
            {**_announce()["params"]["update"], "state": {"state": "idle", "stopReason": "end_turn"}},
            "does not match RfdSessionNotification",
        ),
        ({**_announce()["params"]["update"], "title": 7, "name": 7}, "RfdSessionNotification"),
        ({**_announce()["params"]["update"], "additionalDirectories": "x"}, "as the SDK's unstable types read them"),
    ],
    ids=["rfd-only", "name-without-title", "ids-disagree", "sdk-state", "title-not-text", "sdk-field-broken"],
)
def test_a_sub_agent_update_must_be_read_by_rfd_and_sdk_clients(update: dict[str, Any], problem: str) -> None:
    conf = _with({"subagents": {}})
    with pytest.raises(AssertionError, match=problem):
        conf.check_agent_to_client(_update(update))


def test_the_rfd_shapes_of_state_and_cancel_are_read_by_sdk_clients_as_not_given() -> None:
    conf = _with({"subagents": {}})
    conf.check_agent_to_client(_announce(name="explore-1", task="Look", capabilities={"cancel": True}))
    conf.check_agent_to_client(_announce(state="completed"))


def test_lsp_proxy_calls_follow_the_rfd_and_need_the_capability() -> None:
    listed = {
        "servers": [
            {
                "serverId": "py@/repo",
                "name": "basedpyright",
                "workspacePath": "/repo",
                "state": "running",
                "capabilities": {"diagnosticProvider": {}},
            }
        ],
        "availableMethods": ["textDocument/diagnostic"],
    }
    conf = _initialized({"_meta": {"lsp": {}}})
    conf.check_agent_to_client(_request(0, "lsp/servers", {"sessionId": SESSION}))
    conf.check_client_to_agent(_result(0, listed))
    params = {"sessionId": SESSION, "serverId": "py@/repo", "method": "textDocument/diagnostic", "params": {}}
    conf.check_agent_to_client(_request(1, "lsp/request", params))
    conf.check_client_to_agent(_result(1, {"lspResult": {"kind": "full", "items": []}}))
    with pytest.raises(AssertionError, match="LspRequestRequest"):
        conf.check_agent_to_client(_request(2, "lsp/request", {"sessionId": SESSION, "serverId": "py@/repo"}))
    conf.check_agent_to_client(_request(3, "lsp/servers", {"sessionId": SESSION}))
    with pytest.raises(AssertionError, match="lsp/servers result does not match LspServersResponse"):
        conf.check_client_to_agent(_result(3, {"servers": [{"name": "x"}]}))
    with pytest.raises(AssertionError, match="did not advertise lsp"):
        _initialized({}).check_agent_to_client(_request(0, "lsp/servers", {"sessionId": SESSION}))
