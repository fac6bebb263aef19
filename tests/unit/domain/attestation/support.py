"""Realistic canonical specs and ready-made values for the attestation tests.

The specs mix 1-, 2-, 3- and 4-byte UTF-8 characters at random (fixed seed), so chunk ends
are moved back off continuation bytes, as they are for real multilingual specs. The seeds are
chosen so every boundary of ``SPEC`` and most of ``LARGE_SPEC`` move back.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from domain.attestation import Attestation, ChunkDelivery, Coverage, SpecBinding
from domain.chunks import CHUNK_BYTES, ChunkTable
from domain.strict_json import JsonObject

# The leading keys of both task-owned files, in the contract's order (spelled out here rather
# than taken from domain.attestation._wire, so a renamed or reordered key fails the tests).
CONTRACT_HEAD_KEYS = [
    "version",
    "state",
    "squadId",
    "taskId",
    "specSha256",
    "specBytes",
    "chunkBytes",
    "chunkCount",
]

SQUAD_ID = "squad-alpha"
TASK_ID = "task-7"
BASE_TIME = datetime(2026, 12, 2, 11, 22, 33, 456000, tzinfo=UTC)
COMPLETED_AT = BASE_TIME + timedelta(hours=1)
_ALPHABET = ("a", "Z", "7", " ", "\n", "{", "é", "ß", "Ж", "€", "中", "語", "𝄞", "😀")


def multibyte_spec(size: int, seed: int) -> bytes:
    rng = random.Random(seed)
    parts: list[str] = []
    length = 0
    while length < size:
        char = rng.choice(_ALPHABET)
        parts.append(char)
        length += len(char.encode())
    return "".join(parts).encode()


SPEC = multibyte_spec(100_000, seed=2)
TABLE = ChunkTable.of(SPEC)
BINDING = SpecBinding.of(TABLE, squad_id=SQUAD_ID, task_id=TASK_ID)

# A larger spec gives order-independence tests more chunks to permute.
LARGE_SPEC = multibyte_spec(420_000, seed=3)
LARGE_TABLE = ChunkTable.of(LARGE_SPEC)
LARGE_BINDING = SpecBinding.of(LARGE_TABLE, squad_id=SQUAD_ID, task_id=TASK_ID)

OTHER_SHA256 = "0" * 64
LAST = TABLE.chunk_count - 1


def delivery(
    index: int,
    *,
    table: ChunkTable = TABLE,
    call: str | None = None,
    at: datetime | None = None,
) -> ChunkDelivery:
    """The canonical delivery of chunk ``index``: call ``call-<index>`` at base + index s."""
    return ChunkDelivery.of(
        table.chunk(index),
        tool_call_id=call if call is not None else f"call-{index}",
        delivered_at=at if at is not None else BASE_TIME + timedelta(seconds=index),
    )


def commit_all(
    indices: list[int], *, table: ChunkTable = TABLE, binding: SpecBinding = BINDING
) -> Coverage:
    coverage = Coverage.required(binding)
    for index in indices:
        coverage = coverage.commit(delivery(index, table=table), table)
    return coverage


def complete_coverage(*, table: ChunkTable = TABLE, binding: SpecBinding = BINDING) -> Coverage:
    return commit_all(list(range(table.chunk_count)), table=table, binding=binding)


def complete_attestation() -> Attestation:
    return Attestation.of(complete_coverage(), COMPLETED_AT)


def attestation_dict() -> JsonObject:
    """A fresh, valid, mutable attestation document (as decoded JSON)."""
    return complete_attestation().to_json_dict()


def boundaries_moved_back(table: ChunkTable) -> int:
    return sum(ref.bytes < CHUNK_BYTES for ref in table.chunks[:-1])
