"""Sessions: their state and turns (`session`), the seams they talk through (`ClientBridge`, `TurnRunner`),
their config options, background saves and replay log."""

from coder_agent.session.session import Conversation, Session

__all__ = ["Conversation", "Session"]
