"""Turn a pydantic model into the `input_schema` of a tool definition.

The contract's pydantic models are the single source of truth: the same class validates the
model's answer and, through `tool_input_schema`, tells the model what to answer. The schema is
made portable for Anthropic-compatible local servers, many of which do not resolve `$ref`:

- every `$ref` into `$defs` is inlined and `$defs` dropped (a recursive model cannot be
  inlined and is refused);
- every object schema with `properties` gets `additionalProperties: false` unless the model
  already says otherwise, so the model cannot invent fields;
- pydantic's generated `title` annotations are dropped: they repeat the field names and cost
  prompt tokens on every call. Only the keyword is dropped; a property named "title" stays.

With `lean=True` the schema keeps only what tells the model the answer's shape: types, enums,
properties, required, `additionalProperties`. Annotations and bounds the validator enforces on
its own (descriptions, defaults, lengths, counts, patterns) are dropped, and an optional
`anyOf [X, null]` becomes X (leaving a field out is how the model says "none"). The validating
pydantic model is unchanged: a lean schema is shorter to send, never looser to accept. The rules
the dropped descriptions carried belong in the system prompt then.

The output is a fresh plain dict, the same for the same model on every call.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from memoryd.errors import MemorydError

_DEFS_PREFIX = "#/$defs/"

# Keywords whose value is one schema, a list of schemas, or a map of name -> schema.
_SINGLE_SCHEMA_KEYWORDS = frozenset({"items", "not", "additionalProperties", "contains"})
_LIST_SCHEMA_KEYWORDS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
_MAP_SCHEMA_KEYWORDS = frozenset({"properties", "patternProperties"})
# What a lean schema leaves out (the validator enforces the bounds; the prompt states the rules).
_LEAN_DROPPED = frozenset(
    {"description", "default", "maxLength", "minLength", "maxItems", "minItems", "pattern"}
)


class SchemaError(MemorydError):
    """A pydantic model cannot be expressed as a portable tool schema."""


def tool_input_schema(model: type[BaseModel], *, lean: bool = False) -> dict[str, Any]:
    """Given a pydantic model, return a self-contained JSON Schema for a tool's input (with
    `lean`, only the answer's shape; see the module's docstring).

    Raise SchemaError if the model is recursive or its schema is not an object.
    """
    raw = model.model_json_schema(mode="validation")
    definitions: Mapping[str, Any] = raw.get("$defs", {})
    schema = _portable(raw, definitions, seen=())
    if schema.get("type") != "object":
        raise SchemaError(f"{model.__name__}: a tool input schema must be an object")
    return _lean(schema) if lean else schema


def _lean(schema: Mapping[str, Any]) -> dict[str, Any]:
    options = schema.get("anyOf")
    if isinstance(options, list):
        kept = [option for option in options if option != {"type": "null"}]
        if len(kept) == 1 and isinstance(kept[0], Mapping):
            rest = {key: value for key, value in schema.items() if key != "anyOf"}
            return _lean({**rest, **kept[0]})
    result: dict[str, Any] = {}
    for keyword, value in schema.items():
        if keyword in _LEAN_DROPPED:
            continue
        if keyword in _MAP_SCHEMA_KEYWORDS and isinstance(value, Mapping):
            result[keyword] = {name: _lean(sub) for name, sub in value.items()}
        elif keyword in _LIST_SCHEMA_KEYWORDS and isinstance(value, list):
            result[keyword] = [_lean(sub) for sub in value]
        elif keyword in _SINGLE_SCHEMA_KEYWORDS and isinstance(value, Mapping):
            result[keyword] = _lean(value)
        else:
            result[keyword] = value
    return result


def _portable(
    schema: Mapping[str, Any], definitions: Mapping[str, Any], seen: tuple[str, ...]
) -> dict[str, Any]:
    reference = schema.get("$ref")
    if isinstance(reference, str):
        return _inline(reference, schema, definitions, seen)
    result: dict[str, Any] = {}
    for keyword, value in schema.items():
        if keyword in {"$defs", "title"}:
            continue
        if keyword in _MAP_SCHEMA_KEYWORDS and isinstance(value, Mapping):
            result[keyword] = {
                name: _portable(sub, definitions, seen) for name, sub in value.items()
            }
        elif keyword in _LIST_SCHEMA_KEYWORDS and isinstance(value, list):
            result[keyword] = [_portable(sub, definitions, seen) for sub in value]
        elif keyword in _SINGLE_SCHEMA_KEYWORDS and isinstance(value, Mapping):
            result[keyword] = _portable(value, definitions, seen)
        else:
            # Annotations and constraints (enum, default, description, ...) are data, copied
            # so that callers may mutate the result without touching pydantic's cache.
            result[keyword] = copy.deepcopy(value)
    if result.get("type") == "object" and "properties" in result:
        result.setdefault("additionalProperties", False)
    return result


def _inline(
    reference: str,
    schema: Mapping[str, Any],
    definitions: Mapping[str, Any],
    seen: tuple[str, ...],
) -> dict[str, Any]:
    if not reference.startswith(_DEFS_PREFIX):
        raise SchemaError(f"cannot inline the reference {reference!r}")
    name = reference.removeprefix(_DEFS_PREFIX)
    if name in seen:
        raise SchemaError(f"{name} refers to itself; a recursive schema cannot be inlined")
    if name not in definitions:
        raise SchemaError(f"the reference {reference!r} has no definition")
    inlined = _portable(definitions[name], definitions, (*seen, name))
    # pydantic puts field-level annotations (a description) next to the $ref; they describe
    # this use of the definition and win over the definition's own.
    siblings = {key: value for key, value in schema.items() if key != "$ref"}
    inlined.update(_portable(siblings, definitions, seen))
    return inlined
