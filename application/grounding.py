"""What the parent observes of a child's reads, judged against the canonical spec.

The scheduler feeds every finalised tool result of a child's RPC stream through
:func:`observed_delivery`; only a successful ``squad_spec_read`` result whose raw arguments were
exactly ``{"index": <integer>}`` and whose two text blocks equal the §7 metadata and the exact
canonical chunk becomes a :class:`DeliveryObserved` in the parent-owned record. See
``domain/attestation/grounding.py`` for how attestations are then grounded in that record.
"""

from __future__ import annotations

from datetime import datetime

from application.canonical import CanonicalSpec
from application.child.role import READER_TOOL, chunk_metadata, compact_json
from application.ports import ToolResultSeen
from domain.attestation.grounding import DeliveryObserved, strict_reader_index


def observed_delivery(
    result: ToolResultSeen,
    raw_arguments: object,
    *,
    canonical: CanonicalSpec,
    squad_id: str,
    session_file: str | None,
    at: datetime,
) -> DeliveryObserved | None:
    """The verified delivery ``result`` is, or ``None`` when it proves nothing."""
    if result.tool_name != READER_TOOL or result.is_error:
        return None
    index = strict_reader_index(raw_arguments)
    if index is None or index >= canonical.table.chunk_count:
        return None
    expected = (
        compact_json(chunk_metadata(squad_id, result.task_id, canonical, index)),
        canonical.chunk_text(index),
    )
    if result.texts != expected:
        return None
    return DeliveryObserved(
        at=at,
        child_id=result.child_id,
        session_file=session_file,
        tool_call_id=result.tool_call_id,
        index=index,
        chunk_sha256=canonical.table.chunk(index).sha256,
    )
