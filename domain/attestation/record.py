"""The §9 task-owned attestation: the durable proof that every chunk was delivered.

Written from ``COMPLETE`` coverage by :meth:`Attestation.to_json_dict` in the exact key order
of §9; read back by :func:`validate_attestation`, which is strict about everything §9 lists
and returns a verdict instead of raising, because "invalid" is an ordinary answer for the guard
and for settlement.

``completedAt`` earlier than the latest ``deliveredAt`` is invalid: completion is the moment
the last chunk was committed or later, so an earlier time means the record was not produced by
this state machine. The check uses the full fractional precision of the text.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import ClassVar, Final, TypeAlias

import attrs

from domain.attestation import _wire
from domain.attestation._wire import ShapeError
from domain.attestation.binding import ChunkDelivery, SpecBinding
from domain.attestation.coverage import Coverage, CoverageNotComplete, CoverageState
from domain.attestation.timestamps import Rfc3339Instant, format_rfc3339_millis, utc_millis
from domain.chunks import ChunkTable
from domain.strict_json import JsonDecodeFailure, JsonObject, decode_json

ATTESTATION_VERSION: Final = 1
ATTESTATION_STATE: Final = "complete"
ATTESTATION_KEYS: Final = (
    "version",
    "state",
    *_wire.BINDING_KEYS,
    "chunks",
    "completedAt",
)
_INDICES_SHOWN = 10
_WHERE = "attestation"


@attrs.frozen
class Attestation:
    """A complete attestation (version 1, state ``complete``): every chunk, ascending."""

    version: ClassVar[int] = ATTESTATION_VERSION
    state: ClassVar[str] = ATTESTATION_STATE

    binding: SpecBinding
    chunks: tuple[ChunkDelivery, ...]
    completed_at: datetime = attrs.field(converter=utc_millis)

    def __attrs_post_init__(self) -> None:
        if len(self.chunks) != self.binding.chunk_count:
            raise ValueError(
                f"an attestation holds exactly chunkCount ({self.binding.chunk_count}) chunks, "
                f"not {len(self.chunks)}"
            )
        expected_start = 0
        for position, chunk in enumerate(self.chunks):
            if chunk.index != position:
                raise ValueError(f"chunk at position {position} has index {chunk.index}")
            if chunk.start_byte != expected_start:
                raise ValueError(f"chunk {position} does not start where the previous ends")
            expected_start = chunk.end_byte_exclusive
        if expected_start != self.binding.spec_bytes:
            raise ValueError("chunks do not end at specBytes")
        latest = max(self.chunks, key=lambda c: c.delivered_at)
        if self.completed_at < latest.delivered_at:
            raise ValueError(f"completedAt is earlier than chunk {latest.index}'s deliveredAt")

    @classmethod
    def of(cls, coverage: Coverage, completed_at: datetime) -> Attestation:
        """The attestation of verified ``COMPLETE`` coverage, completed at ``completed_at``
        (the caller's clock reading, taken after the final commit)."""
        if coverage.state is not CoverageState.COMPLETE:
            raise CoverageNotComplete(f"coverage is {coverage.state}, not complete")
        return cls(binding=coverage.binding, chunks=coverage.deliveries, completed_at=completed_at)

    def to_json_dict(self) -> JsonObject:
        """Exactly the §9 keys in the §9 order; timestamps as ``...T..:..:..mmmZ``."""
        return {
            "version": self.version,
            "state": self.state,
            **_wire.binding_json(self.binding),
            "chunks": [_wire.delivery_json(chunk) for chunk in self.chunks],
            "completedAt": format_rfc3339_millis(self.completed_at),
        }

    def to_json_bytes(self) -> bytes:
        """The file content: indented, ASCII-only (IDs are ASCII by pattern; escapes keep any
        other tool call ID byte-exact), newline-terminated."""
        return (json.dumps(self.to_json_dict(), indent=2, ensure_ascii=True) + "\n").encode("ascii")


@attrs.frozen
class AttestationValid:
    attestation: Attestation
    valid: ClassVar[bool] = True


@attrs.frozen
class AttestationInvalid:
    """Why an attestation is not accepted. The reason names JSON paths, IDs and numbers only."""

    reason: str
    valid: ClassVar[bool] = False


AttestationVerdict: TypeAlias = AttestationValid | AttestationInvalid


def validate_attestation(
    raw: object, binding: SpecBinding, table: ChunkTable
) -> AttestationVerdict:
    """Judge an already strictly decoded attestation against the binding and the canonical
    table (built from a fresh read whose whole-file hash the caller verified)."""
    try:
        return AttestationValid(_read_attestation(raw, binding, table))
    except ShapeError as exc:
        return AttestationInvalid(exc.reason)


def validate_attestation_bytes(
    data: bytes, binding: SpecBinding, table: ChunkTable
) -> AttestationVerdict:
    """:func:`validate_attestation` over the raw file content, decoded strictly."""
    try:
        raw = decode_json(data, vocabulary=_wire.VOCABULARY)
    except JsonDecodeFailure as exc:
        return AttestationInvalid(f"{_WHERE} is not strict JSON: {exc.reason}")
    return validate_attestation(raw, binding, table)


def _read_attestation(raw: object, binding: SpecBinding, table: ChunkTable) -> Attestation:
    table_mismatch = binding.table_mismatch(table)
    if table_mismatch is not None:
        raise ShapeError(f"canonical spec does not match the binding: {table_mismatch}")

    obj = _wire.require_object(raw, _WHERE)
    _wire.require_exact_keys(obj, ATTESTATION_KEYS, _WHERE)
    version = _wire.require_int(obj, "version", _WHERE, minimum=0)
    if version != ATTESTATION_VERSION:
        raise ShapeError(f"{_WHERE}.version must be {ATTESTATION_VERSION}, got {version}")
    if _wire.require_str(obj, "state", _WHERE) != ATTESTATION_STATE:
        raise ShapeError(f"{_WHERE}.state must be '{ATTESTATION_STATE}'")
    identity_mismatch = binding.identity_mismatch(_wire.read_binding(obj, _WHERE))
    if identity_mismatch is not None:
        raise ShapeError(f"{_WHERE}.{identity_mismatch}")
    raw_chunks = _wire.require_list(obj, "chunks", _WHERE)
    completed = _wire.require_instant(obj, "completedAt", _WHERE)

    records = [
        _wire.read_delivery(raw_chunk, f"{_WHERE}.chunks[{position}]")
        for position, raw_chunk in enumerate(raw_chunks)
    ]
    chunks = [delivery for delivery, _instant in records]
    _check_indices(chunks, binding.chunk_count)
    _check_offsets(chunks, table)
    _check_completed_after_deliveries(records, completed)
    try:
        return Attestation(binding=binding, chunks=tuple(chunks), completed_at=completed.at)
    except ValueError as exc:  # pragma: no cover - the checks above imply every invariant
        raise ShapeError(f"{_WHERE} is inconsistent: {exc}") from None


def _shown(indices: list[int]) -> str:
    shown = ", ".join(str(i) for i in indices[:_INDICES_SHOWN])
    more = len(indices) - _INDICES_SHOWN
    return f"{shown} and {more} more" if more > 0 else shown


def _check_indices(chunks: list[ChunkDelivery], chunk_count: int) -> None:
    """Ascending, unique, in range, no gaps: then there are exactly ``chunk_count`` entries."""
    seen: set[int] = set()
    for position, chunk in enumerate(chunks):
        where = f"{_WHERE}.chunks[{position}]"
        if chunk.index in seen:
            raise ShapeError(f"{where}.index {chunk.index} is a duplicate index")
        if position > 0 and chunk.index < chunks[position - 1].index:
            raise ShapeError(f"{where}.index {chunk.index} is not in ascending index order")
        if chunk.index >= chunk_count:
            raise ShapeError(f"{where}.index {chunk.index} is out of range 0..{chunk_count - 1}")
        seen.add(chunk.index)
    missing = [i for i in range(chunk_count) if i not in seen]
    if missing:
        raise ShapeError(f"{_WHERE}.chunks has a gap: missing chunk indices {_shown(missing)}")
    if len(chunks) != chunk_count:  # pragma: no cover - implied by the checks above
        raise ShapeError(f"{_WHERE}.chunks must hold exactly {chunk_count} entries")


def _check_offsets(chunks: list[ChunkDelivery], table: ChunkTable) -> None:
    """Contiguous from byte 0, then each record equal to the canonical chunk."""
    expected_start = 0
    for chunk in chunks:
        where = f"{_WHERE}.chunks[{chunk.index}]"
        if chunk.start_byte < expected_start:
            raise ShapeError(
                f"{where} overlaps the previous chunk: startByte {chunk.start_byte} < "
                f"previous endByteExclusive {expected_start}"
            )
        if chunk.start_byte > expected_start:
            raise ShapeError(
                f"{where} leaves a byte gap: startByte {chunk.start_byte} > "
                f"previous endByteExclusive {expected_start}"
            )
        expected_start = chunk.end_byte_exclusive
        canonical_mismatch = chunk.canonical_mismatch(table.chunk(chunk.index))
        if canonical_mismatch is not None:
            raise ShapeError(f"{where} does not match the canonical spec: {canonical_mismatch}")


def _check_completed_after_deliveries(
    records: list[tuple[ChunkDelivery, Rfc3339Instant]], completed: Rfc3339Instant
) -> None:
    last_delivery, last_instant = max(records, key=lambda record: record[1].exact_key)
    if completed.exact_key < last_instant.exact_key:
        raise ShapeError(
            f"{_WHERE}.completedAt is earlier than chunks[{last_delivery.index}].deliveredAt"
        )
