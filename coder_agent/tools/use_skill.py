"""`use_skill`: a skill's instructions (its `SKILL.md` without the front matter), read when the model uses it, with
the list of the other files in its folder.

The model learns the skills' names and descriptions from its system prompt (`extensions`); this tool is offered
only when there are some. Reading a skill asks nothing: it is the agent's own catalog (a project's skill is
repository content, read as text; a symlink out of the repository is not read). The folder's other files are
read with read_file like any file, so one outside the workspace (a skill of the user's) asks as usual.
"""

from __future__ import annotations

import functools

import anyio
from pydantic import Field

from coder_agent import extensions
from coder_agent.permissions import Action
from coder_agent.tools.calls import Outcome, Prepared, ToolError
from coder_agent.tools.context import ToolContext
from coder_agent.tools.tool import BuiltinTool, Params

MAX_LISTED_FILES = 50


class SkillParams(Params):
    name: str = Field(description="The skill's name, as the system prompt lists it.")


class UseSkill(BuiltinTool):
    name = "use_skill"
    kind = "read"
    params = SkillParams

    def title(self, params: SkillParams, ctx: ToolContext) -> str:
        return f"Use the skill {params.name}"

    async def prepare(self, params: SkillParams, ctx: ToolContext) -> Prepared:
        load = functools.partial(extensions.load_catalog, ctx.cwd, refuse=ctx.reading_refused)
        catalog = await anyio.to_thread.run_sync(load)
        skill = catalog.skill(params.name)
        if skill is None:
            names = ", ".join(f"`{s.name}`" for s in catalog.skills) or "none"
            raise ToolError(f"There is no skill named {params.name!r}. The skills are: {names}.")

        async def run() -> Outcome:
            root = extensions.root_for(skill.origin, ctx.cwd)
            try:
                read = functools.partial(extensions.read_body, skill.path, root, refuse=ctx.reading_refused)
                body = await anyio.to_thread.run_sync(read)
                files = await anyio.to_thread.run_sync(_other_files, skill)
            except (OSError, ValueError) as exc:
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                raise ToolError(f"The skill {skill.name} cannot be read: {skill.path}: {reason}.") from None
            listed = ", ".join(files) if files else "none"
            return Outcome(
                f"The skill `{skill.name}`, from {skill.path}:\n\n{body}\n\n"
                f"Its folder is {skill.folder}; its other files (paths relative to it): {listed}. Read them with "
                "read_file when the instructions call for them."
            )

        return Prepared(Action("read"), self.title(params, ctx), run)


def _other_files(skill: extensions.Skill) -> list[str]:
    found: list[str] = []
    for path in sorted(skill.folder.rglob("*")):
        if path.is_file() and path.name != extensions.SKILL_FILE:
            found.append(path.relative_to(skill.folder).as_posix())
            if len(found) == MAX_LISTED_FILES:
                found.append("…")
                break
    return found
