"""`glob`: files by name pattern, newest first, respecting .gitignore (ripgrep, or the Python walker)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from pydantic import Field

from coder_agent.permissions import Place
from coder_agent.tools import search
from coder_agent.tools.calls import Outcome, Prepared, text_content
from coder_agent.tools.context import ToolContext
from coder_agent.tools.tool import BuiltinTool, Params, PathText


class GlobParams(Params):
    pattern: PathText = Field(description='A glob such as "**/*.py" or "src/**/test_*.ts".')
    path: PathText | None = Field(default=None, description="The folder to search (default: the working directory).")


class Glob(BuiltinTool):
    name = "glob"
    kind = "search"
    read_only = True
    params = GlobParams

    def title(self, params: GlobParams, ctx: ToolContext) -> str:
        return f"Find `{params.pattern}`{where(params.path, ctx)}"

    async def prepare(self, params: GlobParams, ctx: ToolContext) -> Prepared:
        root = ctx.path(params.path or ctx.cwd)

        async def find() -> search.SearchResult:
            return await search.glob_files(params.pattern, ctx.cwd, path=root.path, outside=ctx.planted)

        return search_call(ctx, root, self.title(params, ctx), find)


def where(path: str | None, ctx: ToolContext) -> str:
    return f" in {ctx.display(ctx.path(path).path)}" if path else ""


def search_call(
    ctx: ToolContext, root: Place, title: str, find: Callable[[], Awaitable[search.SearchResult]]
) -> Prepared:
    """A glob or grep call: a search action on `root`; its result is shown to the user and read by the model."""

    async def run() -> Outcome:
        ctx.still_there(root)
        found = await find()
        return Outcome(found.text, [text_content(found.text)])

    return Prepared(ctx.action("search", root), title, run)
