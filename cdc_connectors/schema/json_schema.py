"""JSON Schema: parse, check and normal form (compatibility: ``json_schema_compat``).

A schema is checked against the metaschema of the draft its ``$schema`` names (draft 4, 6,
7, 2019-09 or 2020-12), draft-07 when it names none or one that is not known, as Confluent's
registry reads it: ``{"type": 5}`` is invalid. The identity text is the schema as compact
JSON, keys in the order written (as Confluent's canonical string of a JSON schema). Schemas
nested deeper than ``jsontext.MAX_DEPTH`` levels are refused with a reason.
"""

from __future__ import annotations

import functools
from typing import Any

import orjson
from jsonschema import Draft7Validator, validators  # type: ignore[import-untyped]
from jsonschema.exceptions import SchemaError as MetaschemaError  # type: ignore[import-untyped]

from cdc_connectors.schema import jsontext
from cdc_connectors.schema.errors import SchemaError


def parse(schema_str: str) -> Any:
    """The parsed schema: a JSON object or boolean valid under its draft's metaschema."""
    parsed = jsontext.load(schema_str, "JSON schema")
    if not isinstance(parsed, dict | bool):
        raise SchemaError(
            f"a JSON schema must be an object or a boolean, not {type(parsed).__name__}"
        )
    _check(schema_str, parsed)
    return parsed


def normalize(schema_str: str) -> str:
    """The schema as compact JSON."""
    return orjson.dumps(parse(schema_str)).decode()


def _check(schema_str: str, parsed: Any) -> None:
    problem = _metaschema_problem(schema_str) if isinstance(parsed, dict) else None
    if problem:
        raise SchemaError(problem)


@functools.lru_cache(maxsize=512)
def _metaschema_problem(schema_str: str) -> str | None:
    """Why the schema is not valid under its draft's metaschema (None when it is)."""
    parsed = orjson.loads(schema_str)
    dialect = parsed.get("$schema")
    checker = (
        validators.validator_for(parsed, default=Draft7Validator)
        if isinstance(dialect, str)
        else Draft7Validator
    )
    try:
        checker.check_schema(parsed)
    except MetaschemaError as exc:
        where = "".join(f"[{p!r}]" if isinstance(p, int) else f"/{p}" for p in exc.absolute_path)
        return f"not a valid JSON schema at {where or '/'}: {exc.message!s:.300}"
    except RecursionError:
        return "the JSON schema nests too deeply to be checked"
    return None
