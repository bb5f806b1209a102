"""`write_file`: create a file or replace its whole content, shown as a diff before it is written, checked after
(`edit_checks`)."""

from __future__ import annotations

from pydantic import Field

from coder_agent.protocol.content import DiffContent, ToolCallLocation
from coder_agent.tools.calls import Outcome, Prepared
from coder_agent.tools.context import FileChange, ToolContext
from coder_agent.tools.edit_checks import checked_outcome
from coder_agent.tools.tool import BuiltinTool, Params, PathText


class WriteParams(Params):
    path: PathText = Field(
        description="The file to create or overwrite: absolute, or relative to the working directory."
    )
    content: str = Field(description="The whole new content of the file.")


class WriteFile(BuiltinTool):
    name = "write_file"
    kind = "edit"
    params = WriteParams

    def title(self, params: WriteParams, ctx: ToolContext) -> str:
        return f"Write {ctx.display(ctx.path(params.path).path)}"

    async def prepare(self, params: WriteParams, ctx: ToolContext) -> Prepared:
        place = ctx.path(params.path)
        path = place.path
        old: str | None = None
        if await ctx.exists(path):
            old = await ctx.read_whole(path, "overwrite", place.real)
            ctx.check_fresh(path, old, "overwrite")
        diff = DiffContent(path=str(path), old_text=old, new_text=params.content)

        async def run() -> Outcome:
            change = FileChange(place, old, params.content)
            await ctx.write_all([change])
            lines = params.content.count("\n") + (0 if params.content.endswith("\n") or not params.content else 1)
            verb = "Created" if old is None else "Overwrote"
            return await checked_outcome(ctx, [change], f"{verb} {path} ({lines} lines).", [diff])

        location = ToolCallLocation(path=str(path))
        return Prepared(ctx.action("edit", place), self.title(params, ctx), run, [location], [diff])
