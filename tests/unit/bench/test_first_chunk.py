"""bench/peer_turns.py counts the model's own first chunk: by its messageId, or (for an agent that sends none) the
first chunk after the model request; a note the agent said before it is reported apart."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCH = Path(__file__).parents[3] / "bench"


@pytest.fixture
def peer_turns(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCH))  # the bench scripts import their siblings by name
    import peer_turns

    return peer_turns


def chunk(at: float, text: str, message_id: str | None) -> tuple[dict[str, Any], int, float]:
    update: dict[str, Any] = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
    if message_id is not None:
        update["messageId"] = message_id
    return {"method": "session/update", "params": {"sessionId": "s", "update": update}}, 0, at


def exchange(peer_turns: ModuleType, *notes: tuple[dict[str, Any], int, float]) -> Any:
    import acp_bench

    return acp_bench.Exchange({}, 0.0, 9.0, 0, list(notes))


def test_the_models_message_is_found_by_its_id_and_a_note_before_it_apart(peer_turns: ModuleType) -> None:
    turn = exchange(peer_turns, chunk(0.05, "Commands run as local processes", "note"), chunk(2.2, "Do", "m"))
    assert peer_turns.model_chunk(turn, "s", requested=2.1) == (2.2, 0.05)


def test_without_ids_the_first_chunk_after_the_model_request_counts(peer_turns: ModuleType) -> None:
    turn = exchange(peer_turns, chunk(0.05, "a note", None), chunk(2.2, "Do", None), chunk(2.3, "ne", None))
    assert peer_turns.model_chunk(turn, "s", requested=2.1) == (2.2, 0.05)


def test_a_turn_with_only_the_models_message_has_no_note(peer_turns: ModuleType) -> None:
    turn = exchange(peer_turns, chunk(1.0, "Do", "m"), chunk(1.1, "ne", "m"))
    assert peer_turns.model_chunk(turn, "s", requested=0.9) == (1.0, None)
    assert peer_turns.model_chunk(exchange(peer_turns), "s", requested=0.9) == (None, None)
