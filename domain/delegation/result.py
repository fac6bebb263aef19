"""Validating a worker's output before it can be collected (seed §4-§5).

The worker's result is claims; the host's verdict on them is separate. Order: a terminal
``stopReason`` of ``error`` or ``aborted`` is a failure even when output arrived; output over
the byte limit is never parsed (overflow, ``invalid``); ``length`` is truncation (``invalid``,
never repaired into a valid-looking object); then strict JSON, the closed
``delegate-result-v1`` schema, and every reference against the host's evidence table: unknown
source IDs, sources outside the job's grant, wrong hashes, impossible ranges and quotations
that are not in the cited captured bytes are all refused; a receipt reference must name an
issued receipt inside the job's grant and carry no range, hash or quotation. A format error
(not JSON, schema) is correctable by a follow-up; an evidence or truncation error is not.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from domain.delegation.envelope import SourceDescriptor
from domain.delegation.lifecycle import State
from domain.delegation.receipts import EvidenceReceipt
from domain.spec.schema import describe, violations
from domain.strict_json import JsonDecodeFailure, decode_json

FAILED_STOPS = frozenset({"error", "aborted"})
TRUNCATED_STOPS = frozenset({"length"})


@attrs.frozen
class Verdict:
    state: State
    result: dict[str, Any] | None
    validation: dict[str, str]
    correctable: bool = False
    context_gap: bool = False
    problem: str | None = None


def _validation(**overrides: str) -> dict[str, str]:
    base = {
        "schema": "not_checked",
        "references": "not_checked",
        "coverage": "not_checked",
        "truncation": "none",
    }
    base.update(overrides)
    return base


def line_count(data: bytes) -> int:
    if not data:
        return 0
    return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


def _line_slice(data: bytes, start: int, end: int) -> bytes:
    lines = data.splitlines(keepends=True)
    return b"".join(lines[start - 1 : end])


# A receipt is cited whole: ranges, hashes and quotations address captured bytes only.
_SOURCE_ONLY = ("lineStart", "lineEnd", "byteStart", "byteEnd", "sha256", "quotation")


def _cited_problem(
    item: dict[str, Any], noun: str, granted: Mapping[str, object], known: frozenset[str]
) -> str | None:
    """An evidence entry's cited source or receipt must exist and be in the job's grant."""
    cited = item[f"{noun}Id"]
    if cited not in known:
        return f"evidence {item['evidenceId']}: {noun} {cited} does not exist"
    if cited not in granted:
        return f"evidence {item['evidenceId']}: {noun} {cited} is outside this job's grant"
    return None


@attrs.frozen
class _Citable:
    """What a result may cite: the job's granted sources (their captured bytes by source ID)
    and receipts, and every source and receipt ID the session issued."""

    sources: Mapping[str, SourceDescriptor]
    known_sources: frozenset[str]
    source_bytes: Mapping[str, bytes]
    receipts: Mapping[str, EvidenceReceipt]
    known_receipts: frozenset[str]


def _receipt_problem(item: dict[str, Any], citable: _Citable) -> str | None:
    problem = _cited_problem(item, "receipt", citable.receipts, citable.known_receipts)
    extra = [name for name in _SOURCE_ONLY if name in item]
    if problem is None and extra:
        return (
            f"evidence {item['evidenceId']}: a receipt is cited whole; "
            f"{extra[0]} is for sources only"
        )
    return problem


def _evidence_problem(item: dict[str, Any], citable: _Citable) -> str | None:
    problem = _cited_problem(item, "source", citable.sources, citable.known_sources)
    if problem is not None:
        return problem
    where = f"evidence {item['evidenceId']}"
    source_id = item["sourceId"]
    source = citable.sources[source_id]
    if "sha256" in item and item["sha256"] != source.sha256:
        return f"{where}: the hash does not match source {source_id}'s captured bytes"
    data = citable.source_bytes.get(source_id, b"")
    has_lines = "lineStart" in item or "lineEnd" in item
    has_bytes = "byteStart" in item or "byteEnd" in item
    if has_lines == has_bytes:
        return f"{where}: cite exactly one range: lineStart/lineEnd or byteStart/byteEnd"
    if has_lines:
        start, end = item.get("lineStart"), item.get("lineEnd")
        if start is None or end is None or not 1 <= start <= end <= source.lines:
            return f"{where}: line range is impossible for a source of {source.lines} lines"
        cited = _line_slice(data, start, end)
    else:
        start, end = item.get("byteStart"), item.get("byteEnd")
        if start is None or end is None or not 0 <= start < end <= source.size:
            return f"{where}: byte range is impossible for a source of {source.size} bytes"
        cited = data[start:end]
    quotation = item.get("quotation")
    if quotation is not None and quotation.encode("utf-8") not in cited:
        return f"{where}: the quotation is not in the cited captured bytes"
    return None


def _reference_problem(result: dict[str, Any], citable: _Citable) -> str | None:
    ids = [item["evidenceId"] for item in result["evidence"]]
    if len(set(ids)) != len(ids):
        return "evidence IDs must be unique"
    for item in result["evidence"]:
        problem = (
            _receipt_problem(item, citable)
            if "receiptId" in item
            else _evidence_problem(item, citable)
        )
        if problem is not None:
            return problem
    declared = set(ids)
    cited = [e for c in result["coverage"] for e in c["evidenceIds"]]
    for finding in result["findings"]:
        cited += finding["evidenceIds"] + finding["contraryEvidenceIds"]
        if finding["basis"] == "observed" and not finding["evidenceIds"]:
            return f"finding {finding['findingId']}: an observed finding needs evidence"
    unknown = sorted(set(cited) - declared)
    if unknown:
        return f"evidence ID {unknown[0]} is cited but not in the evidence table"
    findings = [f["findingId"] for f in result["findings"]]
    if len(set(findings)) != len(findings):
        return "finding IDs must be unique"
    return None


def _coverage_problem(result: dict[str, Any], requirement_ids: tuple[str, ...]) -> str | None:
    reported = [c["requirementId"] for c in result["coverage"]]
    if sorted(reported) != sorted(requirement_ids):
        return (
            f"coverage must name each of the job's {len(requirement_ids)} requirement(s) "
            f"exactly once; it names {len(reported)}"
        )
    return None


def judge_output(
    *,
    raw: bytes,
    overflow: bool,
    stop_reason: str,
    max_output_bytes: int,
    requirement_ids: tuple[str, ...],
    granted: Mapping[str, SourceDescriptor],
    known_sources: frozenset[str],
    source_bytes: Mapping[str, bytes],
    granted_receipts: Mapping[str, EvidenceReceipt] | None = None,
    known_receipts: frozenset[str] = frozenset(),
) -> Verdict:
    if stop_reason in FAILED_STOPS:
        return Verdict(State.FAILED, None, _validation(), problem=f"worker stopped: {stop_reason}")
    if overflow or len(raw) > max_output_bytes:
        return Verdict(
            State.INVALID,
            None,
            _validation(truncation="overflow"),
            problem=f"worker output exceeded {max_output_bytes} bytes and was not parsed",
        )
    if stop_reason in TRUNCATED_STOPS:
        return Verdict(
            State.INVALID,
            None,
            _validation(truncation="truncated"),
            problem="worker output was truncated (stopReason length) and was not parsed",
        )
    try:
        document = decode_json(raw)
    except JsonDecodeFailure as failure:
        return Verdict(
            State.INVALID,
            None,
            _validation(schema="failed"),
            correctable=True,
            problem=f"worker output is not JSON: {failure}",
        )
    found = violations("delegate-result-v1", document)
    if found:
        return Verdict(
            State.INVALID,
            None,
            _validation(schema="failed"),
            correctable=True,
            problem="; ".join(dict.fromkeys(describe(error) for error in found)),
        )
    citable = _Citable(granted, known_sources, source_bytes, granted_receipts or {}, known_receipts)
    problem = _reference_problem(document, citable)
    if problem is not None:
        return Verdict(
            State.INVALID, None, _validation(schema="passed", references="failed"), problem=problem
        )
    problem = _coverage_problem(document, requirement_ids)
    if problem is not None:
        return Verdict(
            State.INVALID,
            None,
            _validation(schema="passed", references="passed", coverage="failed"),
            correctable=True,
            problem=problem,
        )
    checks = _validation(schema="passed", references="passed", coverage="passed")
    if document["status"] == "complete":
        return Verdict(State.READY, document, checks)
    gap = document["status"] == "needs_context" or bool(document["missing"])
    return Verdict(State.INCOMPLETE, document, checks, context_gap=gap)
