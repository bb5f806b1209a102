"""`grep`: a regular expression across files, respecting .gitignore (ripgrep, or the Python walker)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from coder_agent.tools import search
from coder_agent.tools.calls import Prepared
from coder_agent.tools.context import ToolContext
from coder_agent.tools.glob import search_call, where
from coder_agent.tools.tool import BuiltinTool, Params, PathText


class GrepParams(Params):
    pattern: str = Field(description="A regular expression (ripgrep syntax).")
    path: PathText | None = Field(
        default=None, description="A file or folder to search (default: the working directory)."
    )
    glob: PathText | None = Field(default=None, description='Only files matching this glob, e.g. "*.py".')
    ignore_case: bool = Field(default=False, description="Match case-insensitively.")
    output_mode: Literal["files_with_matches", "content", "count"] = Field(
        default="files_with_matches",
        description="files_with_matches (default): the files; content: the matching lines; count: per file.",
    )
    context: int = Field(default=0, ge=0, le=20, description="Lines of context around matches (content mode).")


class Grep(BuiltinTool):
    name = "grep"
    kind = "search"
    read_only = True
    params = GrepParams

    def title(self, params: GrepParams, ctx: ToolContext) -> str:
        only = f" ({params.glob})" if params.glob else ""
        return f"Search `{params.pattern}`{where(params.path, ctx)}{only}"

    async def prepare(self, params: GrepParams, ctx: ToolContext) -> Prepared:
        root = ctx.path(params.path or ctx.cwd)

        async def find() -> search.SearchResult:
            return await search.grep(
                params.pattern,
                ctx.cwd,
                path=root.path,
                glob=params.glob,
                ignore_case=params.ignore_case,
                output_mode=params.output_mode,
                context=params.context,
                outside=ctx.planted,
            )

        return search_call(ctx, root, self.title(params, ctx), find)
