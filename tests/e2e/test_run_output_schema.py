"""`coder-agent run --output-schema FILE` for pipelines: the model is told the schema after the prompt, its final
answer is validated (a code fence around it tolerated), printed alone on stdout (or as `structured_output`); an
invalid answer gets one retry told what was wrong, then the run ends with status 4 and the validation error; a
schema that is not one is a usage error before anything runs."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from coder_agent.cli import parse_args
from coder_agent.headless.run_options import UsageError, run_options
from tests.support.fake_llm import FakeLLM, Reply
from tests.support.headless import run_here

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

SCHEMA = {
    "type": "object",
    "properties": {"todos": {"type": "array", "items": {"type": "string"}}},
    "required": ["todos"],
    "additionalProperties": False,
}


@pytest.fixture
def schema(tmp_path: Path) -> Path:
    path = tmp_path / "todos.schema.json"
    path.write_text(json.dumps(SCHEMA))
    return path


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "a.py").write_text("# TODO: cache it\n")
    return folder


def user_texts(llm: FakeLLM) -> list[str]:
    return [str(m["content"]) for m in llm.last_request["messages"] if m["role"] == "user"]


async def test_a_valid_answer_is_printed_alone(tmp_path: Path, work: Path, schema: Path, fake_llm: FakeLLM) -> None:
    answer = '```json\n{"todos": ["cache it"]}\n```'
    fake_llm.script([Reply.tool("read_file", {"path": "a.py"}), Reply(answer)])
    ran = await run_here(tmp_path, "--cwd", str(work), "--output-schema", str(schema), "list the TODOs", llm=fake_llm)
    assert ran.code == 0, ran.stderr
    assert ran.stdout == '{"todos": ["cache it"]}\n', "the JSON alone: no prose, no fence"
    [prompt] = user_texts(fake_llm)
    assert prompt.startswith("list the TODOs\n\nThe answer you end with is read by a program")
    assert '"additionalProperties": false' in prompt, "the model is told the schema"
    assert len(fake_llm.requests) == 2


async def test_an_invalid_answer_gets_one_retry_told_what_was_wrong(
    tmp_path: Path, work: Path, schema: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.script([Reply('{"todos": "cache it"}'), Reply('{"todos": ["cache it"]}')])
    args = ["--cwd", str(work), "--output-schema", str(schema), "--output-format", "json", "list the TODOs"]
    ran = await run_here(tmp_path, *args, llm=fake_llm)
    assert ran.code == 0, ran.stderr
    result = ran.json()
    assert result["structured_output"] == {"todos": ["cache it"]}
    assert result["usage"]["model_requests"] == 2
    retry = user_texts(fake_llm)[-1]
    assert retry.startswith("The answer you ended with is not valid against the JSON Schema given")
    assert '["todos"]' in retry and "is not of type 'array'" in retry, retry


async def test_still_invalid_after_the_retry_exits_4_with_the_error(
    tmp_path: Path, work: Path, schema: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.script([Reply("Here are the TODOs: cache it."), Reply("Sorry: cache it.")])
    ran = await run_here(tmp_path, "--cwd", str(work), "--output-schema", str(schema), "list them", llm=fake_llm)
    assert ran.code == 4, ran.stderr
    assert ran.stdout == "", "nothing that is not valid reaches the pipeline"
    assert "The answer is not valid against the JSON Schema of --output-schema: it is not JSON" in ran.stderr
    assert len(fake_llm.requests) == 2, "one retry, no more"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{not json", "is not JSON"),
        ('{"type": "no-such-type"}', "is not a valid JSON Schema"),
        ("[1, 2]", "a JSON Schema is an object"),
    ],
)
def test_a_schema_that_is_not_one_is_a_usage_error(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    args = parse_args(["run", "--output-schema", str(path), "go"])
    with pytest.raises(UsageError, match=problem):
        run_options(args, io.BytesIO(), stdin_tty=True, stderr_tty=True)
    missing = parse_args(["run", "--output-schema", str(tmp_path / "missing.json"), "go"])
    with pytest.raises(UsageError, match="No such file"):
        run_options(missing, io.BytesIO(), stdin_tty=True, stderr_tty=True)
