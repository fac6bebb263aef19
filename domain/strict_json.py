"""The project's one JSON decoder: strict RFC 8259 over strict UTF-8, nothing silently accepted.

Everything that reads JSON (specifications, squad and task state, attestations, agent
definitions, bridge messages) goes through :func:`decode_json`. It rejects what ``json.loads``
lets through: a byte-order mark, invalid UTF-8 (overlong forms and encoded surrogates included,
which Python's strict codec refuses), duplicate object keys at any depth, ``NaN``/``Infinity``,
numbers that overflow to infinity, lone surrogate escapes, and nesting too deep to walk.
Trailing non-whitespace and control characters inside strings are refused by ``json`` itself.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any, NoReturn, TypeAlias

UTF8_BOM = b"\xef\xbb\xbf"
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")

JsonObject: TypeAlias = dict[str, Any]


class JsonDecodeFailure(ValueError):
    """Internal: why bytes are not acceptable JSON. Callers translate it into their own code."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def describe_key(key: str, vocabulary: frozenset[str] = frozenset()) -> str:
    """A key as a message may show it: only a name the caller's schema defines.

    Any other key is document content, and messages never quote content.
    """
    return f"'{key}'" if key in vocabulary else "(a key not shown)"


def _reject_constant(name: str) -> NoReturn:
    raise JsonDecodeFailure(f"non-finite number {name} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JsonDecodeFailure("number overflows to a non-finite value")
    return value


def _unique_pairs_hook(vocabulary: frozenset[str]) -> Callable[[list[tuple[str, Any]]], JsonObject]:
    def unique_pairs(pairs: list[tuple[str, Any]]) -> JsonObject:
        result: JsonObject = {}
        for key, value in pairs:
            if key in result:
                raise JsonDecodeFailure(f"duplicate object key {describe_key(key, vocabulary)}")
            result[key] = value
        return result

    return unique_pairs


def _reject_lone_surrogates(root: Any) -> None:
    # Iterative walk: a recursive one would fail on inputs the C scanner still accepted.
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            if _LONE_SURROGATE.search(node):
                raise JsonDecodeFailure("string contains an unpaired UTF-16 surrogate escape")
        elif isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def decode_utf8(data: bytes) -> str:
    if data.startswith(UTF8_BOM):
        raise JsonDecodeFailure("starts with a UTF-8 byte-order mark")
    try:
        return data.decode("utf-8", errors="strict")
    except UnicodeDecodeError as exc:
        raise JsonDecodeFailure(f"invalid UTF-8 at byte offset {exc.start}") from None


def decode_json(data: bytes, *, vocabulary: frozenset[str] = frozenset()) -> Any:
    """Decode one JSON document from raw bytes, or raise :class:`JsonDecodeFailure`.

    ``vocabulary``: key names a failure message may quote (the caller's schema names).
    """
    text = decode_utf8(data)
    try:
        value = json.loads(
            text,
            object_pairs_hook=_unique_pairs_hook(vocabulary),
            parse_constant=_reject_constant,
            parse_float=_finite_float,
        )
    except json.JSONDecodeError as exc:
        raise JsonDecodeFailure(f"{exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:
        raise JsonDecodeFailure("nesting is too deep") from None
    except ValueError as exc:
        if isinstance(exc, JsonDecodeFailure):
            raise
        # int() refuses integers with more digits than the interpreter allows.
        raise JsonDecodeFailure("number is too long to decode") from None
    _reject_lone_surrogates(value)
    return value


def decode_json_object(data: bytes, *, vocabulary: frozenset[str] = frozenset()) -> JsonObject:
    value = decode_json(data, vocabulary=vocabulary)
    if not isinstance(value, dict):
        raise JsonDecodeFailure(f"top level is a JSON {json_type_name(value)}, not an object")
    return value


def json_type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"
