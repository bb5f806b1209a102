"""`read_file`: a file's lines, numbered, for the model to read (and a record that it has read them)."""

from __future__ import annotations

from pydantic import Field

from coder_agent.protocol.content import ToolCallLocation
from coder_agent.tools.calls import Outcome, Prepared
from coder_agent.tools.context import ToolContext
from coder_agent.tools.file_view import DEFAULT_LIMIT, format_lines, format_window
from coder_agent.tools.tool import BuiltinTool, Params, PathText


class ReadParams(Params):
    path: PathText = Field(description="The file to read: absolute, or relative to the working directory.")
    offset: int | None = Field(default=None, ge=1, description="The first line to read (1-based).")
    limit: int | None = Field(default=None, ge=1, description="How many lines to read (default 2000).")


class ReadFile(BuiltinTool):
    name = "read_file"
    kind = "read"
    params = ReadParams

    def title(self, params: ReadParams, ctx: ToolContext) -> str:
        where = ctx.display(ctx.path(params.path).path)
        if params.offset or params.limit:
            first = params.offset or 1
            return (
                f"Read {where} (from line {first})"
                if not params.limit
                else f"Read {where} ({first}–{first + params.limit - 1})"
            )
        return f"Read {where}"

    async def prepare(self, params: ReadParams, ctx: ToolContext) -> Prepared:
        place = ctx.path(params.path)
        path = place.path
        first = params.offset or 1

        async def run() -> Outcome:
            ctx.still_there(place)
            read = await ctx.read(path, first=first, limit=params.limit or DEFAULT_LIMIT, real=place.real)
            if not read.whole:
                return Outcome(format_window(read.text, first, read.size))
            ctx.remember(path, read.text)
            return Outcome(format_lines(read.text, first, params.limit))

        location = ToolCallLocation(path=str(path), line=first)
        return Prepared(ctx.action("read", place), self.title(params, ctx), run, [location])
