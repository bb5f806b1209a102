"""Sessions: their saved state (`state`, `conversation`, `replay`), their live services (`services`, the
`ClientBridge` seam and its redacting wrapper, saves), the frozen view a turn gets (`turn_context`), and the
turns themselves (`session`); config options, questions for the user, the `TurnRunner` seam."""

from coder_agent.session.conversation import Conversation, Spending
from coder_agent.session.session import Session
from coder_agent.session.state import SessionState

__all__ = ["Conversation", "Session", "SessionState", "Spending"]
