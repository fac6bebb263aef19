"""What coverage and attestations are bound to, and what one delivered chunk is.

A :class:`SpecBinding` is the §9 identity ``{squadId, taskId, specSha256, specBytes,
chunkBytes, chunkCount}``: progress or an attestation under any other identity is invalid,
never migrated. A :class:`ChunkDelivery` is one committed read: the chunk's canonical
metadata plus which tool call delivered it and when.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import datetime

import attrs

from domain.attestation.timestamps import utc_millis
from domain.chunks import CHUNK_BYTES, ChunkRef, ChunkTable

# Patterns of §5 (squad ID) and §3 (task ID). They are repeated here rather than imported so the
# attestation domain depends only on the chunk algebra; an ID that passed them is safe to name
# in a reason.
SQUAD_ID_PATTERN = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,126}[a-z0-9])?")
TASK_ID_PATTERN = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?")
SHA256_HEX_PATTERN = re.compile(r"[a-f0-9]{64}")

# v1 fixes the chunk size; the binding refuses any other so a state file cannot smuggle one in.
SUPPORTED_CHUNK_BYTES = CHUNK_BYTES


def _full_match(
    pattern: re.Pattern[str], what: str
) -> Callable[[object, attrs.Attribute[str], str], None]:
    def check(_instance: object, _attribute: attrs.Attribute[str], value: str) -> None:
        if not isinstance(value, str) or pattern.fullmatch(value) is None:
            raise ValueError(f"{what} does not match its pattern")

    return check


def _positive(_instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    _require_int(attribute.name, value)
    if value <= 0:
        raise ValueError(f"{attribute.name} must be positive, got {value}")


def _non_negative(_instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    _require_int(attribute.name, value)
    if value < 0:
        raise ValueError(f"{attribute.name} must not be negative, got {value}")


def _require_int(name: str, value: object) -> None:
    # bool is an int subclass; True is never a byte count or an index.
    if type(value) is not int:
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")


def describe_id(value: str, pattern: re.Pattern[str]) -> str:
    """An ID as a reason may show it: quoted when it passes its pattern, otherwise withheld."""
    return f"'{value}'" if pattern.fullmatch(value) else "(an ID not shown)"


@attrs.frozen
class SpecBinding:
    """The identity one task's coverage and attestation are bound to (§9)."""

    squad_id: str = attrs.field(validator=_full_match(SQUAD_ID_PATTERN, "squad ID"))
    task_id: str = attrs.field(validator=_full_match(TASK_ID_PATTERN, "task ID"))
    spec_sha256: str = attrs.field(
        validator=_full_match(SHA256_HEX_PATTERN, "specSha256 (64 lowercase hex)")
    )
    spec_bytes: int = attrs.field(validator=_positive)
    chunk_bytes: int = attrs.field(validator=_positive)
    chunk_count: int = attrs.field(validator=_positive)

    @chunk_bytes.validator
    def _v1_chunk_size(self, _attribute: attrs.Attribute[int], value: int) -> None:
        if value != SUPPORTED_CHUNK_BYTES:
            raise ValueError(f"chunkBytes must be {SUPPORTED_CHUNK_BYTES} in v1, got {value}")

    @chunk_count.validator
    def _count_fits_length(self, _attribute: attrs.Attribute[int], value: int) -> None:
        # Every chunk holds 1..chunk_bytes bytes, so the count is bounded on both sides.
        fewest = math.ceil(self.spec_bytes / self.chunk_bytes)
        if not fewest <= value <= self.spec_bytes:
            raise ValueError(
                f"chunkCount {value} is impossible for {self.spec_bytes} bytes "
                f"(must be {fewest}..{self.spec_bytes})"
            )

    @classmethod
    def of(cls, table: ChunkTable, *, squad_id: str, task_id: str) -> SpecBinding:
        """The binding for one task of a squad whose canonical bytes produced ``table``."""
        return cls(
            squad_id=squad_id,
            task_id=task_id,
            spec_sha256=table.spec_sha256,
            spec_bytes=table.spec_bytes,
            chunk_bytes=table.chunk_bytes,
            chunk_count=table.chunk_count,
        )

    def table_mismatch(self, table: ChunkTable) -> str | None:
        """Why ``table`` is not the canonical spec this binding names, or ``None`` if it is."""
        if table.spec_sha256 != self.spec_sha256:
            return "canonical specSha256 differs from the bound specSha256"
        if table.spec_bytes != self.spec_bytes:
            return f"canonical specBytes {table.spec_bytes} differs from bound {self.spec_bytes}"
        if table.chunk_bytes != self.chunk_bytes:
            return f"canonical chunkBytes {table.chunk_bytes} differs from bound {self.chunk_bytes}"
        if table.chunk_count != self.chunk_count:
            return f"canonical chunkCount {table.chunk_count} differs from bound {self.chunk_count}"
        # ChunkTable.of always tiles the file; a table assembled any other way must too, or
        # records that equal its chunks could still overlap or leave gaps.
        expected_start = 0
        for position, ref in enumerate(table.chunks):
            if ref.index != position or ref.start_byte != expected_start:
                return f"canonical chunk table is not contiguous at chunk {position}"
            expected_start = ref.end_byte_exclusive
        if expected_start != table.spec_bytes:
            return "canonical chunk table does not end at specBytes"
        return None

    def identity_mismatch(self, other: SpecBinding) -> str | None:
        """Which field of ``other`` differs from this binding, or ``None`` if they are equal.

        Only this binding's values are named: ``other`` came from a file and is untrusted.
        """
        if other.squad_id != self.squad_id:
            return f"squadId is not the bound squad {describe_id(self.squad_id, SQUAD_ID_PATTERN)}"
        if other.task_id != self.task_id:
            return f"taskId is not the bound task {describe_id(self.task_id, TASK_ID_PATTERN)}"
        if other.spec_sha256 != self.spec_sha256:
            return "specSha256 is not the bound specSha256"
        if other.spec_bytes != self.spec_bytes:
            return f"specBytes {other.spec_bytes} is not the bound {self.spec_bytes}"
        if other.chunk_bytes != self.chunk_bytes:
            return f"chunkBytes {other.chunk_bytes} is not the bound {self.chunk_bytes}"
        if other.chunk_count != self.chunk_count:
            return f"chunkCount {other.chunk_count} is not the bound {self.chunk_count}"
        return None


