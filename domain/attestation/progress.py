"""The durable coverage file ``<squad-dir>/<task-id>/spec-read-state.json``.

Format (version 1), keys in this order when written::

    {
      "version": 1,
      "state": "required" | "reading" | "complete" | "invalid",
      "squadId": ..., "taskId": ..., "specSha256": ..., "specBytes": ...,
      "chunkBytes": ..., "chunkCount": ...,
      "deliveries": [ {index, startByte, endByteExclusive, bytes, sha256, toolCallId,
                       deliveredAt}, ... ],          // ascending by index, one per index
      "invalidReason": null | "printable ASCII, 1..1024 characters"
    }

Delivery records have the attestation's chunk shape, so a complete progress file holds exactly
the chunks its attestation will. ``invalidReason`` is always present (``null`` unless the state
is ``invalid``) so the key set never varies. ``not_required`` is never written: legacy squads
have no progress file.

Reading distinguishes two failures, because §9 treats them differently:

- :class:`ProgressCorrupt` (raised): the file is not this shape at all (JSON, keys, types,
  impossible structure). The application may move it aside and reset to ``REQUIRED`` once the
  canonical file verifies; a reset only ever demands more reading.
- ``INVALID`` coverage (returned): the file is well formed but bound to another identity, or a
  recorded delivery disagrees with the canonical table, or it was already ``invalid``. Such a
  claimed delivery is never accepted and the task stays blocked.
"""

from __future__ import annotations

import functools
import json
from json.encoder import encode_basestring_ascii
from typing import Final

from domain.attestation import _wire
from domain.attestation._wire import ShapeError
from domain.attestation.binding import ChunkDelivery, SpecBinding
from domain.attestation.coverage import Coverage, CoverageState, is_valid_reason
from domain.chunks import ChunkTable
from domain.strict_json import JsonDecodeFailure, JsonObject, decode_json

PROGRESS_VERSION: Final = 1
PROGRESS_KEYS: Final = (
    "version",
    "state",
    *_wire.BINDING_KEYS,
    "deliveries",
    "invalidReason",
)
_STORED_STATES: Final = {
    state.value: state for state in CoverageState if state is not CoverageState.NOT_REQUIRED
}
_WHERE = "progress"


