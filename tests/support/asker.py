"""The editor's question UI for tests: answers `elicitation/create` requests and sees `elicitation/complete`.

`FakeAsker` plugs into a `FakeClient` like `FakeEditor` does (it registers the handler in `client.handlers`), records
every request, and answers from a script (`answers`: response objects, or functions of the request's params), else
`default`. With `hold`, requests wait until the test answers them (`wait_for_request`, `release`), as a user would
take their time; `cancel` does what an editor does when the user cancels the turn: `session/cancel`, then every held
question of that session answered `cancel`. Every answer goes back through the client's conformance checker.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from tests.support.acp_client import FakeClient

Response = dict[str, Any]
Scripted = Response | Callable[[dict[str, Any]], Response]


def accept(**content: Any) -> Response:
    return {"action": "accept", "content": content} if content else {"action": "accept"}


DECLINE: Response = {"action": "decline"}
CANCEL: Response = {"action": "cancel"}


def elicitation_capabilities(form: bool = True, url: bool = True) -> dict[str, Any]:
    """The `elicitation` client capability advertising these modes."""
    return {**({"form": {}} if form else {}), **({"url": {}} if url else {})}


@dataclass(eq=False)
class HeldQuestion:
    params: dict[str, Any]
    answer: Response | None = None
    answered: anyio.Event = field(default_factory=anyio.Event)


class FakeAsker:
    """Answers `elicitation/create` for one client."""

    def __init__(self, client: FakeClient, *, hold: bool = False) -> None:
        self.client = client
        self.hold = hold
        self.answers: list[Scripted] = []
        self.default: Scripted = DECLINE
        self.requests: list[dict[str, Any]] = []
        self.held: list[HeldQuestion] = []
        self._arrived = anyio.Event()
        client.handlers["elicitation/create"] = self.create

    async def create(self, params: dict[str, Any]) -> Response:
        self.requests.append(params)
        if self.hold:
            question = HeldQuestion(params)
            self.held.append(question)
            self._arrived.set()
            self._arrived = anyio.Event()
            try:
                await question.answered.wait()
            finally:
                self.held.remove(question)
            if question.answer is not None:
                return question.answer
        scripted = self.answers.pop(0) if self.answers else self.default
        return scripted(params) if callable(scripted) else scripted

    async def wait_for_request(self, count: int = 1, timeout: float = 10.0) -> HeldQuestion:
        """Wait until `count` questions are held; the `count`-th, oldest first."""
        with anyio.fail_after(timeout):
            while len(self.held) < count:
                await self._arrived.wait()
        return self.held[count - 1]

    def release(self, answer: Response | None = None) -> None:
        """Answer every held question (`answer`, else the script)."""
        for question in list(self.held):
            question.answer = answer
            question.answered.set()

    async def cancel(self, session_id: str) -> None:
        await self.client.notify("session/cancel", {"sessionId": session_id})
        for question in list(self.held):
            if question.params.get("sessionId") == session_id:
                question.answer = CANCEL
                question.answered.set()

    def completed(self) -> list[str]:
        """The elicitation ids the agent sent `elicitation/complete` for, in order."""
        return [
            frame["params"]["elicitationId"]
            for frame in self.client.frames
            if frame.get("method") == "elicitation/complete"
        ]
