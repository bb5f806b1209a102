"""`Saver`: saves one session in the background, coalescing requests, so a turn never waits on the disk mid-stream.

`soon()` asks for a save of the current state; saves run one at a time in a worker thread, and requests
made during a save lead to one more save after it. `flush()` waits until what was asked is on disk. A
failed save is logged and reported once through `on_failure` (the user is told), never fatal to the turn.
A `Saver()` with no store saves nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import anyio
from anyio.abc import TaskGroup

from coder_agent.store import SessionRecord, SessionStore

log = logging.getLogger(__name__)


class Saver:
    """Background saves of one session's snapshots to a store."""

    def __init__(
        self,
        store: SessionStore | None = None,
        snapshot: Callable[[], SessionRecord] | None = None,
        tasks: TaskGroup | None = None,
        on_failure: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        self.store = store
        self.snapshot = snapshot
        self.tasks = tasks
        self.on_failure = on_failure
        self.failing = False
        """True while the last save failed (the user was told once)."""
        self._dirty = False
        self._running = False
        self._idle = anyio.Event()
        self._idle.set()

    def soon(self) -> None:
        if self.store is None:
            return
        self._dirty = True
        if self._running or self.tasks is None:
            return  # a save in flight picks this up; with no background, flush() saves
        self._running = True
        self._idle = anyio.Event()
        self.tasks.start_soon(self._run)

    async def flush(self) -> None:
        """Wait for a save of everything asked so far (saving now if nothing runs in the background)."""
        if self._running:
            await self._idle.wait()
        if self._dirty:
            await self._save_dirty()

    async def _run(self) -> None:
        try:
            with anyio.CancelScope(shield=True):
                while self._dirty:
                    await self._save_dirty()
        finally:
            self._running = False
            self._idle.set()

    async def _save_dirty(self) -> None:
        assert self.store is not None
        assert self.snapshot is not None, "a saver with a store needs a snapshot"
        self._dirty = False
        try:
            record = self.snapshot()
            await anyio.to_thread.run_sync(self.store.save, record)
        except Exception as exc:
            log.exception("session could not be saved")
            if not self.failing and self.on_failure is not None:
                self.failing = True
                await self.on_failure(str(exc))
            return
        self.failing = False
