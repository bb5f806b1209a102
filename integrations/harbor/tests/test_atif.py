"""coder-agent's ATIF, checked with Harbor's own pydantic models: whatever a stored session holds (images,
thinking blocks, calls whose arguments are not JSON, results without their call, a compaction, a session that
never reached its model), `coder-agent export --format atif` is a trajectory Harbor accepts."""

from __future__ import annotations

import json
from pathlib import Path

from harbor.models.trajectories import Trajectory

from coder_agent.headless.export import render
from coder_agent.store import SessionRecord, utc_now


def record(messages: list[dict[str, object]], **fields: object) -> SessionRecord:
    now = utc_now()
    return SessionRecord(
        session_id="s", cwd="/work", created_at=now, updated_at=now, model="m", messages=messages, **fields
    )


def call(call_id: str, name: str, arguments: str) -> dict[str, object]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_every_shape_of_history_is_a_trajectory_harbor_accepts(tmp_path: Path) -> None:
    histories = [
        [],
        [{"role": "system", "content": "You are coder-agent."}, {"role": "user", "content": "hi"}],
        [
            {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {}}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [call("a", "read_file", '{"path": "x"}'), call("b", "grep", "{broken")],
                "thinking_blocks": [{"type": "thinking", "thinking": "hm", "signature": "s"}],
            },
            {"role": "tool", "tool_call_id": "a", "content": [{"type": "text", "text": "x's text"}]},
            {"role": "tool", "tool_call_id": "b", "content": "no match"},
            {"role": "tool", "tool_call_id": "zzz", "content": "a stray result"},
            {"role": "assistant", "content": "done"},
        ],
        [{"role": "tool", "tool_call_id": "orphan", "content": "before any call"}],
    ]
    for messages in histories:
        data = json.loads(render(record(messages, cost=0.5, title="t"), "atif"))
        trajectory = Trajectory.model_validate(data)
        assert trajectory.schema_version == "ATIF-v1.7"
        assert trajectory.final_metrics is not None
        assert trajectory.final_metrics.total_steps == len(trajectory.steps)
    compacted = record(
        [{"role": "user", "content": "summary of before"}],
        events=[{"sessionUpdate": "compaction_update", "compactionId": "k", "status": "completed"}],
    )
    assert Trajectory.model_validate(json.loads(render(compacted, "atif"))).notes