def _non_empty_str(_instance: object, attribute: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{attribute.name} must be a non-empty string")


@attrs.frozen
class ChunkDelivery:
    """One chunk delivered into the task's tool-result context by one finalized tool call."""

    index: int = attrs.field(validator=_non_negative)
    start_byte: int = attrs.field(validator=_non_negative)
    end_byte_exclusive: int = attrs.field(validator=_positive)
    bytes: int = attrs.field(validator=_positive)
    sha256: str = attrs.field(
        validator=_full_match(SHA256_HEX_PATTERN, "sha256 (64 lowercase hex)")
    )
    tool_call_id: str = attrs.field(validator=_non_empty_str)
    delivered_at: datetime = attrs.field(converter=utc_millis)

    @bytes.validator
    def _length_matches_offsets(self, _attribute: attrs.Attribute[int], value: int) -> None:
        if value != self.end_byte_exclusive - self.start_byte:
            raise ValueError(
                f"chunk {self.index}: bytes {value} is not endByteExclusive - startByte "
                f"({self.end_byte_exclusive} - {self.start_byte})"
            )

    @classmethod
    def of(cls, ref: ChunkRef, *, tool_call_id: str, delivered_at: datetime) -> ChunkDelivery:
        """The delivery of canonical chunk ``ref`` by tool call ``tool_call_id``."""
        return cls(
            index=ref.index,
            start_byte=ref.start_byte,
            end_byte_exclusive=ref.end_byte_exclusive,
            bytes=ref.bytes,
            sha256=ref.sha256,
            tool_call_id=tool_call_id,
            delivered_at=delivered_at,
        )

    def same_chunk_as(self, other: ChunkDelivery) -> bool:
        """Identical chunk metadata and hash; who delivered it and when are not compared.

        This is the §7 "duplicate with identical metadata/hash": a second finalized read of
        the same bytes, harmless whatever its tool call ID or time.
        """
        return (
            self.index == other.index
            and self.start_byte == other.start_byte
            and self.end_byte_exclusive == other.end_byte_exclusive
            and self.bytes == other.bytes
            and self.sha256 == other.sha256
        )

    def canonical_mismatch(self, ref: ChunkRef) -> str | None:
        """Which field differs from canonical chunk ``ref``, or ``None`` when all agree."""
        if self.index != ref.index:
            return f"index {self.index} is not canonical index {ref.index}"
        if self.start_byte != ref.start_byte:
            return (
                f"chunk {ref.index}: startByte {self.start_byte} is not canonical {ref.start_byte}"
            )
        if self.end_byte_exclusive != ref.end_byte_exclusive:
            return (
                f"chunk {ref.index}: endByteExclusive {self.end_byte_exclusive} is not "
                f"canonical {ref.end_byte_exclusive}"
            )
        if self.sha256 != ref.sha256:
            return f"chunk {ref.index}: sha256 is not the canonical chunk hash"
        return None


class ChunkIndexOutOfRange(ValueError):
    """A delivery names an index the binding does not have; nothing is recorded (§7)."""

    def __init__(self, index: int, chunk_count: int) -> None:
        super().__init__(
            f"chunk index {index} is out of range: valid indices are 0..{chunk_count - 1}"
        )
        self.index = index
        self.chunk_count = chunk_count