class ProgressCorrupt(Exception):
    """The progress file is not a well-formed version 1 progress record. ``reason`` names JSON
    paths and numbers, never file content."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def progress_json_dict(coverage: Coverage) -> JsonObject:
    return {
        "version": PROGRESS_VERSION,
        "state": coverage.state.value,
        **_wire.binding_json(coverage.binding),
        "deliveries": [_wire.delivery_json(d) for d in coverage.deliveries],
        "invalidReason": coverage.invalid_reason,
    }


def serialise_progress(coverage: Coverage) -> bytes:
    """The file content: indented, ASCII-only, newline-terminated; byte for byte
    ``json.dumps(progress_json_dict(coverage), indent=2, ensure_ascii=True) + "\\n"``.

    Written by ``_indented`` rather than ``json.dumps``: with ``indent`` the standard library
    falls back to its pure-Python encoder, about a millisecond per commit for a full file, and
    the file is rewritten on every committed chunk. The layout itself is kept: other tools (and
    the adversarial tests' scripts) edit these files as text.
    """
    document: dict[str, object] = {
        "version": PROGRESS_VERSION,
        "state": coverage.state.value,
        **_wire.binding_json(coverage.binding),
        "deliveries": _Verbatim(_deliveries_text(coverage.deliveries)),
        "invalidReason": coverage.invalid_reason,
    }
    return (_indented(document, "") + "\n").encode("ascii")


class _Verbatim(str):
    """Text ``_indented`` writes as it is: a part of the layout rendered already."""


_DELIVERY_MARGIN = "    "  # a delivery record sits in the top-level object's array


@functools.lru_cache(maxsize=4096)
def _delivery_text(delivery: ChunkDelivery) -> str:
    # Pure in the frozen record: every commit rewrites the whole file, so each earlier delivery
    # is rendered once instead of once per later commit (O(k) -> O(1) per commit).
    return _indented(_wire.delivery_json(delivery), _DELIVERY_MARGIN)


def _deliveries_text(deliveries: tuple[ChunkDelivery, ...]) -> str:
    if not deliveries:
        return "[]"
    items = ",\n".join(f"{_DELIVERY_MARGIN}{_delivery_text(d)}" for d in deliveries)
    return f"[\n{items}\n  ]"


_SCALARS = (str, int, type(None))  # bool is an int


@functools.cache
def _flat_encoder(inner: str) -> json.JSONEncoder:
    return json.JSONEncoder(ensure_ascii=True, separators=(",\n" + inner, ": "))


def _indented(value: object, margin: str) -> str:
    """``value`` as ``json.dumps(value, indent=2, ensure_ascii=True)`` writes it at ``margin``,
    for the types these files hold (objects with string keys, arrays, strings, integers,
    booleans, null)."""
    if isinstance(value, dict):
        if not value:
            return "{}"
        inner = margin + "  "
        if all(
            isinstance(item, _SCALARS) and not isinstance(item, _Verbatim)
            for item in value.values()
        ):
            # A flat object (a delivery record): the C encoder, told the separators, writes
            # exactly this layout; only the braces' own lines are added here.
            flat = _flat_encoder(inner).encode(value)
            return f"{{\n{inner}{flat[1:-1]}\n{margin}}}"
        items = ",\n".join(
            f"{inner}{encode_basestring_ascii(key)}: {_indented(item, inner)}"
            for key, item in value.items()
        )
        return f"{{\n{items}\n{margin}}}"
    if isinstance(value, list):
        if not value:
            return "[]"
        inner = margin + "  "
        items = ",\n".join(f"{inner}{_indented(item, inner)}" for item in value)
        return f"[\n{items}\n{margin}]"
    if isinstance(value, _Verbatim):
        return str.__str__(value)
    if isinstance(value, str):
        return encode_basestring_ascii(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return int.__repr__(value)
    raise TypeError(f"progress files hold no {type(value).__name__}")


def parse_progress(data: bytes, binding: SpecBinding, table: ChunkTable) -> Coverage:
    """The coverage a progress file records, re-verified against the canonical table.

    Raises :class:`ProgressCorrupt` for a malformed file; returns ``INVALID`` coverage (bound
    to ``binding``) for an identity mismatch or a non-canonical record.
    """
    try:
        raw = decode_json(data, vocabulary=_wire.VOCABULARY)
    except JsonDecodeFailure as exc:
        raise ProgressCorrupt(f"{_WHERE} is not strict JSON: {exc.reason}") from None
    try:
        stored = _read_progress(raw)
    except ShapeError as exc:
        raise ProgressCorrupt(exc.reason) from None
    identity_mismatch = binding.identity_mismatch(stored.binding)
    if identity_mismatch is not None:
        # Never migrate: the records belong to another task or spec and prove nothing here.
        return Coverage.required(binding).invalidate(
            f"{_WHERE} is bound elsewhere: {identity_mismatch}"
        )
    return stored.verify(table)


def _read_progress(raw: object) -> Coverage:
    obj = _wire.require_object(raw, _WHERE)
    _wire.require_exact_keys(obj, PROGRESS_KEYS, _WHERE)
    version = _wire.require_int(obj, "version", _WHERE, minimum=0)
    if version != PROGRESS_VERSION:
        raise ShapeError(f"{_WHERE}.version must be {PROGRESS_VERSION}, got {version}")
    state = _STORED_STATES.get(_wire.require_str(obj, "state", _WHERE))
    if state is None:
        raise ShapeError(f"{_WHERE}.state must be one of {', '.join(_STORED_STATES)}")
    binding = _wire.read_binding(obj, _WHERE)
    deliveries = [
        _wire.read_delivery(raw_delivery, f"{_WHERE}.deliveries[{position}]")[0]
        for position, raw_delivery in enumerate(_wire.require_list(obj, "deliveries", _WHERE))
    ]
    for position in range(1, len(deliveries)):
        if deliveries[position].index <= deliveries[position - 1].index:
            raise ShapeError(
                f"{_WHERE}.deliveries[{position}] is not in strictly ascending index order"
            )
    reason = obj["invalidReason"]
    if state is CoverageState.INVALID:
        if not is_valid_reason(reason):
            raise ShapeError(f"{_WHERE}.invalidReason must be 1..1024 printable ASCII characters")
    elif reason is not None:
        raise ShapeError(f"{_WHERE}.invalidReason must be null unless state is invalid")
    try:
        return Coverage(
            binding=binding, state=state, deliveries=tuple(deliveries), invalid_reason=reason
        )
    except ValueError as exc:
        # Coverage's invariants name states, indices and byte positions only.
        raise ShapeError(f"{_WHERE} is inconsistent: {exc}") from None
