"""The ACP schema files read for tests: `tests/acp_schema/schema.json` (v1.25), its unstable companion, and
`rfd.schema.json` (the session updates newer than both, from their RFDs); the method table built from their
`x-method`/`x-side` marks; and validating one instance against one `$defs` entry, with an error that names the JSON
path and the variant the instance was meant for. `conformance.Conformance` checks a whole connection with these.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any, Final, Literal

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match

SCHEMA_PATH: Final = Path(__file__).resolve().parent.parent / "acp_schema" / "schema.json"
UNSTABLE_SCHEMA_PATH: Final = SCHEMA_PATH.with_name("schema.unstable.json")
RFD_SCHEMA_PATH: Final = SCHEMA_PATH.with_name("rfd.schema.json")
"""Session updates newer than the schema (sub-agent sessions, plan operations), written from their RFDs."""

Side = Literal["agent", "client"]
Kind = Literal["Request", "Response", "Notification"]

_KINDS: Final[tuple[Kind, ...]] = ("Request", "Response", "Notification")
_MAX_SHOWN: Final = 500


@cache
def load_schema(unstable: bool = False) -> dict[str, Any]:
    """The parsed ACP schema, or its unstable companion (cached; treat as read-only)."""
    with (UNSTABLE_SCHEMA_PATH if unstable else SCHEMA_PATH).open(encoding="utf-8") as f:
        schema: dict[str, Any] = json.load(f)
    return schema


@cache
def method_table(unstable: bool = False) -> dict[tuple[str, Kind, str], str]:
    """``(x-side, kind, method) -> def name`` for every ``$defs`` entry carrying ``x-method``, built once."""
    table: dict[tuple[str, Kind, str], str] = {}
    for name, definition in load_schema(unstable)["$defs"].items():
        method = definition.get("x-method")
        if method is None:
            continue
        kind = next((k for k in _KINDS if name.endswith(k)), None)
        if kind is None:
            raise RuntimeError(f"schema def {name} has x-method {method!r} but no Request/Response/Notification suffix")
        key = (definition["x-side"], kind, method)
        if key in table:
            raise RuntimeError(f"schema defs {table[key]} and {name} both claim {key}")
        table[key] = name
    return table


def def_for(method: str, handler: Side, kind: Kind, *, unstable: bool = False) -> str | None:
    """The def for ``method`` of ``kind`` when handled by ``handler`` (``protocol`` methods match either side)."""
    table = method_table(unstable)
    return table.get((handler, kind, method)) or table.get(("protocol", kind, method))


@cache
def load_rfd_schema() -> dict[str, Any]:
    """The RFD shapes (cached; treat as read-only)."""
    with RFD_SCHEMA_PATH.open(encoding="utf-8") as f:
        schema: dict[str, Any] = json.load(f)
    return schema


def rfd_def(method: str, kind: Kind) -> str:
    """The RFD schema's def of a client method's params or result (`lsp/servers` -> `LspServersRequest`)."""
    name = "".join(part.capitalize() for part in method.replace("/", "_").split("_"))
    return f"{name}{kind}"


@cache
def _validator(def_name: str, unstable: bool = False) -> Draft202012Validator:
    rfd = load_rfd_schema()["$defs"]
    if def_name in rfd:
        return Draft202012Validator({"$ref": f"#/$defs/{def_name}", "$defs": rfd})
    defs = load_schema(unstable)["$defs"]
    if def_name not in defs:
        path = UNSTABLE_SCHEMA_PATH if unstable else SCHEMA_PATH
        raise KeyError(f"no $defs entry named {def_name!r} in {path.name}")
    return Draft202012Validator({"$ref": f"#/$defs/{def_name}", "$defs": defs})


def show(msg: object) -> str:
    try:
        text = json.dumps(msg, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):  # circular structures and the like
        text = repr(msg)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


def _is_discriminator_miss(error: ValidationError) -> bool:
    """True when a oneOf/anyOf branch failed on what selects it: a tag's const/enum, or the value's own type."""
    depth = len(error.relative_path)
    return (error.validator in ("const", "enum") and depth <= 1) or (error.validator == "type" and depth == 0)


def _explain(error: ValidationError) -> tuple[str, str]:
    """JSON path and message for ``error``, looking inside oneOf/anyOf for the branch the instance was meant for."""
    while error.validator in ("oneOf", "anyOf") and error.context:
        branches: dict[Any, list[ValidationError]] = {}
        for sub in error.context:
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        plausible = [errs for errs in branches.values() if not any(_is_discriminator_miss(e) for e in errs)]
        if len(plausible) == 1:  # e.g. the SessionUpdate variant whose "sessionUpdate" tag matched
            error = best_match(plausible[0]) or error
            continue
        tags = [e for e in error.context if e.validator in ("const", "enum") and len(e.relative_path) <= 1]
        tagged = {e.relative_schema_path[0] for e in tags}
        if not plausible and tagged == branches.keys():  # every variant is tagged and none matched: list the tags
            allowed: list[Any] = []
            for tag in tags:
                values = [tag.validator_value] if tag.validator == "const" else list(tag.validator_value)
                allowed += [v for v in values if v not in allowed]
            return tags[0].json_path, f"{tags[0].instance!r} is not one of {allowed}"
        break
    return error.json_path, error.message


def check_def(def_name: str, instance: object, *, what: str, path: str, msg: object, unstable: bool = False) -> None:
    error = best_match(_validator(def_name, unstable).iter_errors(instance))
    if error is None:
        return
    json_path, problem = _explain(error)
    where = path + json_path[1:]  # json_path is relative to `instance` and starts with "$"
    schema = " (unstable schema)" if unstable else ""
    raise AssertionError(
        f"ACP conformance: {what} does not match {def_name}{schema}\n  at {where}: {problem}\n  message: {show(msg)}"
    )


def check_both(
    stable: str | None, unstable: str | None, instance: object, *, what: str, path: str, msg: object
) -> None:
    """Check against the stable def and the unstable one, where each schema has it."""
    if stable is not None:
        check_def(stable, instance, what=what, path=path, msg=msg)
    if unstable is not None:
        check_def(unstable, instance, what=what, path=path, msg=msg, unstable=True)


def validate(def_name: str, instance: object, *, unstable: bool = False) -> None:
    """Validate ``instance`` against ``$defs[def_name]``; raise ``AssertionError`` naming the failing JSON path."""
    check_def(def_name, instance, what=def_name, path="$", msg=instance, unstable=unstable)


def violation(where: str, problem: str, msg: object) -> AssertionError:
    return AssertionError(f"ACP conformance ({where}): {problem}\n  message: {show(msg)}")


def as_object(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
