"""Grounding: an attestation counts only for deliveries the parent itself observed.

A task's attestation file lives where its child can write (contract §9 fixes the path), so on
its own it proves nothing against a child with ``bash``: it can be copied from a sibling,
written by hand, or committed by a bridge started under another task's environment. The parent
therefore keeps its own record of what it saw on the RPC stream of every child it spawned
(``observed.jsonl``, parent-owned): each spawn, and each successful ``squad_spec_read`` tool
result whose raw arguments were exactly ``{"index": <integer>}`` and whose two content blocks
equal the canonical chunk byte for byte. An attestation is grounded when every chunk's
``toolCallId`` is such an observed delivery of the same chunk in the task's own bound session,
and its timestamps lie between the task's first spawn and now, within :data:`CLOCK_SKEW`.

Why the RPC stream and not the task's Pi session file: the session file is written by the child
process, beneath the directory the child may write, so a child could forge it; the RPC stream
is read by the parent from the pipe of the process it started.

Pure: values and a verdict; the caller supplies ``now``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Final, TypeAlias

import attrs

from domain.attestation.record import Attestation
from domain.attestation.timestamps import format_rfc3339_millis

#: Longest ``toolCallId`` accepted in an attestation. Pi's ids are tens of characters; a
#: longer one was not minted by a model provider for this task.
MAX_TOOL_CALL_ID_CHARS: Final = 256
#: Allowed disagreement between the child's and the parent's clocks (one machine, two reads).
CLOCK_SKEW: Final = timedelta(seconds=5)


@attrs.frozen
class SpawnObserved:
    """The parent started a child process for the task."""

    at: datetime
    child_id: str


@attrs.frozen
class DeliveryObserved:
    """The parent saw a verified, successful ``squad_spec_read`` result on a child's stream."""

    at: datetime
    child_id: str
    session_file: str | None
    tool_call_id: str
    index: int
    chunk_sha256: str


Observation: TypeAlias = SpawnObserved | DeliveryObserved


def strict_reader_index(raw_arguments: object) -> int | None:
    """The index when the model's raw arguments were exactly ``{"index": <integer >= 0>}``:
    what the reader tool's own schema, ``spec-read-call.schema.json``, accepts.

    Pi coerces arguments before any extension sees them (``"1"``, ``true`` and ``1.5``-like
    values can arrive as integers), so only the assistant message's raw arguments tell what the
    model sent. ``bool`` is an ``int`` in Python and is refused.
    """
    # Written out rather than run through jsonschema: this runs in every child's bridge, whose
    # start-up must not import jsonschema (docs/benchmarks.md); a test holds it equal to the
    # schema on every shape of input.
    if not isinstance(raw_arguments, Mapping) or set(raw_arguments) != {"index"}:
        return None
    index = raw_arguments["index"]
    if type(index) is not int or index < 0:
        return None
    return index


def _when(moment: datetime) -> str:
    return format_rfc3339_millis(moment)


def _shown_id(tool_call_id: str) -> str:
    return repr(tool_call_id) if len(tool_call_id) <= 64 else f"of {len(tool_call_id)} characters"


def grounding_problem(
    attestation: Attestation,
    observations: Sequence[Observation],
    *,
    session_file: str | None,
    now: datetime,
) -> str | None:
    """Why ``attestation`` is not grounded in the parent's observations, or ``None``."""
    spawns = [o.at for o in observations if isinstance(o, SpawnObserved)]
    if not spawns:
        return "the parent has no record of starting a child for this task"
    if session_file is None:
        return "the task has no bound session, so no delivery can be attributed to it"
    first_spawn = min(spawns)
    earliest, latest = first_spawn - CLOCK_SKEW, now + CLOCK_SKEW
    delivered: dict[str, DeliveryObserved] = {}
    for observation in observations:
        if isinstance(observation, DeliveryObserved) and observation.session_file == session_file:
            delivered.setdefault(observation.tool_call_id, observation)
    for chunk in attestation.chunks:
        where = f"chunks[{chunk.index}]"
        if len(chunk.tool_call_id) > MAX_TOOL_CALL_ID_CHARS:
            return (
                f"{where}.toolCallId has {len(chunk.tool_call_id)} characters; at most "
                f"{MAX_TOOL_CALL_ID_CHARS} are allowed"
            )
        if chunk.delivered_at < earliest:
            return (
                f"{where}.deliveredAt {_when(chunk.delivered_at)} is before the task's first "
                f"spawn at {_when(first_spawn)} (allowed skew {CLOCK_SKEW.total_seconds():g} s)"
            )
        if chunk.delivered_at > latest:
            return (
                f"{where}.deliveredAt {_when(chunk.delivered_at)} is later than now "
                f"({_when(now)}, allowed skew {CLOCK_SKEW.total_seconds():g} s)"
            )
        seen = delivered.get(chunk.tool_call_id)
        if seen is None:
            return (
                f"{where}.toolCallId {_shown_id(chunk.tool_call_id)} is not a squad_spec_read "
                "delivery the parent observed in this task's own session"
            )
        if seen.index != chunk.index or seen.chunk_sha256 != chunk.sha256:
            return (
                f"{where}.toolCallId {_shown_id(chunk.tool_call_id)} was observed delivering "
                f"chunk {seen.index}, not chunk {chunk.index}"
            )
    if attestation.completed_at > latest:
        return f"completedAt {_when(attestation.completed_at)} is later than now ({_when(now)})"
    return None
