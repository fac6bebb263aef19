"""The §9 coverage state machine as pure transitions over an immutable value.

::

    NOT_REQUIRED (legacy squad only: a separate variant, never a Coverage)
    REQUIRED -> READING -> COMPLETE
       |          |           |
       +----------+-----------+--> INVALID (identity/hash/schema/conflicting record)

Every transition returns a new :class:`Coverage` (or the same one when nothing changes); the
application persists whatever comes back. ``INVALID`` is terminal here: a corrupt *progress
file* may be reset by the application (see :mod:`domain.attestation.progress`), but an invalid
coverage value never recovers by itself.

What "verified complete" means without bytes: the domain never sees spec bytes, so it cannot
re-hash the concatenated chunks. Instead completion is checked against a :class:`ChunkTable`
that the application built from a fresh canonical read whose whole-file SHA-256 it verified
(``ChunkTable.of`` hashes the whole input, and the table must carry the bound ``specSha256``).
Every recorded delivery must equal that table's chunk (offsets, length, SHA-256) and the
deliveries must tile ``[0, specBytes)`` contiguously. Equal chunk hashes over a verified whole
are what "concatenated raw chunk hashes recompute the whole canonical hash" reduces to.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import ClassVar, Final, TypeAlias

import attrs

from domain.attestation.binding import ChunkDelivery, ChunkIndexOutOfRange, SpecBinding
from domain.chunks import ChunkTable

# Reasons end up in task status lines and files. Holding them to short printable ASCII keeps
# them from ever carrying (multibyte) specification text, even when read back from a file.
_REASON = re.compile(r"[ -~]{1,1024}")


class CoverageState(StrEnum):
    NOT_REQUIRED = "not_required"
    REQUIRED = "required"
    READING = "reading"
    COMPLETE = "complete"
    INVALID = "invalid"


class CoverageNotComplete(ValueError):
    """An attestation was requested from coverage that is not ``COMPLETE``."""


def is_valid_reason(reason: object) -> bool:
    return isinstance(reason, str) and _REASON.fullmatch(reason) is not None


def _differing_field(recorded: ChunkDelivery, claimed: ChunkDelivery) -> str:
    for name in ("start_byte", "end_byte_exclusive", "bytes", "sha256"):
        if getattr(recorded, name) != getattr(claimed, name):
            return {
                "start_byte": "startByte",
                "end_byte_exclusive": "endByteExclusive",
                "bytes": "bytes",
                "sha256": "sha256",
            }[name]
    return "metadata"  # pragma: no cover - only called when same_chunk_as() is False


@attrs.frozen
class Coverage:
    """Which chunks of the bound spec this task has durably received, and the verdict so far.

    ``deliveries`` is ascending by index, one record per index: the first valid delivery of each
    chunk, kept forever. Construct with :meth:`required`; change only through the transitions.
    The constructor checks every invariant that does not need the canonical table, so a value
    read back from a file cannot be structurally impossible.
    """

    binding: SpecBinding
    state: CoverageState
    deliveries: tuple[ChunkDelivery, ...] = ()
    invalid_reason: str | None = None

    def __attrs_post_init__(self) -> None:
        if self.state is CoverageState.NOT_REQUIRED:
            raise ValueError("a legacy squad has no Coverage; use NOT_REQUIRED")
        self._check_deliveries()
        count, total = len(self.deliveries), self.binding.chunk_count
        expected_count = {
            CoverageState.REQUIRED: count == 0,
            CoverageState.READING: 0 < count < total,
            CoverageState.COMPLETE: count == total,
            CoverageState.INVALID: True,
        }[self.state]
        if not expected_count:
            raise ValueError(f"state {self.state} cannot hold {count} of {total} chunks")
        if (self.state is CoverageState.INVALID) != (self.invalid_reason is not None):
            raise ValueError("an invalid reason is present exactly when the state is invalid")
        if self.invalid_reason is not None and not is_valid_reason(self.invalid_reason):
            raise ValueError("an invalid reason is 1..1024 printable ASCII characters")

    def _check_deliveries(self) -> None:
        last_index = self.binding.chunk_count - 1
        previous: ChunkDelivery | None = None
        for delivery in self.deliveries:
            if delivery.index > last_index:
                raise ChunkIndexOutOfRange(delivery.index, self.binding.chunk_count)
            if delivery.index == 0 and delivery.start_byte != 0:
                raise ValueError("chunk 0 must start at byte 0")
            if delivery.index == last_index and (
                delivery.end_byte_exclusive != self.binding.spec_bytes
            ):
                raise ValueError(f"chunk {last_index} must end at specBytes")
            if delivery.end_byte_exclusive > self.binding.spec_bytes:
                raise ValueError(f"chunk {delivery.index} ends beyond specBytes")
            if previous is not None:
                if delivery.index <= previous.index:
                    raise ValueError("deliveries must be ascending with one record per index")
                adjacent = delivery.index == previous.index + 1
                # Neighbours abut; with chunks missing in between there must be room for them.
                if adjacent and delivery.start_byte != previous.end_byte_exclusive:
                    raise ValueError(
                        f"chunks {previous.index} and {delivery.index} are not contiguous"
                    )
                if not adjacent and delivery.start_byte <= previous.end_byte_exclusive:
                    raise ValueError(
                        f"chunks {previous.index} and {delivery.index} leave no room between"
                    )
            previous = delivery

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def required(cls, binding: SpecBinding) -> Coverage:
        """A task of a file squad before any chunk has been committed."""
        return cls(binding=binding, state=CoverageState.REQUIRED)

    # -- queries ------------------------------------------------------------------------------

    def recorded(self, index: int) -> ChunkDelivery | None:
        """The kept delivery record of chunk ``index``, if any."""
        return next((d for d in self.deliveries if d.index == index), None)

    def committed_indices(self) -> tuple[int, ...]:
        return tuple(d.index for d in self.deliveries)

    def missing_indices(self) -> tuple[int, ...]:
        """Every index not yet committed, ascending, never truncated (the bootstrap lists it)."""
        present = set(self.committed_indices())
        return tuple(i for i in range(self.binding.chunk_count) if i not in present)

    # -- transitions --------------------------------------------------------------------------

    def invalidate(self, reason: str) -> Coverage:
        """Fail closed. An already invalid coverage keeps its first reason: later failures are
        consequences of the first."""
        if self.state is CoverageState.INVALID:
            return self
        return attrs.evolve(self, state=CoverageState.INVALID, invalid_reason=reason)

    def commit(self, delivery: ChunkDelivery, table: ChunkTable) -> Coverage:
        """Record one finalized, verified delivery.

        ``table`` is the chunk table of the fresh canonical read the application verified the
        delivery against. Outcomes:

        - index outside the binding: :class:`ChunkIndexOutOfRange`, nothing recorded (§7);
        - already ``INVALID``: unchanged;
        - ``table`` is not the bound spec: ``INVALID``;
        - identical duplicate (same index, offsets, length and hash; tool call ID and time may
          differ): returned unchanged, so the original record is kept, also after
          ``COMPLETE`` (redundant reads never rewrite a record);
        - conflicting duplicate (same index, different metadata/hash): ``INVALID``, never
          accepted, also after ``COMPLETE``;
        - a new index that does not equal the table's chunk: ``INVALID``;
        - otherwise recorded: ``READING``, or, once every index is present and the whole set
          verifies (see :meth:`verify`), ``COMPLETE``.
        """
        if delivery.index >= self.binding.chunk_count:
            raise ChunkIndexOutOfRange(delivery.index, self.binding.chunk_count)
        if self.state is CoverageState.INVALID:
            return self
        table_mismatch = self.binding.table_mismatch(table)
        if table_mismatch is not None:
            return self.invalidate(table_mismatch)
        recorded = self.recorded(delivery.index)
        if recorded is not None:
            if recorded.same_chunk_as(delivery):
                return self
            return self.invalidate(
                f"conflicting record for chunk {delivery.index}: "
                f"{_differing_field(recorded, delivery)} differs from the committed delivery"
            )
        canonical_mismatch = delivery.canonical_mismatch(table.chunk(delivery.index))
        if canonical_mismatch is not None:
            return self.invalidate(
                f"delivery does not match the canonical spec: {canonical_mismatch}"
            )
        deliveries = tuple(sorted((*self.deliveries, delivery), key=lambda d: d.index))
        if len(deliveries) < self.binding.chunk_count:
            return attrs.evolve(self, state=CoverageState.READING, deliveries=deliveries)
        return self._completed(deliveries)

    def verify(self, table: ChunkTable) -> Coverage:
        """Re-check every record against a freshly verified canonical table.

        Used after loading progress and before trusting it: a binding or record that disagrees
        with the canonical spec makes the coverage ``INVALID``; ``COMPLETE`` coverage is re-proved
        with the same completion check :meth:`commit` applies to the last chunk; otherwise the
        value is returned unchanged.
        """
        if self.state is CoverageState.INVALID:
            return self
        table_mismatch = self.binding.table_mismatch(table)
        if table_mismatch is not None:
            return self.invalidate(table_mismatch)
        for delivery in self.deliveries:
            canonical_mismatch = delivery.canonical_mismatch(table.chunk(delivery.index))
            if canonical_mismatch is not None:
                return self.invalidate(f"recorded delivery is not canonical: {canonical_mismatch}")
        if len(self.deliveries) < self.binding.chunk_count:
            return self
        completed = self._completed(self.deliveries)
        return self if completed == self else completed

    def _completed(self, deliveries: tuple[ChunkDelivery, ...]) -> Coverage:
        """``COMPLETE`` when the full set tiles ``[0, specBytes)`` in index order, else
        ``INVALID``. The records were each checked against a contiguous canonical table
        already, so today this cannot fail; it is the §9 contiguity rule stated where COMPLETE
        is granted, so a later change to those checks cannot grant COMPLETE without it."""
        expected_start = 0
        for position, delivery in enumerate(deliveries):
            if delivery.index != position:
                return self.invalidate(f"chunk {position} is missing from a full set")
            if delivery.start_byte != expected_start:
                return self.invalidate(
                    f"chunk {position} does not start where chunk {position - 1} ends"
                )
            expected_start = delivery.end_byte_exclusive
        if expected_start != self.binding.spec_bytes:
            return self.invalidate("chunks do not end at specBytes")
        return attrs.evolve(self, state=CoverageState.COMPLETE, deliveries=deliveries)


@attrs.frozen
class CoverageNotRequired:
    """A legacy inline squad's task: no reader, guard or attestation (§1.7). Nothing to commit."""

    state: ClassVar[CoverageState] = CoverageState.NOT_REQUIRED

    def missing_indices(self) -> tuple[int, ...]:
        return ()


NOT_REQUIRED: Final = CoverageNotRequired()

TaskCoverage: TypeAlias = Coverage | CoverageNotRequired
