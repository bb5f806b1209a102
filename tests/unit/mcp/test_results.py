"""Tests for coder_agent.mcp.results on MCP result JSON (results of real servers are in test_mcp_hub.py)."""

from __future__ import annotations

from coder_agent.mcp.results import map_result


def test_truncation_keeps_the_limit_and_says_so() -> None:
    raw = {"content": [{"type": "text", "text": "a" * 30}, {"type": "text", "text": "b" * 30}]}
    result = map_result(raw, 40)
    texts = [p["text"] for p in result.content]
    assert texts[:2] == ["a" * 30, "b" * 10]
    assert "truncated" in texts[-1] and "60" in texts[-1]
    assert result.truncated
