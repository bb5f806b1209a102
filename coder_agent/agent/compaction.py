"""Compacting a session's conversation, and how the user sees it.

Where the client advertises `session.compaction`, a compaction is one entry the editor can show and collapse:
`compaction_update` `in_progress`, the summary streamed into it as `compaction_summary_chunk`s while the model
writes it, then `completed` (with the whole summary), `failed` (with the error, the partial summary cleared) or
`cancelled` (the turn was cancelled meanwhile). The replay log keeps the entry, so `session/load` shows it again.
Elsewhere a short agent message says what happened. Retries of the summary call are notices, as in a turn.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable

import anyio

from coder_agent.agent.summarizer import compact, split_point
from coder_agent.model.base import Model, ModelError
from coder_agent.protocol.content import ContentBlock, TextContent
from coder_agent.protocol.schema import AgentMessageChunk, CompactionSummaryChunk, CompactionUpdate, new_message_id
from coder_agent.session.turn_context import TurnContext

Note = Callable[[str], Awaitable[None]]


async def compact_session(ctx: TurnContext, model: Model, focus: str | None, on_retry: Note) -> bool:
    """Summarise the older history and tell the user; False if there was nothing to compact or it failed."""
    history = ctx.conversation.messages
    if split_point(history) == 0:
        return False
    client = ctx.bridge
    if not client.supports_compaction_updates:
        try:
            result = await compact(model, history, focus, on_retry=on_retry)
        except ModelError as exc:
            await _say(ctx, f"\n\n_Compacting the conversation failed: {exc}_\n\n")
            return False
        if result is None:
            return False
        ctx.conversation.compacted(result.messages)
        await _say(ctx, f"\n\n_Context compacted: {result.removed} earlier messages were summarised._\n\n")
        return True

    compaction_id = f"compaction_{uuid.uuid4().hex[:12]}"
    await client.update(CompactionUpdate(compaction_id=compaction_id, status="in_progress"))

    async def chunk(text: str) -> None:
        await client.update(CompactionSummaryChunk(compaction_id=compaction_id, content=TextContent(text=text)))

    try:
        result = await compact(model, history, focus, on_text=chunk, on_retry=on_retry)
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True):
            await client.update(CompactionUpdate(compaction_id=compaction_id, status="cancelled", summary=[]))
        raise
    except ModelError as exc:
        await client.update(CompactionUpdate(compaction_id=compaction_id, status="failed", summary=[], error=str(exc)))
        return False
    if result is None:  # cannot happen after split_point, but never leave an entry in progress
        await client.update(CompactionUpdate(compaction_id=compaction_id, status="cancelled", summary=[]))
        return False
    ctx.conversation.compacted(result.messages)
    summary: list[ContentBlock] = [TextContent(text=result.summary)]
    await client.update(CompactionUpdate(compaction_id=compaction_id, status="completed", summary=summary))
    return True


async def _say(ctx: TurnContext, text: str) -> None:
    await ctx.bridge.update(AgentMessageChunk(content=TextContent(text=text), message_id=new_message_id()))
