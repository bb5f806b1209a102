"""`fetch`: a web page as Markdown, after the permission layer judged where it goes (each redirect again)."""

from __future__ import annotations

from pydantic import Field

from coder_agent.permissions import Action, FetchTarget, resolve_target
from coder_agent.tools.calls import Outcome, Prepared, text_content
from coder_agent.tools.context import ToolContext
from coder_agent.tools.tool import BuiltinTool, Params


class FetchParams(Params):
    url: str = Field(description="The http:// or https:// URL to get.")


class Fetch(BuiltinTool):
    name = "fetch"
    kind = "fetch"
    params = FetchParams

    def title(self, params: FetchParams, ctx: ToolContext) -> str:
        return f"Fetch {params.url}"

    async def prepare(self, params: FetchParams, ctx: ToolContext) -> Prepared:
        from coder_agent.tools.webpage import fetch

        target = await resolve_target(params.url)

        async def may_follow(hop: FetchTarget) -> str | None:
            """The approved host may redirect within itself (a local one within the same port: allowing one
            local page is not allowing every service there); any other hop must pass the policy on its own."""
            same_place = hop.host == target.host and (hop.local is None or hop.port == target.port)
            if same_place and (hop.local is None or target.local is not None):
                return None
            verdict = ctx.policy.decide(Action("fetch", target=hop))
            return None if verdict.decision == "allow" else verdict.reason

        async def run() -> Outcome:
            page = await fetch(target, may_follow)
            header = f"{page.url} (HTTP {page.status}, {page.content_type or 'unknown type'})"
            summary = f"Fetched {header}: {len(page.text):,} characters"
            return Outcome(f"{header}\n\n{page.text}", [text_content(summary)], failed=page.status >= 400)

        return Prepared(Action("fetch", target=target), self.title(params, ctx), run)
