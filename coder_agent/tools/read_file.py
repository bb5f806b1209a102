"""`read_file`: a file's lines, numbered, for the model to read (and a record that it has read them); an image
(PNG, JPEG, GIF, WebP, told by its first bytes) as the image itself when the model takes images.

Whether a model takes images comes from litellm's model map; a model litellm does not know gets a sentence
instead of the image (a provider that refuses images would fail every later request of the conversation)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from coder_agent.protocol.content import ToolCallLocation
from coder_agent.tools.calls import Outcome, Prepared, text_content
from coder_agent.tools.context import ToolContext
from coder_agent.tools.file_view import DEFAULT_LIMIT, format_lines, format_window
from coder_agent.tools.images import describe, image_parts
from coder_agent.tools.tool import BuiltinTool, Params, PathText


class ReadParams(Params):
    path: PathText = Field(description="The file to read: absolute, or relative to the working directory.")
    offset: int | None = Field(default=None, ge=1, description="The first line to read (1-based).")
    limit: int | None = Field(default=None, ge=1, description="How many lines to read (default 2000).")


class ReadFile(BuiltinTool):
    name = "read_file"
    kind = "read"
    read_only = True
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
            image = await ctx.read_image(path, place.real)
            if image is not None:
                return await _image_outcome(ctx, path, *image)
            read = await ctx.read(path, first=first, limit=params.limit or DEFAULT_LIMIT, real=place.real)
            if not read.whole:
                return Outcome(format_window(read.text, first, read.size))
            ctx.remember(path, read.text)
            return Outcome(format_lines(read.text, first, params.limit))

        location = ToolCallLocation(path=str(path), line=first)
        return Prepared(ctx.action("read", place), self.title(params, ctx), run, [location])


async def _image_outcome(ctx: ToolContext, path: Path, mime: str, data: bytes) -> Outcome:
    what = describe(data, mime)
    sees = await ctx.model_sees_images()
    if sees:
        return Outcome(image_parts(f"{path} is an image ({what}); here it is.", data, mime), [text_content(what)])
    why = (
        "this model does not take images"
        if sees is False
        else "it is not known whether this model takes images (litellm does not know it), so it was not sent"
    )
    return Outcome(f"{path} is an image ({what}); {why}. You cannot see it: if what it shows matters, say so.")
