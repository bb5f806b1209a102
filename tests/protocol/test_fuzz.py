"""Property test: thousands of malformed or random frames never crash the agent or corrupt its output.

Each example opens a fresh agent in-process, sends a list of frames, and after each frame a probe request
(`initialize`). Silence is checked once the probe is answered (frames that get no answer are dropped in
order, before the probe is read); an expected answer is awaited. Each must be exactly what JSON-RPC
prescribes: one error with the right code and id, or silence for notifications and stray responses.
Every frame the agent writes is checked as NDJSON and against the ACP schema by the fake client. At
least 2,000 frames are sent in all.
"""

from __future__ import annotations

import json
import math
from typing import Any

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.acp_client import in_process_agent

EXAMPLES = 50
FRAMES_PER_EXAMPLE = (40, 60)

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
ids = (
    st.integers(min_value=-(2**70), max_value=2**70)
    | st.text(max_size=12)
    | st.none()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.booleans()
    | st.just({"nested": 1})
)
unknown_methods = st.text(min_size=1, max_size=20).filter(lambda m: not m.startswith("$/")) | st.sampled_from(
    ["_vendor/ext", "session/unknown", "fs/read_text_file", "terminal/create", "session/update"]
)


@st.composite
def request_like(draw: st.DrawFn) -> dict[str, Any]:
    """A JSON-RPC-ish object: any mix of jsonrpc, id, method, params, result, error."""
    message: dict[str, Any] = {}
    if draw(st.integers(0, 9)) > 0:
        message["jsonrpc"] = draw(st.sampled_from(["2.0", "2.0", "2.0", "1.0", 2]))
    if draw(st.booleans()):
        message["id"] = draw(ids)
    shape = draw(st.sampled_from(["unknown", "initialize", "prompt", "new", "cancel", "response", "bare"]))
    if shape == "unknown":
        message["method"] = draw(unknown_methods | st.integers())
    elif shape == "initialize":
        message["method"] = "initialize"
        message["id"] = draw(st.integers(0, 2**40) | st.text(max_size=8))  # null ids are legal but left out here
    elif shape == "prompt":
        message["method"] = "session/prompt"
    elif shape == "new":
        message["method"] = "session/new"
        relative = draw(st.text(max_size=10).filter(lambda c: not c.startswith("/")))
        message["params"] = {"cwd": relative, "mcpServers": []}
    elif shape == "cancel":
        message["method"] = draw(st.sampled_from(["session/cancel", "$/cancel_request"]))
        message.pop("id", None)
    elif shape == "response":
        message[draw(st.sampled_from(["result", "error"]))] = draw(json_values)
    if "params" not in message and shape != "bare" and draw(st.booleans()):
        message["params"] = draw(json_values)
    return message


frames = st.one_of(
    st.binary(max_size=40).map(lambda b: b.replace(b"\n", b" ")),
    json_values.map(lambda v: json.dumps(v).encode()),
    request_like().map(lambda m: json.dumps(m).encode()),
    st.just(b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": NaN}}'),
    st.just(b"[]"),
)


def _valid_id(value: Any) -> bool:
    return value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def expected_answer(frame: bytes) -> tuple[Any, set[int]] | None:
    """The JSON-RPC oracle: (id, allowed codes, or {0} for a result), or None for silence."""
    if not frame.strip():
        return None
    try:
        message = json.loads(frame, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    except (ValueError, RecursionError):
        return None, {-32700}
    if not isinstance(message, dict):
        return None, {-32600}
    request_id = message.get("id")
    if "method" not in message:
        if "result" in message or "error" in message:
            return None
        return (request_id if _valid_id(request_id) else None), {-32600}
    is_request = "id" in message
    method, params = message["method"], message.get("params")
    malformed = (
        message.get("jsonrpc") != "2.0"
        or not isinstance(method, str)
        or (is_request and not _valid_id(request_id))
        or ("params" in message and not isinstance(params, dict | list))
    )
    if not is_request:
        return None
    if malformed:
        return (request_id if _valid_id(request_id) else None), {-32600}
    if method == "initialize":
        version = params.get("protocolVersion") if isinstance(params, dict) else None
        valid = isinstance(version, int) and not isinstance(version, bool)
        return request_id, {0} if valid else {-32602}
    if method == "session/prompt":
        return request_id, {-32602, -32002}
    if method == "session/new":
        return request_id, {-32602}
    return request_id, {-32601}


def _same_id(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, float) and isinstance(b, float) and math.isclose(a, b)
    return type(a) is type(b) and a == b


async def _exchange(frame_list: list[bytes]) -> None:
    async with in_process_agent() as client:
        for number, frame in enumerate(frame_list):
            await client.send_raw(frame + b"\n")
            probe = await client.request_raw("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
            assert probe["result"]["protocolVersion"] == 1, "the next valid request still works"
            expected = expected_answer(frame)
            if expected is not None:  # requests run concurrently: the probe may overtake the frame's answer
                await client.wait_for(lambda: bool(client.stray))
            answers, client.stray[:] = list(client.stray), []
            if expected is None:
                assert answers == [], f"frame {number} {frame!r} must get no answer, got {answers}"
                continue
            expected_id, codes = expected
            assert len(answers) == 1, f"frame {number} {frame!r} must get one answer, got {answers}"
            answer = answers[0]
            assert _same_id(answer["id"], expected_id), f"{frame!r}: id {answer['id']!r} != {expected_id!r}"
            code = 0 if "result" in answer else answer["error"]["code"]
            assert code in codes, f"{frame!r}: got {answer}, expected one of {codes}"
            if code:
                assert "Traceback" not in answer["error"]["message"]


def test_random_frames_get_the_right_answer_and_never_break_the_agent() -> None:
    """At least 2,000 random or malformed frames, each answered as its oracle says, the agent alive after each."""
    sent: list[int] = []

    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.lists(frames, min_size=FRAMES_PER_EXAMPLE[0], max_size=FRAMES_PER_EXAMPLE[1]))
    def exchange(frame_list: list[bytes]) -> None:
        anyio.run(_exchange, frame_list, backend="asyncio")
        sent.append(len(frame_list))

    exchange()
    assert sum(sent) >= 2000, sum(sent)
