"""One validation path for every external input that is not a specification file.

The main Pi's tool calls, the new-task object (``pi-squad modify --task-json`` and
``squad_modify``'s ``task``), review evidence and agent definition files all go through
:func:`parse_input`: the input's JSON Schema (package data, ``domain/spec/schemas``, applied by
``domain.spec.schema`` with ECMA-262 patterns and JSON-integer-only rules), then structuring
into its value class through the one converter here, :data:`INPUT_CONVERTER`. A schema
violation is reported for every failing path at once, with no structuring attempted; a rule
the value class itself enforces (an ``attrs`` validator raising :class:`InvalidField`) is
reported the same way, as ``$.field: detail``.

Pure: no I/O (the schema documents are the package's own constants) and no error codes. Each
caller turns :class:`InputRejected` into its own code (``TASK_INPUT_INVALID``,
``REVIEW_INVALID``, an agent file problem...). Messages never quote input content: they name
JSON paths, schema-defined keys, JSON type names and counts. The wording of a message is the
caller's choice (``describe``): the default, :func:`describe_field`, is the one the CLI's
``--task-json`` has always used; agent files keep theirs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, override

from domain.input_errors import InputRejected, InvalidField
from domain.names import camel
from domain.spec.schema import describe, json_path, violations
from domain.strict_json import json_type_name

if TYPE_CHECKING:
    from jsonschema import ValidationError

T = TypeVar("T")
Describe = Callable[["ValidationError"], list[str]]

_ARTICLES = {
    "string": "a string",
    "boolean": "a boolean",
    "integer": "an integer",
    "number": "a number",
    "object": "an object",
    "array": "an array",
    "null": "null",
}
HIDDEN_KEY = "(a key not shown)"


def type_phrase(schema: object) -> str:
    """What a ``type`` keyword asks for, in words: ``an array of strings or null``."""
    if not isinstance(schema, dict):
        return "a valid value"
    wanted = schema.get("type")
    names = [wanted] if isinstance(wanted, str) else list(wanted or [])
    items = schema.get("items")
    phrases = []
    for name in names:
        phrase = _ARTICLES.get(str(name), str(name))
        if name == "array" and isinstance(items, dict) and isinstance(items.get("type"), str):
            phrase = f"an array of {_ARTICLES[items['type']].split(' ', 1)[1]}s"
        phrases.append(phrase)
    return " or ".join(phrases)


def allowed_values(values: Sequence[object]) -> str:
    """An ``enum``'s values as a person reads them: ``null or one of a, b``."""
    named = ", ".join(str(value) for value in values if value is not None)
    return f"null or one of {named}" if None in values else f"one of {named}"


def describe_field(error: ValidationError) -> list[str]:
    """The CLI's ``--task-json`` wording, with the field's path (``'task.depends[1]'``)."""
    field = json_path(list(error.absolute_path))[2:]
    prefix = f"{field}: " if field else ""
    named = f"'{field}'" if field else "the input"
    keyword = str(error.validator)
    value: Any = error.validator_value
    instance = error.instance
    schema = error.schema if isinstance(error.schema, dict) else {}
    if keyword == "additionalProperties" and isinstance(instance, dict):
        allowed = sorted(schema.get("properties", {}))
        unknown = [HIDDEN_KEY for key in instance if key not in allowed]
        return [f"{prefix}unknown key(s) {', '.join(unknown)}; allowed keys: {', '.join(allowed)}"]
    if keyword == "required" and isinstance(instance, dict):
        missing = [key for key in value if key not in instance]
        return [f"{prefix}missing required key(s): {', '.join(missing)}"]
    if keyword == "type":
        return [f"{named} must be {type_phrase(schema)}, not {json_type_name(instance)}"]
    if keyword == "enum":
        return [f"{named} must be {allowed_values(value)}"]
    return [describe(error)]


def _make_converter() -> cattrs.Converter:
    """Inputs arrive schema-checked, so the converter only maps JSON to values: camelCase keys
    to snake_case fields, arrays to tuples, strings to enums. Unknown keys stay forbidden."""
    converter = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)

    def attrs_class(cls: type[Any]) -> Callable[[Any, Any], Any]:
        renames = {
            field.name: override(rename=camel(field.name))
            for field in attrs.fields(cls)
            if field.init
        }
        return make_dict_structure_fn(cls, converter, **renames)  # type: ignore[arg-type]

    converter.register_structure_hook_factory(attrs.has, attrs_class)
    return converter


INPUT_CONVERTER = _make_converter()


def _structure_problems(exc: cattrs.ClassValidationError) -> list[str]:
    problems: list[str] = []
    with_notes, without_notes = exc.group_exceptions()
    for sub, note in with_notes:
        for line in cattrs.transform_error(sub, f"$.{note.name}"):
            description, _, path = line.rpartition(" @ ")
            problems.append(f"{path}: {description}")
    for sub in without_notes:
        # A value class's own rule: cattrs cannot place it, but the exception names its field.
        if isinstance(sub, InvalidField):
            problems.append(f"$.{sub.field}: {sub.detail}")
        else:
            problems.append(f"$: {type(sub).__name__}")
    return problems


def parse_input(
    schema: str, document: object, cls: type[T], *, describe: Describe = describe_field
) -> T:
    """``document`` checked against ``<schema>.schema.json``, then structured into ``cls``.

    Raises :class:`InputRejected` naming every problem (schema violations in JSON-path order).
    """
    found = violations(schema, document)
    if found:
        raise InputRejected(list(dict.fromkeys(line for e in found for line in describe(e))))
    try:
        value: T = INPUT_CONVERTER.structure(document, cls)
    except cattrs.ClassValidationError as exc:
        raise InputRejected(_structure_problems(exc)) from None
    return value
