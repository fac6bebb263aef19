"""An accept-only fast check compiled from the same JSON Schema documents ``jsonschema`` applies.

``jsonschema`` spends most of a 1 MiB spec's validation in its per-keyword machinery (one
``descend`` per object, a resolver and an error generator per keyword). This module compiles
a schema document once into nested closures that answer a single question: *is the instance
certainly valid?* ``True`` is only returned when every keyword holds under exactly the
semantics ``domain.spec.schema`` gives them (ECMA-262 patterns through ``ecma_regex``, the
strict-integer rule, ``jsonschema``'s ``bool``-is-not-a-number equality). ``False`` means
"not proven": the caller then runs ``jsonschema``'s ``iter_errors``, which alone decides
and describes what is wrong. So this check can make validation faster but never looser, and
any case it is unsure of (``uniqueItems`` over non-strings, ``const`` of a container) answers
``False``.

The schema file stays the single definition: nothing here names a property. A keyword outside
the small set below makes ``compile_check`` raise ``UnsupportedSchema`` (the schema is then
validated by ``jsonschema`` alone), and a test asserts that ``spec-v1`` compiles, so a schema
change that needs a new keyword fails a test instead of silently losing the fast path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from domain.spec.regex import ecma_regex

Check = Callable[[Any], bool]

# Keywords that never constrain an instance.
_ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "title", "description", "examples"})
SUPPORTED_KEYWORDS = frozenset(
    {
        "type",
        "const",
        "enum",
        "minLength",
        "maxLength",
        "pattern",
        "minItems",
        "maxItems",
        "uniqueItems",
        "items",
        "minimum",
        "maximum",
        "required",
        "properties",
        "additionalProperties",
        "maxProperties",
        "propertyNames",
    }
)


class UnsupportedSchema(ValueError):
    """The schema uses a keyword (or a form of one) this module does not compile."""


def _always(_value: Any) -> bool:
    return True


def _never(_value: Any) -> bool:
    return False


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_integer(value: Any) -> bool:
    # The strict-integer rule of ``domain.spec.schema``: a JSON integer token, never 2.0.
    return isinstance(value, int) and not isinstance(value, bool)


_TYPE_TESTS: dict[str, Check] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "integer": _is_integer,
    "number": _is_number,
}


def _type_check(value: Any) -> Check:
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not names or any(n not in _TYPE_TESTS for n in names):
        raise UnsupportedSchema(f"type {value!r}")
    tests = tuple(_TYPE_TESTS[n] for n in names)
    if len(tests) == 1:
        return tests[0]
    return lambda v: any(test(v) for test in tests)


def _equal_check(expected: Any) -> Check:
    """``jsonschema``'s ``equal`` for a scalar: ``true`` is not ``1``, ``1.0`` is ``1``."""
    if expected is None or isinstance(expected, bool):
        return lambda v: v is expected
    if isinstance(expected, str):
        return lambda v: isinstance(v, str) and v == expected
    if _is_number(expected):
        return lambda v: _is_number(v) and v == expected
    raise UnsupportedSchema(f"const or enum value {expected!r}")


def _enum_check(values: Any) -> Check:
    if not isinstance(values, list):
        raise UnsupportedSchema("enum must be a list")
    checks = tuple(_equal_check(value) for value in values)
    return lambda v: any(check(v) for check in checks)


def _string_check(node: Mapping[str, Any]) -> Check | None:
    low = node.get("minLength")
    high = node.get("maxLength")
    pattern = node.get("pattern")
    if low is None and high is None and pattern is None:
        return None
    regex = ecma_regex(pattern) if pattern is not None else None

    def check(v: Any) -> bool:
        if not isinstance(v, str):
            return True
        length = len(v)  # code points, as JSON Schema and ``jsonschema`` count
        if (low is not None and length < low) or (high is not None and length > high):
            return False
        return regex is None or regex.search(v) is not None

    return check


def _number_check(node: Mapping[str, Any]) -> Check | None:
    low = node.get("minimum")
    high = node.get("maximum")
    if low is None and high is None:
        return None
    return lambda v: (
        not _is_number(v) or ((low is None or v >= low) and (high is None or v <= high))
    )


def _array_check(node: Mapping[str, Any]) -> Check | None:
    if not any(key in node for key in ("minItems", "maxItems", "uniqueItems", "items")):
        return None
    low = node.get("minItems")
    high = node.get("maxItems")
    unique = node.get("uniqueItems", False) is True
    item = compile_check(node["items"]) if "items" in node else None

    def check(v: Any) -> bool:
        if not isinstance(v, list):
            return True
        if (low is not None and len(v) < low) or (high is not None and len(v) > high):
            return False
        if unique and not (all(type(x) is str for x in v) and len(set(v)) == len(v)):
            return False  # duplicates, or items whose equality only ``jsonschema`` judges
        return item is None or all(item(x) for x in v)

    return check


def _object_check(node: Mapping[str, Any]) -> Check | None:
    keys = ("required", "properties", "additionalProperties", "maxProperties", "propertyNames")
    if not any(key in node for key in keys):
        return None
    required = frozenset(node.get("required", ()))
    properties = {name: compile_check(sub) for name, sub in node.get("properties", {}).items()}
    extra = node.get("additionalProperties", True)
    closed = extra is False
    extra_check = None if isinstance(extra, bool) else compile_check(extra)
    high = node.get("maxProperties")
    names = compile_check(node["propertyNames"]) if "propertyNames" in node else None

    def check(v: Any) -> bool:
        if not isinstance(v, dict):
            return True
        if not required <= v.keys() or (high is not None and len(v) > high):
            return False
        for key, value in v.items():
            sub = properties.get(key)
            if sub is not None:
                if not sub(value):
                    return False
            elif closed or (extra_check is not None and not extra_check(value)):
                return False
            if names is not None and not names(key):
                return False
        return True

    return check


def compile_check(node: Any) -> Check:
    """The accept-only check of one schema node (a dict or a boolean schema)."""
    if node is True:
        return _always
    if node is False:
        return _never
    if not isinstance(node, dict):
        raise UnsupportedSchema(f"schema node {type(node).__name__}")
    unknown = set(node) - SUPPORTED_KEYWORDS - _ANNOTATIONS
    if unknown:
        raise UnsupportedSchema(f"keywords {sorted(unknown)}")
    if node.get("uniqueItems", False) not in (True, False):
        raise UnsupportedSchema("uniqueItems must be a boolean")
    if isinstance(node.get("items"), list):
        raise UnsupportedSchema("items as a list")
    checks: list[Check] = []
    if "type" in node:
        checks.append(_type_check(node["type"]))
    if "const" in node:
        checks.append(_equal_check(node["const"]))
    if "enum" in node:
        checks.append(_enum_check(node["enum"]))
    for build in (_string_check, _number_check, _array_check, _object_check):
        built = build(node)
        if built is not None:
            checks.append(built)
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda v: first(v) and second(v)
    frozen = tuple(checks)
    return lambda v: all(check(v) for check in frozen)
