"""What the parent records of a child's reader results: only verified, strictly-called reads."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from application.canonical import CanonicalSpec
from application.child.role import chunk_metadata, compact_json
from application.grounding import observed_delivery
from application.ports import ToolResultSeen
from domain.attestation.grounding import DeliveryObserved
from domain.chunks import ChunkTable
from tests.squads import multi_chunk_spec

SPEC = multi_chunk_spec(3)
CANONICAL = CanonicalSpec(data=SPEC, table=ChunkTable.of(SPEC))
AT = datetime(2026, 12, 2, 12, tzinfo=UTC)
SESSION = "/r/s/t/session/a.jsonl"


def texts(index: int, task_id: str = "t") -> tuple[str, str]:
    return compact_json(chunk_metadata("s", task_id, CANONICAL, index)), CANONICAL.chunk_text(index)


def result(index: int = 1, **changes: Any) -> ToolResultSeen:
    fields: dict[str, object] = {
        "task_id": "t",
        "child_id": "c",
        "tool_call_id": "call-1",
        "tool_name": "squad_spec_read",
        "is_error": False,
        "texts": texts(index),
    }
    fields.update(changes)
    return ToolResultSeen(**fields)  # type: ignore[arg-type]


def observe(seen: ToolResultSeen, raw: object = None) -> DeliveryObserved | None:
    return observed_delivery(
        seen,
        {"index": 1} if raw is None else raw,
        canonical=CANONICAL,
        squad_id="s",
        session_file=SESSION,
        at=AT,
    )


def test_a_verified_strict_read_is_observed_with_its_session_and_chunk_hash() -> None:
    assert observe(result()) == DeliveryObserved(
        at=AT,
        child_id="c",
        session_file=SESSION,
        tool_call_id="call-1",
        index=1,
        chunk_sha256=CANONICAL.table.chunk(1).sha256,
    )


@pytest.mark.parametrize("raw", [{"index": "1"}, {"index": True}, {"index": 1.0}, {}, "x"])
def test_a_read_the_model_did_not_ask_for_strictly_is_not_observed(raw: object) -> None:
    assert observe(result(), raw) is None


def test_a_read_with_no_recorded_call_is_not_observed() -> None:
    assert (
        observed_delivery(
            result(), None, canonical=CANONICAL, squad_id="s", session_file=SESSION, at=AT
        )
        is None
    )


@pytest.mark.parametrize(
    "changes",
    [
        {"is_error": True},
        {"tool_name": "read"},
        {"texts": (texts(1)[0], texts(1)[1][:-1])},
        {"texts": (texts(1)[0],)},
        {"texts": (texts(1, task_id="sibling")[0], texts(1)[1])},
        {"texts": texts(2)},
        {"texts": (texts(1)[0], None)},
    ],
)
def test_a_result_that_is_not_exactly_the_canonical_chunk_is_not_observed(
    changes: dict[str, Any],
) -> None:
    assert observe(result(**changes)) is None


def test_an_index_beyond_the_spec_is_not_observed() -> None:
    count = CANONICAL.table.chunk_count
    assert observe(result(), {"index": count}) is None
