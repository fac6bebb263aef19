"""The project's one JSON decoder: strict RFC 8259 over strict UTF-8, nothing silently accepted.

Everything that reads JSON (specifications, squad and task state, attestations, agent
definitions, bridge messages) goes through :func:`decode_json`. It rejects what ``json.loads``
lets through: a byte-order mark, invalid UTF-8 (overlong forms and encoded surrogates included,
which Python's strict codec refuses), duplicate object keys at any depth, ``NaN``/``Infinity``,
numbers that overflow to infinity, lone surrogate escapes, and nesting deeper than the
caller's ``max_depth`` (``MAX_DEPTH`` by default; specifications allow ``SPEC_MAX_DEPTH``).
Trailing non-whitespace and control characters inside strings are refused by ``json`` itself.

Depth counts containers: a scalar is depth 0, ``[]`` is 1, ``{"a": [1]}`` is 2. The bound keeps
every later consumer of a decoded value safe: schema validation, equality of nested values,
the record converters and ``json.dumps`` all recurse per level, and a value nested a few
hundred levels deep would exhaust the interpreter's stack in them. Nothing pi-squad reads
needs more than a handful of levels.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any, NoReturn, TypeAlias

UTF8_BOM = b"\xef\xbb\xbf"
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# A JSON escape of a UTF-16 surrogate (any hex case); may also match an escaped backslash
# followed by "ud800", which only costs the full string check.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")

JsonObject: TypeAlias = dict[str, Any]

# The default bound for every JSON document pi-squad reads (state records, attestations, agent
# definitions, Pi's RPC events): far beyond any legitimate shape, far below what exhausts the
# interpreter's stack (about 1000 frames) in code that recurses once or more per level.
MAX_DEPTH = 128
# A specification is at most four levels deep ($.tasks[i].depends[j]); 32 leaves room for
# future shapes while keeping schema validation's per-level recursion shallow.
SPEC_MAX_DEPTH = 32
# Strings (skipped whole) and the four structural characters: enough to measure the depth of
# text the C scanner refused as too deep.
_STRUCTURE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)


class JsonDecodeFailure(ValueError):
    """Internal: why bytes are not acceptable JSON. Callers translate it into their own code."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class JsonTooDeep(JsonDecodeFailure):
    """The document nests containers deeper than the caller allows."""

    def __init__(self, depth: int, max_depth: int) -> None:
        super().__init__(
            f"arrays and objects are nested {depth} levels deep; allowed {max_depth} levels"
        )
        self.depth = depth
        self.max_depth = max_depth


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


def _check_string(text: str) -> None:
    if _LONE_SURROGATE.search(text):
        raise JsonDecodeFailure("string contains an unpaired UTF-16 surrogate escape")


def _walk(root: Any, *, strings: bool = True) -> int:
    """Refuse lone surrogates anywhere (unless ``strings`` is false); the container depth of
    the value.

    Iterative: a recursive walk would fail on inputs the C scanner still accepted.
    """
    if strings and isinstance(root, str):
        _check_string(root)
    if not isinstance(root, dict | list):
        return 0
    deepest = 0
    stack: list[tuple[dict[str, Any] | list[Any], int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(node, dict):
            if strings:
                for key in node:
                    _check_string(key)
            children: Any = node.values()
        else:
            children = node
        for child in children:
            if isinstance(child, str):
                if strings:
                    _check_string(child)
            elif isinstance(child, dict | list):
                stack.append((child, depth + 1))
    return deepest


def text_depth(text: str) -> int:
    """Container depth of JSON text without decoding it (exact for well-formed JSON)."""
    depth = deepest = 0
    for match in _STRUCTURE.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif token in "]}":
            depth -= 1
    return deepest


def decode_utf8(data: bytes) -> str:
    if data.startswith(UTF8_BOM):
        raise JsonDecodeFailure("starts with a UTF-8 byte-order mark")
    try:
        return data.decode("utf-8", errors="strict")
    except UnicodeDecodeError as exc:
        raise JsonDecodeFailure(f"invalid UTF-8 at byte offset {exc.start}") from None


def decode_json(
    data: bytes, *, vocabulary: frozenset[str] = frozenset(), max_depth: int = MAX_DEPTH
) -> Any:
    """Decode one JSON document from raw bytes, or raise :class:`JsonDecodeFailure`.

    ``vocabulary``: key names a failure message may quote (the caller's schema names).
    ``max_depth``: the deepest container nesting accepted; deeper is :class:`JsonTooDeep`,
    carrying the measured depth.
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
        # The C scanner gave up (about 1000 levels); measure the text so the message can say
        # how deep it is. ``max`` keeps the answer a refusal even for text the scan misjudges.
        raise JsonTooDeep(max(text_depth(text), max_depth + 1), max_depth) from None
    except ValueError as exc:
        if isinstance(exc, JsonDecodeFailure):
            raise
        # int() refuses integers with more digits than the interpreter allows.
        raise JsonDecodeFailure("number is too long to decode") from None
    # Text decoded as strict UTF-8 holds no surrogate, so a decoded string can only hold one
    # through a \uD800-\uDFFF escape: without any such escape in the text, no string
    # needs checking (a 1 MiB spec has ~12,000 of them).
    depth = _walk(value, strings=_SURROGATE_ESCAPE.search(text) is not None)
    if depth > max_depth:
        raise JsonTooDeep(depth, max_depth)
    return value


def decode_json_object(
    data: bytes, *, vocabulary: frozenset[str] = frozenset(), max_depth: int = MAX_DEPTH
) -> JsonObject:
    value = decode_json(data, vocabulary=vocabulary, max_depth=max_depth)
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
