"""`fetch`: a web page as Markdown, after the permission layer judged where it goes (each redirect again)."""

from __future__ import annotations

from pydantic import Field

from coder_agent.permissions import Action, FetchTarget, resolve_target
from coder_agent.tools.calls import Outcome, Prepared, text_content
from coder_agent.tools.context import ToolContext
from coder_agent.tools.tool import BuiltinTool, Params

SANDBOX_LOOPBACK = (
    "A server that a sandboxed command or job started listens on the loopback of the session's commands, which "
    "fetch does not reach (it runs in the agent, not in the sandbox): get the page with a command instead (for "
    "example `curl -sS URL`)."
)


class FetchParams(Params):
    url: str = Field(description="The http:// or https:// URL to get.")


class Fetch(BuiltinTool):
    name = "fetch"
    kind = "fetch"
    read_only = True
    params = FetchParams

    def title(self, params: FetchParams, ctx: ToolContext) -> str:
        return f"Fetch {params.url}"

    async def prepare(self, params: FetchParams, ctx: ToolContext) -> Prepared:
        from coder_agent.tools.webpage import FetchError, fetch

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
            try:
                page = await fetch(target, may_follow)
            except FetchError as exc:
                if target.local is None or "loopback" not in target.local or not ctx.commands_have_own_loopback:
                    raise
                raise FetchError(f"{exc}\n{SANDBOX_LOOPBACK}") from None
            header = f"{page.url} (HTTP {page.status}, {page.content_type or 'unknown type'})"
            summary = f"Fetched {header}: {len(page.text):,} characters"
            return Outcome(f"{header}\n\n{page.text}", [text_content(summary)], failed=page.status >= 400)

        return Prepared(Action("fetch", target=target), self.title(params, ctx), run)
