"""The contract's JSON Schema documents (package data), applied with ECMA-262 semantics.

Patterns are ECMA-262 (``domain.spec.regex``: ``$`` means end of input, as in the JavaScript
the schemas were written for). Integers are JSON integer tokens only: ``2.0`` is not accepted
where an integer is required.
Messages are built here from the schema and the JSON path, never from the instance, so no spec
content reaches them.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from domain.spec.documents import self_contained_document
from domain.spec.regex import ecma_regex
from domain.spec.schema_fast import Check, UnsupportedSchema, compile_check
from domain.strict_json import json_type_name

if TYPE_CHECKING:
    from jsonschema import ValidationError
    from jsonschema.protocols import Validator

_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})
_SAFE_PATH_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _is_integer(_checker: object, instance: object) -> bool:
    return isinstance(instance, int) and not isinstance(instance, bool)


@functools.cache
def _strict_validator() -> type[Validator]:
    """The ``jsonschema`` validator class with ECMA patterns and strict integers.

    Imported on first use: ``jsonschema`` (with ``referencing``) is a large share of a fresh
    process's start-up, and a valid document never needs it (``fast_check`` proves it).
    """
    from jsonschema import (  # noqa: PLC0415 - deliberately lazy, see above
        Draft202012Validator,
        ValidationError,
        validators,
    )

    def pattern(
        validator: Validator, value: str, instance: Any, _schema: Mapping[str, Any]
    ) -> Iterator[ValidationError]:
        if validator.is_type(instance, "string") and not ecma_regex(value).search(instance):
            yield ValidationError(f"does not match {value}")

    extended: type[Validator] = validators.extend(  # type: ignore[no-untyped-call]
        Draft202012Validator,
        validators={"pattern": pattern},
        type_checker=Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer),
    )
    return extended


@functools.cache
def vocabulary(name: str) -> frozenset[str]:
    """Every property name a schema defines: the keys messages may quote."""
    names: set[str] = set()
    stack: list[Any] = [self_contained_document(name)]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            properties = node.get("properties")
            if isinstance(properties, dict):
                names.update(properties)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return frozenset(names)


@functools.cache
def validator_for(name: str) -> Validator:
    document = self_contained_document(name)
    strict = _strict_validator()
    strict.check_schema(document)
    validator: Validator = strict(document)
    return validator


def compile_schema(document: dict[str, Any]) -> Validator:
    """A caller-supplied JSON Schema (a delegation contract's ``returnSchema``) compiled under
    the same ECMA-pattern, strict-integer semantics as every input schema; raises when it is
    not a schema (jsonschema's ``SchemaError``) or a ``pattern`` is not a regex."""
    strict = _strict_validator()
    strict.check_schema(document)
    stack: list[Any] = [document]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("pattern"), str):
                ecma_regex(node["pattern"])
            # Instance data, not subschemas: a "pattern" key there is no regex.
            stack.extend(v for k, v in node.items() if k not in _DATA_KEYWORDS)
        elif isinstance(node, list):
            stack.extend(node)
    validator: Validator = strict(document)
    return validator


@functools.cache
def _branch_validator(name: str, index: int) -> Validator:
    document = self_contained_document(name)
    branch = {"$schema": document["$schema"], **document["oneOf"][index]}
    strict = _strict_validator()
    strict.check_schema(branch)
    validator: Validator = strict(branch)
    return validator


def branch_violations(name: str, index: int, instance: Any) -> list[ValidationError]:
    """Violations of one ``oneOf`` branch: precise messages once the form is known."""
    found = list(_branch_validator(name, index).iter_errors(instance))
    return sorted(found, key=lambda e: (_sort_key(e.absolute_path), str(e.validator)))


def json_path(parts: Sequence[str | int]) -> str:
    rendered = ["$"]
    for part in parts:
        if isinstance(part, int):
            rendered.append(f"[{part}]")
        elif _SAFE_PATH_KEY.match(part) or re.match(r"^[A-Za-z0-9._-]{1,64}$", part):
            rendered.append(f".{part}")
        else:
            rendered.append("[?]")
    return "".join(rendered)


def describe(error: ValidationError) -> str:
    """A one-line, content-free description of one schema violation."""
    where = json_path(list(error.absolute_path))
    keyword = str(error.validator)
    value: Any = error.validator_value
    instance = error.instance
    if keyword == "additionalProperties" and isinstance(instance, dict):
        properties = error.schema.get("properties", {}) if isinstance(error.schema, dict) else {}
        allowed = sorted(properties)
        extra = len(set(instance) - set(allowed))
        # The unknown names themselves are document content and stay out of the message.
        noun = "property" if extra == 1 else "properties"
        fix = (
            "remove it or correct its name" if extra == 1 else "remove them or correct their names"
        )
        return f"{where}: {extra} unknown {noun} (allowed: {', '.join(allowed)}): {fix}"
    if keyword == "required" and isinstance(instance, dict):
        missing = [key for key in value if key not in instance]
        return f"{where}: missing required property {', '.join(repr(k) for k in missing)}"
    if keyword == "type":
        expected = value if isinstance(value, str) else " or ".join(value)
        return f"{where}: expected {expected}, found {json_type_name(instance)}"
    if keyword == "pattern":
        return f"{where}: does not match the pattern {value}"
    if keyword == "enum":
        return f"{where}: must be one of {', '.join(json.dumps(v) for v in value)}"
    if keyword == "const":
        return f"{where}: must be {json.dumps(value)}"
    if keyword == "minLength":
        return f"{where}: must not be empty" if value == 1 else f"{where}: shorter than {value}"
    if keyword in {"minItems", "maxItems"} and isinstance(instance, list):
        bound = "at least" if keyword == "minItems" else "at most"
        return f"{where}: has {len(instance)} items; allowed {bound} {value}"
    if keyword in {"minProperties", "maxProperties"} and isinstance(instance, dict):
        bound = "at least" if keyword == "minProperties" else "at most"
        # Name the properties that may fill the object (schema text, never the instance's).
        properties = error.schema.get("properties", {}) if isinstance(error.schema, dict) else {}
        among = f" of {', '.join(sorted(properties))}" if properties else ""
        return f"{where}: has {len(instance)} entries; allowed {bound} {value}{among}"
    if keyword == "uniqueItems":
        return f"{where}: contains duplicate items"
    if keyword in {"minimum", "maximum"}:
        bound = "at least" if keyword == "minimum" else "at most"
        return f"{where}: is {instance}; allowed {bound} {value}"
    if keyword == "propertyNames":
        return f"{where}: has a property name that does not match the required pattern"
    if keyword == "oneOf":
        return f"{where}: matches neither accepted form"
    return f"{where}: violates {keyword}"


@functools.cache
def fast_check(name: str) -> Check | None:
    """The accept-only check compiled from the same document (``domain.spec.schema_fast``);
    ``None`` when the document uses a keyword it does not compile."""
    try:
        return compile_check(self_contained_document(name))
    except UnsupportedSchema:
        return None


def violations(name: str, instance: Any) -> list[ValidationError]:
    """Every violation, in document order (by JSON path), so reports are deterministic."""
    accepts = fast_check(name)
    if accepts is not None and accepts(instance):
        # Proven valid under the same keywords and semantics: ``iter_errors`` would find
        # nothing. Only a document the fast check cannot prove valid pays for ``jsonschema``.
        return []
    found = list(validator_for(name).iter_errors(instance))
    return sorted(found, key=lambda e: (_sort_key(e.absolute_path), str(e.validator)))


def _sort_key(path: Sequence[str | int]) -> tuple[tuple[int, int | str], ...]:
    return tuple((0, p) if isinstance(p, int) else (1, p) for p in path)
