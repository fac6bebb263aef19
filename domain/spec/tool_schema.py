"""A tool's ``parameters`` as every model provider Pi speaks to accepts them, derived from the
schema file its input is validated against.

Providers accept less than JSON Schema allows. OpenAI (Chat Completions and Responses) refuses a
function whose schema is not ``type: object`` or has ``oneOf``/``anyOf``/``allOf``/``enum``/
``not`` at the top level; Pi's Anthropic adapter keeps only the top-level ``properties`` and
``required``; no provider resolves ``$ref``. So a schema whose top level is a choice of object
forms (``oneOf`` branches) is shown as one object: every field any form accepts under
``properties`` (a field the forms define differently becomes the ``anyOf`` of its definitions,
discriminating constants one ``enum``), ``required`` only what every form requires, and a
``description`` naming each form. The shown schema accepts a superset of the forms; after Pi
hands a call over, it is validated against the full schema, branches and all, so nothing is
accepted that was refused before.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

TOP_LEVEL_REFUSED = ("oneOf", "anyOf", "allOf", "enum", "const", "not", "if", "then", "else")
"""Keys no provider-safe ``parameters`` has at its top level."""
_CHOICES = ("oneOf", "anyOf")
_FILE_KEYS = ("$schema", "$id", "title")


class UnsafeToolSchema(ValueError):
    """A schema that cannot be shown to providers as one object (a bug in a schema file)."""


def provider_parameters(document: Mapping[str, Any]) -> dict[str, Any]:
    """The provider-safe ``parameters`` of a self-contained schema ``document``."""
    body = {key: value for key, value in document.items() if key not in _FILE_KEYS}
    choice = next((key for key in _CHOICES if key in body), None)
    if choice is not None:
        branches = body.pop(choice)
        body = {**_merged(branches, choice), **body}
    for key in TOP_LEVEL_REFUSED:
        if key in body:
            raise UnsafeToolSchema(f"a tool schema cannot have {key!r} at its top level")
    if body.get("type", "object") != "object":
        raise UnsafeToolSchema("a tool schema must describe an object")
    shown = {"type": "object", "properties": {}, **body}
    problems = provider_schema_problems(shown, accepted_fields(document))
    if problems:
        raise UnsafeToolSchema("; ".join(problems))
    copied: dict[str, Any] = json.loads(json.dumps(shown))  # callers never share the input
    return copied


def accepted_fields(document: Mapping[str, Any]) -> frozenset[str]:
    """Every top-level field some form of ``document`` accepts (the full, validating schema)."""
    fields: set[str] = set()
    for form in _forms(document):
        properties = form.get("properties")
        if isinstance(properties, Mapping):
            fields.update(properties)
    return frozenset(fields)


def provider_schema_problems(parameters: Mapping[str, Any], accepted: frozenset[str]) -> list[str]:
    """What a provider would refuse or lose in ``parameters``: a top-level combinator, a field
    ``accepted`` by the validating schema but not named under top-level ``properties``, or a
    ``$ref`` anywhere."""
    problems = [f"top-level {key!r}" for key in TOP_LEVEL_REFUSED if key in parameters]
    if parameters.get("type") != "object":
        problems.append("top-level type is not 'object'")
    properties = parameters.get("properties")
    named = set(properties) if isinstance(properties, Mapping) else set()
    missing = sorted(accepted - named)
    if missing:
        problems.append(f"accepted fields not under top-level properties: {', '.join(missing)}")
    problems.extend(f"$ref at {path}" for path in _references(parameters, "$"))
    return problems


def _forms(document: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    branches: list[Any] = [
        branch
        for key in _CHOICES
        if isinstance(document.get(key), list)
        for branch in document[key]
    ]
    if not branches:
        yield document
        return
    for branch in branches:
        if isinstance(branch, Mapping):
            yield from _forms(branch)


def _merged(branches: Sequence[Any], choice: str) -> dict[str, Any]:
    forms = list(_forms({choice: branches}))
    if not forms or any(form.get("type") != "object" for form in forms):
        raise UnsafeToolSchema(f"every {choice} branch of a tool schema must be an object")
    definitions: dict[str, list[Any]] = {}
    for form in forms:
        for field, definition in form.get("properties", {}).items():
            seen = definitions.setdefault(field, [])
            if definition not in seen:
                seen.append(definition)
    required = [
        field
        for field in forms[0].get("required", [])
        if all(field in form.get("required", []) for form in forms)
    ]
    merged: dict[str, Any] = {
        "type": "object",
        "properties": {field: _one(defined) for field, defined in definitions.items()},
        "description": "Exactly one of these forms: "
        + "; ".join(_form_line(form) for form in forms)
        + ".",
    }
    if required:
        merged["required"] = required
    if all(form.get("additionalProperties") is False for form in forms):
        merged["additionalProperties"] = False
    return merged


def _one(definitions: list[Any]) -> Any:
    if len(definitions) == 1:
        return definitions[0]
    values = [_constants(definition) for definition in definitions]
    if all(found is not None for found in values):
        union: list[Any] = []
        for found in values:
            assert found is not None
            union.extend(value for value in found if value not in union)
        return {"enum": union}
    return {"anyOf": definitions}


def _constants(definition: Any) -> list[Any] | None:
    if not isinstance(definition, Mapping):
        return None
    if set(definition) <= {"const", "description"} and "const" in definition:
        return [definition["const"]]
    if set(definition) <= {"enum", "description", "type"} and isinstance(
        definition.get("enum"), list
    ):
        return list(definition["enum"])
    return None


def _form_line(form: Mapping[str, Any]) -> str:
    properties = form.get("properties", {})
    fixed = [
        f"{field}={json.dumps(definition['const'])}"
        for field, definition in properties.items()
        if isinstance(definition, Mapping) and "const" in definition and field != "version"
    ]
    required = form.get("required", [])
    head = f"{{{', '.join(fixed)}}} " if fixed else ""
    return f"{head}needs {', '.join(required) or 'no field'}"


def _references(node: Any, path: str) -> Iterator[str]:
    if isinstance(node, Mapping):
        for key, value in node.items():
            if key == "$ref":
                yield path
            else:
                yield from _references(value, f"{path}.{key}")
    elif isinstance(node, list):
        for position, item in enumerate(node):
            yield from _references(item, f"{path}[{position}]")
