"""The edit tool of each model family, in a spawned agent against the fake LLM server: a GPT-5 model is offered
apply_patch and patches through the editor, another family is offered edit_file; the config can choose."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.editor import FakeEditor
from tests.support.fake_llm import Call, FakeLLM, Reply
from tests.support.spawn import spawned_agent

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

PATCH = "\n".join(
    [
        "*** Begin Patch",
        "*** Update File: calc.py",
        "@@ def add(a, b):",
        "-    return a - b",
        "+    return a + b",
        "*** End Patch",
    ]
)


def offered(request: dict[str, object]) -> list[str]:
    return [tool["function"]["name"] for tool in request["tools"]]  # type: ignore[attr-defined, index]


@pytest.mark.parametrize(
    ("model", "extra_env", "edit"),
    [
        ("openai/gpt-5", {}, Call("apply_patch", {"input": PATCH})),
        ("openai/gpt-4o", {}, Call("edit_file", {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"})),
        ("openai/gpt-4o", {"edit_tool": "apply_patch"}, Call("apply_patch", {"input": PATCH})),
    ],
)
async def test_each_family_edits_with_its_own_tool(
    tmp_path: Path, fake_llm: FakeLLM, model: str, extra_env: dict[str, str], edit: Call
) -> None:
    work = tmp_path / "project"
    work.mkdir()
    (work / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    config = tmp_path / "config.toml"
    config.write_text("".join(f'{key} = "{value}"\n' for key, value in extra_env.items()))
    fake_llm.script([Reply(calls=[Call("read_file", {"path": "calc.py"})]), Reply(calls=[edit]), Reply("Fixed.")])
    env = {"CODER_AGENT_MODEL": model, "CODER_AGENT_CONFIG": str(config)}
    async with spawned_agent(tmp_path, llm=fake_llm, env=env) as agent:
        client = agent.client
        editor = FakeEditor(client, root=work)
        try:
            await client.initialize(editor.capabilities())
            session = await client.new_session(str(work))
            assert await client.prompt(session, "fix add", timeout=60) == "end_turn"
        finally:
            await editor.aclose()
        assert await agent.close_stdin_and_wait() == 0
    tools = offered(fake_llm.requests[0])
    assert edit.name in tools
    assert {"apply_patch", "edit_file"} - {edit.name} == {"apply_patch", "edit_file"} - set(tools)
    assert (work / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    (asked,) = editor.permission_requests
    assert asked["toolCall"]["content"][0]["type"] == "diff"
