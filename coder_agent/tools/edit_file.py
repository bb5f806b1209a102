"""`edit_file`: exact string replacements in a file (one or several, all or none), shown as a diff first, checked
after (`edit_checks`)."""

from __future__ import annotations

from pydantic import Field

from coder_agent.protocol.content import DiffContent, ToolCallLocation
from coder_agent.tools.calls import Outcome, Prepared, ToolError
from coder_agent.tools.context import FileChange, ToolContext
from coder_agent.tools.edit_checks import checked_outcome
from coder_agent.tools.editing import Edit, apply_edits
from coder_agent.tools.tool import BuiltinTool, Params, PathText

MAX_LOCATIONS = 20


class EditItem(Params):
    old_string: str = Field(description="The exact text to replace (unique in the file unless replace_all).")
    new_string: str = Field(description="The text to put in its place.")
    replace_all: bool = Field(default=False, description="Replace every occurrence of old_string.")


class EditParams(Params):
    path: PathText = Field(description="The file to edit: absolute, or relative to the working directory.")
    old_string: str | None = Field(default=None, description="The exact text to replace.")
    new_string: str | None = Field(default=None, description="The text to put in its place.")
    replace_all: bool = Field(default=False, description="Replace every occurrence of old_string.")
    edits: list[EditItem] | None = Field(
        default=None, description="Several edits to apply in order, all or none (instead of old_string/new_string)."
    )

    def to_edits(self) -> list[Edit]:
        edits = [Edit(e.old_string, e.new_string, e.replace_all) for e in self.edits or []]
        if self.old_string is not None or self.new_string is not None:
            if self.old_string is None or self.new_string is None:
                raise ToolError("Give both old_string and new_string (or an edits list).")
            edits.insert(0, Edit(self.old_string, self.new_string, self.replace_all))
        if not edits:
            raise ToolError("Nothing to do: give old_string and new_string, or an edits list.")
        return edits


class EditFile(BuiltinTool):
    name = "edit_file"
    kind = "edit"
    params = EditParams

    def title(self, params: EditParams, ctx: ToolContext) -> str:
        return f"Edit {ctx.display(ctx.path(params.path).path)}"

    async def prepare(self, params: EditParams, ctx: ToolContext) -> Prepared:
        place = ctx.path(params.path)
        path = place.path
        edits = params.to_edits()
        if not await ctx.exists(path):
            raise ToolError(f"{path} does not exist. Use write_file to create a new file.")
        old = await ctx.read_whole(path, "edit", place.real)
        ctx.check_fresh(path, old, "edit")
        result = apply_edits(old, edits)
        diff = DiffContent(path=str(path), old_text=old, new_text=result.new_text)
        ranges = result.changed_ranges()
        locations = [ToolCallLocation(path=str(path), line=r.first) for r in ranges[:MAX_LOCATIONS]]

        async def run() -> Outcome:
            change = FileChange(place, old, result.new_text)
            await ctx.write_all([change])
            return await checked_outcome(ctx, [change], result.message(str(path)), [diff])

        return Prepared(ctx.action("edit", place), self.title(params, ctx), run, locations, [diff])
