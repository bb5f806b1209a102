"""Messages sent while a turn runs, managed while they wait: `_session/inject` (the v2 draft "Mid-turn input: queue
and steer", in v1 as an extension), `_session/revoke_inject` and `_session/replace_inject`.

An inject is answered as soon as it is accepted, with the `messageId` its user message will have. `queue` waits
for the running turn (and those before it) to end, then runs as a turn of its own, its message shown to the client
then (`user_message_chunk`s under that id: the v2 draft's `user_message`); on an idle session it runs at once.
`steer` goes into the running turn at its next model request (`session.steering`); with no turn to take it, or if
the turn ends (or is cancelled) first, it is queued instead. Until its message is delivered (the turn starts, or
the running turn takes it) it can be revoked, or its content replaced in place (same id, same place in line);
after that, both fail with `already_delivered` (undoing a delivered message is a rewind). A `session/cancel` ends
the running turn, not the messages waiting behind it. A plain `session/prompt` sent meanwhile waits its turn as
before (it is answered when its turn ends) and cannot be revoked: it is not pending, it is a request in flight.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal
from weakref import WeakKeyDictionary

from anyio.abc import TaskGroup

from coder_agent.errors import InvalidParams
from coder_agent.protocol.content import ContentBlock
from coder_agent.protocol.schema import new_message_id
from coder_agent.session.session import Session
from coder_agent.session.steering import Steer
from coder_agent.session.turn_runner import TurnReport

log = logging.getLogger(__name__)

Prompt = Callable[[Session, Sequence[ContentBlock], TurnReport, Callable[[], bool]], Awaitable[TurnReport]]
"""The manager's `prompt`, with a check made when the turn's place comes (False: it does not run)."""


@dataclass(eq=False)
class Pending:
    """One injected message, until it is delivered."""

    message_id: str
    content: list[ContentBlock]
    state: Literal["pending", "delivered", "revoked"] = "pending"
    steer: Steer | None = None
    """While it waits in the running turn's steering inbox."""

    def deliver(self) -> bool:
        """Its turn starts now: True unless it was revoked (or already delivered)."""
        if self.state != "pending":
            return False
        self.state = "delivered"
        return True


@dataclass
class Injects:
    """One session's injected messages by id (delivered and revoked ones stay, to answer retries)."""

    items: dict[str, Pending] = field(default_factory=dict)


_INJECTS: WeakKeyDictionary[Session, Injects] = WeakKeyDictionary()


def injects(session: Session) -> Injects:
    found = _INJECTS.get(session)
    if found is None:
        found = _INJECTS[session] = Injects()
    return found


async def inject(
    tasks: TaskGroup, prompt: Prompt, session: Session, mode: Literal["queue", "steer"], content: list[ContentBlock]
) -> str:
    """Accept a message (see the module doc); the id its user message will have."""
    if session.closed:
        raise InvalidParams("Invalid params: sessionId: the session is closed", {"reason": "closed"})
    steer = session.services.steering.offer(content) if mode == "steer" else None
    item = Pending(steer.message_id if steer is not None else new_message_id(), list(content), steer=steer)
    injects(session).items[item.message_id] = item
    tasks.start_soon(_deliver, prompt, session, item)
    return item.message_id


def revoke(session: Session, message_id: str) -> None:
    """Withdraw a pending message; InvalidParams `already_delivered` or `unknown_message_id` otherwise."""
    item = _pending(session, message_id)
    if item is None:
        return
    if item.steer is not None and not session.services.steering.withdraw(message_id):
        raise _delivered(message_id)
    item.state = "revoked"


def replace(session: Session, message_id: str, content: list[ContentBlock]) -> None:
    """Change a pending message's content, keeping its id and place; InvalidParams as `revoke`."""
    item = _pending(session, message_id)
    if item is None:
        raise InvalidParams(
            f"Invalid params: messageId: {message_id!r} was revoked", {"messageId": message_id, "reason": "revoked"}
        )
    if item.steer is not None:
        if item.steer.outcome != "waiting":
            raise _delivered(message_id)
        item.steer.prompt = list(content)
    item.content[:] = content


def _pending(session: Session, message_id: str) -> Pending | None:
    item = injects(session).items.get(message_id)
    if item is None:
        raise InvalidParams(
            f"Invalid params: messageId: {message_id!r} is no message injected into this session",
            {"messageId": message_id, "reason": "unknown_message_id"},
        )
    if item.state == "delivered":
        raise _delivered(message_id)
    return None if item.state == "revoked" else item


def _delivered(message_id: str) -> InvalidParams:
    return InvalidParams(
        f"Invalid params: messageId: {message_id!r} was delivered already; rewind to take it back",
        {"messageId": message_id, "reason": "already_delivered"},
    )


async def _deliver(prompt: Prompt, session: Session, item: Pending) -> None:
    """Steered: wait until the turn takes it (delivered) or ends first (then queued). Queued: its own turn, tried
    again after a cancel that came before its place (the cancel was the running turn's)."""
    if item.steer is not None:
        await item.steer.settled.wait()
        if item.steer.outcome == "taken":
            item.state = "delivered"
            return
        item.steer = None
        if item.state != "pending":
            return
    try:
        while item.state == "pending" and not session.closed:
            report = TurnReport(user_message_id=item.message_id, show_prompt=True)
            await prompt(session, item.content, report, item.deliver)
    except Exception:
        log.exception("session %s: a queued message could not be answered", session.id)
    finally:
        session.response_sent()
