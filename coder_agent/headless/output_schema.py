"""`coder-agent run --output-schema FILE`: the final answer as JSON valid against a JSON Schema, for pipelines.

The schema is read and checked before anything opens (a usage error otherwise). The model is told, after the
prompt, to end with one JSON value valid against it and nothing else; the answer it ends with is parsed (a
surrounding Markdown code fence is tolerated) and validated with `jsonschema` (the validator the schema's
`$schema` names, Draft 2020-12 when it names none). An invalid answer gets one more turn, told what was wrong; still
invalid, the run ends with status 4 and the validation error. A valid one is printed alone on stdout (`text`), or
as the result's `structured_output` (`json`, `stream-json`). `jsonschema` is imported only for a run that asks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_SCHEMA_BYTES = 1_000_000
RETRIES = 1
"""More turns an invalid answer gets, told what was wrong."""


class SchemaProblem(Exception):
    """The schema file cannot be used; the message says why in one sentence."""


@dataclass(frozen=True)
class OutputSchema:
    schema: dict[str, Any] | bool
    path: Path

    def instruction(self) -> str:
        """What the model is told after the prompt."""
        return (
            "The answer you end with is read by a program: end your turn with a single JSON value valid against "
            "this JSON Schema, and nothing else (no prose and no code fence around it). Do the task first as "
            f"usual.\n\n```json\n{json.dumps(self.schema, indent=2, ensure_ascii=False)}\n```"
        )

    def retry(self, problem: str) -> str:
        """What the model is told when its answer did not pass."""
        return (
            f"The answer you ended with is not valid against the JSON Schema given: {problem}. Answer again with only "
            "the JSON value, valid against the schema, and nothing else."
        )

    def check(self, answer: str) -> tuple[Any, str | None]:
        """The answer's JSON value and None, or None and why it does not pass (one sentence)."""
        import jsonschema

        text = _unfenced(answer.strip())
        if not text:
            return None, "the answer is empty"
        try:
            value = json.loads(text)
        except ValueError as exc:
            return None, f"it is not JSON ({exc})"
        validator = jsonschema.validators.validator_for(self.schema)(self.schema)
        error = jsonschema.exceptions.best_match(validator.iter_errors(value))
        if error is None:
            return value, None
        where = "".join(f"[{json.dumps(part)}]" for part in error.absolute_path) or "the value"
        return None, f"{where}: {error.message}"


def load(path: Path) -> OutputSchema:
    """The schema in `path`, checked against its meta-schema; SchemaProblem says what is wrong with it."""
    import jsonschema

    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SchemaProblem(f"{path}: {exc.strerror or exc}") from None
    if len(data) > MAX_SCHEMA_BYTES:
        raise SchemaProblem(f"{path}: more than {MAX_SCHEMA_BYTES // 1_000_000} MB; a schema is smaller")
    try:
        schema = json.loads(data)
    except ValueError as exc:
        raise SchemaProblem(f"{path} is not JSON: {exc}") from None
    if not isinstance(schema, (dict, bool)):
        raise SchemaProblem(f"{path}: a JSON Schema is an object (or true or false)")
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        raise SchemaProblem(f"{path} is not a valid JSON Schema: {exc.message}") from None
    return OutputSchema(schema, path)


def _unfenced(text: str) -> str:
    """The text inside one Markdown code fence around all of it (```json … ```), or the text as it is."""
    lines = text.splitlines()
    if len(lines) >= 2 and lines[0].startswith("```") and lines[-1].strip() == "```":
        return "\n".join(lines[1:-1]).strip()
    return text
