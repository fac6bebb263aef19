"""Shared shape of the two task-owned files: key names, field readers and writers.

Readers raise :class:`ShapeError` with a reason that names a JSON path and, at most, numbers
and pattern-checked IDs; a raw string from a file is never quoted back. Integers must be real
JSON integers (``true`` is not ``1``, ``1.0`` is not ``1``) within the range every JSON
consumer represents exactly (``0..2**53-1``), which also keeps numbers in reasons short.
"""

from __future__ import annotations

from typing import Any

import attrs

from domain.attestation.binding import SHA256_HEX_PATTERN, ChunkDelivery, SpecBinding
from domain.attestation.timestamps import (
    Rfc3339Instant,
    TimestampInvalid,
    format_rfc3339_millis,
    parse_rfc3339_instant,
)
from domain.names import camel_fields
from domain.strict_json import JsonObject, describe_key, json_type_name

BINDING_KEYS = ("squadId", "taskId", "specSha256", "specBytes", "chunkBytes", "chunkCount")
DELIVERY_KEYS = (
    "index",
    "startByte",
    "endByteExclusive",
    "bytes",
    "sha256",
    "toolCallId",
    "deliveredAt",
)
# Every key name either file defines: the only keys a reason may quote (any other key is
# file content). Passed to ``decode_json`` too, so duplicate-key failures name them.
VOCABULARY = frozenset(
    (
        "version",
        "state",
        *BINDING_KEYS,
        "chunks",
        "completedAt",
        "deliveries",
        "invalidReason",
        *DELIVERY_KEYS,
    )
)
MAX_JSON_SAFE_INT = 2**53 - 1
_KEYS_SHOWN = 5


@attrs.define
class ShapeError(Exception):
    """A file's JSON is not the shape it must have; ``reason`` names a JSON path, never content."""

    reason: str


# -- writing ----------------------------------------------------------------------------------


def binding_json(binding: SpecBinding) -> JsonObject:
    """Each field under its camelCase key, in field order (``BINDING_KEYS``)."""
    return camel_fields(binding)


def delivery_json(delivery: ChunkDelivery) -> JsonObject:
    """Each field under its camelCase key, in field order (``DELIVERY_KEYS``), the time as
    RFC 3339 with milliseconds."""
    return {**camel_fields(delivery), "deliveredAt": format_rfc3339_millis(delivery.delivered_at)}


# -- reading ----------------------------------------------------------------------------------


def _listed(keys: list[str]) -> str:
    shown = ", ".join(describe_key(k, VOCABULARY) for k in keys[:_KEYS_SHOWN])
    more = len(keys) - _KEYS_SHOWN
    return f"{shown} and {more} more" if more > 0 else shown


def require_object(value: object, path: str) -> JsonObject:
    if not isinstance(value, dict):
        raise ShapeError(f"{path} must be a JSON object, not {json_type_name(value)}")
    return value


def require_exact_keys(obj: JsonObject, keys: tuple[str, ...], path: str) -> None:
    """Key *set* only: JSON object members are unordered, so order is not a validity rule."""
    missing = [k for k in keys if k not in obj]
    if missing:
        raise ShapeError(f"{path} is missing {_listed(missing)}")
    unknown = [k for k in obj if k not in keys]
    if unknown:
        raise ShapeError(f"{path} has unknown {_listed(unknown)}")


def require_int(obj: JsonObject, key: str, path: str, *, minimum: int) -> int:
    value: Any = obj[key]
    if type(value) is not int:
        raise ShapeError(f"{path}.{key} must be an integer, not {json_type_name(value)}")
    if not minimum <= value <= MAX_JSON_SAFE_INT:
        shown = value if abs(value) <= MAX_JSON_SAFE_INT else "out of range"
        raise ShapeError(f"{path}.{key} must be {minimum}..2^53-1, got {shown}")
    return value


def require_str(obj: JsonObject, key: str, path: str) -> str:
    value: Any = obj[key]
    if not isinstance(value, str):
        raise ShapeError(f"{path}.{key} must be a string, not {json_type_name(value)}")
    return value


def require_non_empty_str(obj: JsonObject, key: str, path: str) -> str:
    value = require_str(obj, key, path)
    if not value:
        raise ShapeError(f"{path}.{key} must not be empty")
    return value


def require_sha256(obj: JsonObject, key: str, path: str) -> str:
    value = require_str(obj, key, path)
    if SHA256_HEX_PATTERN.fullmatch(value) is None:
        raise ShapeError(f"{path}.{key} must be 64 lowercase hex digits")
    return value


def require_instant(obj: JsonObject, key: str, path: str) -> Rfc3339Instant:
    try:
        return parse_rfc3339_instant(obj[key])
    except TimestampInvalid as exc:
        raise ShapeError(f"{path}.{key} {exc.reason}") from None


def require_list(obj: JsonObject, key: str, path: str) -> list[Any]:
    value: Any = obj[key]
    if not isinstance(value, list):
        raise ShapeError(f"{path}.{key} must be an array, not {json_type_name(value)}")
    return value


def read_binding(obj: JsonObject, path: str) -> SpecBinding:
    """The binding fields of a file, type-checked then held to :class:`SpecBinding`'s rules.

    The caller compares the result with the expected binding; only type and pattern failures
    are raised here.
    """
    squad_id = require_str(obj, "squadId", path)
    task_id = require_str(obj, "taskId", path)
    spec_sha256 = require_sha256(obj, "specSha256", path)
    spec_bytes = require_int(obj, "specBytes", path, minimum=1)
    chunk_bytes = require_int(obj, "chunkBytes", path, minimum=1)
    chunk_count = require_int(obj, "chunkCount", path, minimum=1)
    try:
        return SpecBinding(
            squad_id=squad_id,
            task_id=task_id,
            spec_sha256=spec_sha256,
            spec_bytes=spec_bytes,
            chunk_bytes=chunk_bytes,
            chunk_count=chunk_count,
        )
    except ValueError as exc:
        # SpecBinding's messages name fields and numbers only.
        raise ShapeError(f"{path}: {exc}") from None


def read_delivery(value: object, path: str) -> tuple[ChunkDelivery, Rfc3339Instant]:
    """One chunk record, self-consistent (non-empty, ``bytes`` = end - start), not yet compared
    with anything canonical. The instant comes back too for exact ordering checks."""
    obj = require_object(value, path)
    require_exact_keys(obj, DELIVERY_KEYS, path)
    index = require_int(obj, "index", path, minimum=0)
    start_byte = require_int(obj, "startByte", path, minimum=0)
    end_byte_exclusive = require_int(obj, "endByteExclusive", path, minimum=1)
    length = require_int(obj, "bytes", path, minimum=1)
    sha256 = require_sha256(obj, "sha256", path)
    tool_call_id = require_non_empty_str(obj, "toolCallId", path)
    delivered = require_instant(obj, "deliveredAt", path)
    if end_byte_exclusive <= start_byte:
        raise ShapeError(
            f"{path} is empty or reversed: endByteExclusive {end_byte_exclusive} "
            f"<= startByte {start_byte}"
        )
    if length != end_byte_exclusive - start_byte:
        raise ShapeError(
            f"{path}.bytes {length} is not endByteExclusive - startByte "
            f"({end_byte_exclusive} - {start_byte})"
        )
    delivery = ChunkDelivery(
        index=index,
        start_byte=start_byte,
        end_byte_exclusive=end_byte_exclusive,
        bytes=length,
        sha256=sha256,
        tool_call_id=tool_call_id,
        delivered_at=delivered.at,
    )
    return delivery, delivered
